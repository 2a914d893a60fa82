package org.efaah.it;

import static org.efaah.it.ChildJvm.attributes;
import static org.efaah.it.ChildJvm.expectFailure;
import static org.efaah.it.ChildJvm.check;

import java.nio.ByteBuffer;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.ud.Datagram;
import org.efaah.ud.UdEndpoint;
import org.efaah.ud.WorkCompletionException;
import org.efaah.verbs.Device;
import org.efaah.verbs.ForwardingVerbsProvider;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.VerbsProviders;
import org.efaah.verbs.WorkCompletion;
import org.efaah.verbs.spi.VerbsProvider;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Issue 33 race 5.1, the recovery case, over the EFA double's completion channels (WaiterWakeUpTest
 * has it and the resend case on the mock, EFA and RoCE): just before a flush arms its send CQ, a
 * receive too short puts the QP in error (EFA_DOUBLE_LEN_ERR=err) and another thread's poll begins the recovery;
 * ERR flushes nothing (EFA_DOUBLE_ERR=none) and the flush's one send is held (EFA_DOUBLE_HOLD_SENDS=1),
 * so only a step at the 200 ms flush bound, destroying and remaking the QP, ends it. The flush slept
 * in poll(2) until its 4 s deadline instead. The double holds the first sends of a process, so the
 * case runs in a child JVM of its own; elsewhere this skips.
 */
@Tag("native")
class WaiterWakeUpNativeTest {
    @Test
    void aRecoveryBegunByTheStepAfterTheArmIsDrivenToItsBound() throws Exception {
        ChildJvm.assumeEfaDouble("whose EFA_DOUBLE_HOLD_SENDS holds sends");
        ChildJvm.run(Child.class, Map.of("EFA_DOUBLE_HOLD_SENDS", "1", "EFA_DOUBLE_ERR", "none", "EFA_DOUBLE_LEN_ERR", "err",
                "EFA_DOUBLE_CQ_NOTIFICATIONS", "1"));
    }

    /** The case, in a JVM whose double holds its first send; exits 1 on a failed check. */
    static final class Child {
        public static void main(String[] args) {
            ChildJvm.exit(Child::run);
        }

        private static void run() {
            AtomicReference<Runnable> beforeArm = new AtomicReference<>();
            try (VerbsProvider provider = new ForwardingVerbsProvider(VerbsProviders.factory("native").create()) {
                    @Override
                    public void requestCqNotification(long cq) {
                        Runnable hook = beforeArm.getAndSet(null);
                        if (hook != null) {
                            hook.run();
                        }
                        super.requestCqNotification(cq);
                    }
                };
                 Device device = Device.openFirst(provider);
                 ProtectionDomain pd0 = device.allocatePd();
                 ProtectionDomain pd1 = device.allocatePd();
                 AddressHandleCache cache = AddressHandleCache.create();
                 UdEndpoint small = UdEndpoint.open(pd0, cache, UdEndpoint.Options.defaults().withMaxMessageSize(512)
                         .withSpin(0, TimeUnit.NANOSECONDS).withRecoveryFlushBound(200, TimeUnit.MILLISECONDS));
                 UdEndpoint big = UdEndpoint.open(pd1, cache, UdEndpoint.Options.defaults());
                 AddressHandle toSmall = cache.acquire(pd1, attributes(small));
                 AddressHandle toBig = cache.acquire(pd0, attributes(big))) {
                check(small.eventDriven(), "the flush sleeps on a completion channel");
                small.send(toBig, big.address(), ByteBuffer.allocate(16)); // held: no completion comes
                // The recovery begins on another thread just as the flush arms its send CQ: the hook runs
                // inside the provider's arm, under the CQ's guard, so it must not step the endpoint itself (a
                // remake closes that CQ, which waits for the guard). The waiter must then not sleep through it.
                AtomicReference<Object> receiveError = new AtomicReference<>();
                Thread receiver = new Thread(() -> {
                    // A receive too short: EFA_DOUBLE_LEN_ERR=err puts small's QP in ERR; the poll begins the recovery.
                    big.send(toSmall, small.address(), ByteBuffer.allocate(1024));
                    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
                    while (receiveError.get() == null && System.nanoTime() - end < 0) {
                        try {
                            small.poll(d -> { }, 1);
                        } catch (WorkCompletionException thrown) {
                            receiveError.set(thrown);
                        } catch (RuntimeException other) {
                            receiveError.set(other);
                        }
                    }
                }, "receiver");
                beforeArm.set(receiver::start);
                long start = System.nanoTime();
                WorkCompletionException flushed = expectFailure(() -> small.flush(4, TimeUnit.SECONDS));
                long millis = (System.nanoTime() - start) / 1_000_000;
                try {
                    receiver.join(10_000);
                } catch (InterruptedException e) {
                    throw new AssertionError(e);
                }
                Object e = receiveError.get();
                check(e instanceof WorkCompletionException w && w.status() == WorkCompletion.LOC_LEN_ERR,
                        "the receive error: " + e);
                check(millis < 2000, "the flush slept through the recovery its step began: " + millis
                        + " ms (bound 200 ms)");
                check(flushed.status() == WorkCompletion.WR_FLUSH_ERR, "the held send given up: " + flushed.getMessage());
                check(small.counters().qpsRemade() == 1, "QPs remade: " + small.counters().qpsRemade());
                big.send(toSmall, small.address(), ByteBuffer.allocate(16).put(0, (byte) 9));
                Datagram d = small.receive(5, TimeUnit.SECONDS);
                check(d != null && d.payload()[0] == 9, "received on the new QP: " + d);
            }
        }
    }
}
