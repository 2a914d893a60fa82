package org.efaah.ud;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.Errno;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.QueuePairType;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.efaah.verbs.spi.AsyncEventVerbs;
import org.efaah.verbs.spi.CompletionChannelVerbs;
import org.efaah.verbs.spi.DatagramVerbs;
import org.efaah.verbs.spi.EfaVerbs;
import org.efaah.verbs.spi.NetworkVerbs;
import org.efaah.verbs.spi.VerbsProvider;
import org.junit.jupiter.api.Test;

/**
 * A device closed while an endpoint's threads poll and post in loops: no poll of a CQ and no post
 * to a QP overlaps that object's destroy or comes after it, whichever way each step held its guard
 * (its slot, or the read lock when the other thread had the slot), on each device kind the mock
 * models; and both loops end on the close's refusal.
 */
class DeviceCloseRaceTest {
    private static final Set<String> CQ_STEPS = Set.of("pollCq", "pollCqWithSourceGid");
    private static final Set<String> QP_STEPS = Set.of("postSend", "postSends", "postReceive", "postReceives");

    /** Wraps a provider; records each step on a handle that overlaps or follows its destroy. */
    private static final class StepChecker {
        final Map<Long, AtomicInteger> inStep = new ConcurrentHashMap<>();
        final Set<Long> destroyed = ConcurrentHashMap.newKeySet();
        final List<String> violations = new CopyOnWriteArrayList<>();
        final AtomicLong steps = new AtomicLong();
        final VerbsProvider provider;

        StepChecker(VerbsProvider real) {
            // EfaVerbs has its own queryDevice, so the EFA facet is a proxy of its own.
            EfaVerbs efaFacet = (EfaVerbs) Proxy.newProxyInstance(EfaVerbs.class.getClassLoader(),
                    new Class<?>[] {EfaVerbs.class}, (proxy, method, args) -> handle(real.efa(), method, args));
            InvocationHandler handler = (proxy, method, args) -> {
                Class<?> facet = method.getDeclaringClass();
                if (facet == VerbsProvider.class && method.getReturnType().isInterface()
                        && method.getReturnType().getPackage() == VerbsProvider.class.getPackage()) {
                    invoke(method, real, args); // EOPNOTSUPP where the real provider lacks the facet
                    return method.getReturnType() == EfaVerbs.class ? efaFacet : proxy;
                }
                Object target = facet == DatagramVerbs.class ? real.datagrams()
                        : facet == CompletionChannelVerbs.class ? real.completionChannels()
                        : facet == AsyncEventVerbs.class ? real.asyncEvents()
                        : facet == NetworkVerbs.class ? real.networkChanges() : real;
                return handle(target, method, args);
            };
            provider = (VerbsProvider) Proxy.newProxyInstance(VerbsProvider.class.getClassLoader(),
                    new Class<?>[] {VerbsProvider.class, DatagramVerbs.class, CompletionChannelVerbs.class,
                        AsyncEventVerbs.class, NetworkVerbs.class}, handler);
        }

        private Object handle(Object target, java.lang.reflect.Method method, Object[] args) throws Throwable {
            String name = method.getName();
            if (name.equals("destroyCq") || name.equals("destroyQp")) {
                long handle = (Long) args[0];
                AtomicInteger in = inStep.get(handle);
                if (in != null && in.get() != 0) {
                    violations.add(name + " of " + handle + " while a step on it ran");
                }
                Object result = invoke(method, target, args);
                destroyed.add(handle);
                return result;
            }
            if (!CQ_STEPS.contains(name) && !QP_STEPS.contains(name)) {
                return invoke(method, target, args);
            }
            long handle = (Long) args[0];
            if (destroyed.contains(handle)) {
                violations.add(name + " of " + handle + " after its destroy");
            }
            AtomicInteger in = inStep.computeIfAbsent(handle, h -> new AtomicInteger());
            in.incrementAndGet();
            try {
                steps.incrementAndGet();
                Thread.onSpinWait(); // a step long enough for a destroy to meet it
                return invoke(method, target, args);
            } finally {
                in.decrementAndGet();
            }
        }

        private static Object invoke(java.lang.reflect.Method method, Object target, Object[] args) throws Throwable {
            try {
                return method.invoke(target, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        }
    }

    @Test
    void noStepMeetsTheDestroyOfItsObject() throws Exception {
        for (boolean efa : new boolean[] {true, false}) {
            for (QueuePairType transport : efa ? new QueuePairType[] {QueuePairType.SRD, QueuePairType.UD}
                    : new QueuePairType[] {QueuePairType.UD}) {
                for (int round = 0; round < 20; round++) {
                    race(efa, transport, round);
                }
            }
        }
    }

    private static void race(boolean efa, QueuePairType transport, int round) throws Exception {
        String kind = (efa ? "EFA " : "RoCE ") + transport + ", round " + round;
        StepChecker checker = new StepChecker(new MockVerbsProvider(MockConfig.builder().efa(efa).build()));
        Device device = Device.openFirst(checker.provider);
        ProtectionDomain pd = device.allocatePd();
        AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED).build();
        UdEndpoint endpoint = UdEndpoint.open(pd, cache, UdEndpoint.Options.defaults().withTransport(transport));
        AddressHandle ah = cache.acquire(pd, AddressHandleAttributes.builder().dgid(endpoint.address().gid()).build());
        List<Throwable> ends = new CopyOnWriteArrayList<>();
        Thread receiver = new Thread(() -> {
            try {
                for (;;) {
                    try {
                        endpoint.poll(d -> { }, 64);
                    } catch (WorkCompletionException reported) {
                        // a receive error the close's flush may cause: the loop goes on to the refusal
                    }
                }
            } catch (Throwable t) {
                ends.add(t);
            }
        }, "race-receiver");
        Thread sender = new Thread(() -> {
            ByteBuffer payload = ByteBuffer.allocate(8);
            try {
                for (;;) {
                    try {
                        endpoint.send(ah, endpoint.address(), payload.clear());
                    } catch (WorkCompletionException reported) {
                        // a send failure (an RNR while the receiver was descheduled): not the close
                    }
                }
            } catch (Throwable t) {
                ends.add(t);
            }
        }, "race-sender");
        receiver.start();
        sender.start();
        try {
            long before = checker.steps.get();
            while (checker.steps.get() - before < 200 + round * 50L && ends.isEmpty()) {
                Thread.onSpinWait();
            }
            assertEquals(List.of(), ends, kind + ": a loop ended before the close");
            device.close();
            receiver.join(60_000);
            sender.join(60_000);
            assertFalse(receiver.isAlive() || sender.isAlive(), kind + ": a loop did not end at the device's close");
        } finally {
            endpoint.close();
            ah.close();
            cache.close();
        }
        assertEquals(List.of(), checker.violations, kind);
        assertEquals(2, ends.size(), kind);
        for (Throwable t : ends) {
            // The close destroys the QP before its CQs; on EFA a poll between the two that meets one
            // of that QP's completions fails as efa_poll_sub_cq does ("Invalid QP": EINVAL).
            boolean invalidQp = efa && t instanceof VerbsException v && v.errno() == Errno.EINVAL
                    && t.getMessage().contains("completion of destroyed QP");
            assertTrue(t instanceof IllegalStateException || invalidQp, kind + ": " + t);
        }
    }
}
