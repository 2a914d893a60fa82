package org.efaah.it;

import static org.efaah.it.ChildJvm.attributes;
import static org.efaah.it.ChildJvm.check;

import java.io.IOException;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.fixture.Jdks;
import org.efaah.ud.Datagram;
import org.efaah.ud.UdEndpoint;
import org.efaah.verbs.Device;
import org.efaah.verbs.InterruptedOperationException;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.VerbsProviders;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.efaah.verbs.spi.VerbsProvider;
import org.junit.jupiter.api.Assumptions;

/**
 * Issue 35 item 4, the case VirtualThreadWaitsTest (mock) and VirtualThreadWaitsNativeTest (the EFA
 * double) run in a child JVM whose virtual-thread scheduler has two carriers and no more: eight
 * virtual threads blocked in {@code receive} on eight endpoints while a ninth keeps a 10 ms ticker
 * for 2 s; then each receiver gets its datagram; then an interrupt and a close each end a receive
 * that is parked (a virtual thread in {@code poll(2)} is RUNNABLE, never parked); then the poller
 * thread (native only: the mock's waits park by themselves) ends once the endpoints are closed, and
 * never had the caller's context class loader. Compiled for Java 17: virtual threads are made through
 * {@code Thread.startVirtualThread}, looked up; the child runs on this JVM when it is 21 or later,
 * else on a JDK 25 when there is one.
 */
final class VirtualThreadWaits {
    static final int RECEIVERS = 8;
    static final long TICK_MILLIS = 10;
    static final long TICKER_MILLIS = 2_000;
    /** At least half the ticks: not starved (a pinned scheduler made 1 of 300), whatever the load. */
    static final long MIN_TICKS = TICKER_MILLIS / TICK_MILLIS / 2;
    private static final long BOUND_SECONDS = 10;

    private VirtualThreadWaits() {
    }

    /** Runs the case in a child JVM with virtual threads on {@code provider} ("mock" or "native"); skips without one. */
    static void runInChild(String provider, Map<String, String> environment) throws IOException, InterruptedException {
        Path java = Jdks.withVirtualThreads();
        Assumptions.assumeTrue(java != null, "no Java 21 or later here (this JVM is "
                + Runtime.version().feature() + ", no JDK 25 found): virtual threads are not tested");
        ChildJvm.run(java, List.of("-Djdk.virtualThreadScheduler.parallelism=2", "-Djdk.virtualThreadScheduler.maxPoolSize=2"),
                Child.class, environment, provider);
    }

    /** The case in the child; exits 1 on a failed check. */
    static final class Child {
        private static final MethodHandle START_VIRTUAL = startVirtual();

        public static void main(String[] args) {
            ChildJvm.exit(() -> run(args[0]));
        }

        private static MethodHandle startVirtual() {
            try {
                return MethodHandles.publicLookup().findStatic(Thread.class, "startVirtualThread",
                        MethodType.methodType(Thread.class, Runnable.class));
            } catch (ReflectiveOperationException e) {
                throw new AssertionError("no virtual threads on Java " + Runtime.version(), e);
            }
        }

        static Thread startVirtual(Runnable r) {
            try {
                return (Thread) START_VIRTUAL.invokeExact(r);
            } catch (Throwable e) {
                throw new AssertionError(e);
            }
        }

        private static void run(String providerName) throws Exception {
            boolean mock = providerName.equals("mock");
            // The caller's loader, as a deployment's: the poller, started from a waiter, must not keep it.
            ClassLoader callerLoader = new URLClassLoader(new URL[0], Child.class.getClassLoader());
            Thread.currentThread().setContextClassLoader(callerLoader);
            List<Thread> pollers = new ArrayList<>();
            UdEndpoint.Options options = UdEndpoint.Options.defaults().withSpin(0, TimeUnit.NANOSECONDS);
            try (VerbsProvider provider = mock ? new MockVerbsProvider(MockConfig.builder().build())
                    : VerbsProviders.factory("native").create();
                 Device device = Device.openFirst(provider);
                 ProtectionDomain pd = device.allocatePd();
                 AddressHandleCache cache = AddressHandleCache.create();
                 UdEndpoint sender = UdEndpoint.open(pd, cache, options)) {
                List<UdEndpoint> receivers = new ArrayList<>();
                try {
                    for (int i = 0; i < RECEIVERS; i++) {
                        receivers.add(UdEndpoint.open(pd, cache, options));
                    }
                    try (AddressHandle ah = cache.acquire(pd, attributes(receivers.get(0)))) {
                        receiversAndTicker(sender, ah, receivers);
                        pollers.addAll(pollerThreads());
                        for (Thread p : pollers) {
                            check(p.getContextClassLoader() != callerLoader, "the poller thread keeps the caller's context "
                                    + "class loader");
                        }
                        if (receivers.get(0).eventDriven()) {
                            check(mock == pollers.isEmpty(), mock ? "a poller thread runs for the mock, whose waits park"
                                    : "no poller thread ran for the parked receivers");
                        }
                        interruptEndsAParkedReceive(receivers.get(0));
                        closeEndsAParkedReceive(receivers.get(1));
                        for (Thread p : pollerThreads()) {
                            if (!pollers.contains(p)) {
                                pollers.add(p);
                            }
                        }
                    }
                } finally {
                    for (UdEndpoint r : receivers) {
                        r.close();
                    }
                }
            }
            for (Thread p : pollers) {
                p.join(TimeUnit.SECONDS.toMillis(BOUND_SECONDS));
                check(!p.isAlive(), "the poller thread is alive " + BOUND_SECONDS + " s after the last endpoint closed");
            }
        }

        private static void receiversAndTicker(UdEndpoint sender, AddressHandle ah, List<UdEndpoint> receivers)
                throws InterruptedException {
            java.util.List<AtomicReference<Object>> got = newResults(receivers.size());
            List<Thread> threads = new ArrayList<>();
            for (int i = 0; i < receivers.size(); i++) {
                UdEndpoint r = receivers.get(i);
                AtomicReference<Object> slot = got.get(i);
                threads.add(startVirtual(() -> {
                    try {
                        slot.set(r.receive(30, TimeUnit.SECONDS));
                    } catch (RuntimeException e) {
                        slot.set(e);
                    }
                }));
            }
            Thread.sleep(300); // the receivers go to their waits (a wait that held a carrier would hold it from here)
            AtomicInteger ticks = new AtomicInteger();
            Thread ticker = startVirtual(() -> {
                long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TICKER_MILLIS);
                while (System.nanoTime() - end < 0) {
                    try {
                        Thread.sleep(TICK_MILLIS);
                    } catch (InterruptedException e) {
                        return;
                    }
                    ticks.incrementAndGet();
                }
            });
            ticker.join(TimeUnit.SECONDS.toMillis(BOUND_SECONDS));
            int made = ticks.get();
            ticker.interrupt();
            for (int i = 0; i < receivers.size(); i++) {
                byte[] payload = ("to receiver " + i).getBytes(StandardCharsets.US_ASCII);
                sender.send(ah, receivers.get(i).address(), ByteBuffer.wrap(payload));
            }
            for (Thread t : threads) {
                t.join(TimeUnit.SECONDS.toMillis(BOUND_SECONDS));
                check(!t.isAlive(), "a receiver still waits " + BOUND_SECONDS + " s after its datagram was sent");
            }
            check(made >= MIN_TICKS, "the ticker made " + made + " of " + TICKER_MILLIS / TICK_MILLIS + " ticks while "
                    + receivers.size() + " virtual threads waited in receive on 2 carriers (at least " + MIN_TICKS
                    + " expected): the waits held the carriers");
            for (int i = 0; i < receivers.size(); i++) {
                Object r = got.get(i).get();
                check(r instanceof Datagram, "receiver " + i + " got " + r);
                String text = new String(((Datagram) r).payload(), StandardCharsets.US_ASCII);
                check(text.equals("to receiver " + i), "receiver " + i + " got '" + text + "'");
            }
        }

        private static java.util.List<AtomicReference<Object>> newResults(int n) {
            java.util.List<AtomicReference<Object>> a = new java.util.ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                a.add(new AtomicReference<>());
            }
            return a;
        }

        private static void interruptEndsAParkedReceive(UdEndpoint r) throws InterruptedException {
            AtomicReference<Object> result = new AtomicReference<>();
            Thread t = startVirtual(() -> {
                try {
                    result.set(r.receive(30, TimeUnit.SECONDS));
                } catch (RuntimeException e) {
                    result.set(e);
                }
            });
            awaitParked(r, t, "an interrupted receive");
            t.interrupt();
            t.join(TimeUnit.SECONDS.toMillis(BOUND_SECONDS));
            check(!t.isAlive(), "an interrupt left a parked receive waiting");
            check(result.get() instanceof InterruptedOperationException, "an interrupted receive returned " + result.get());
        }

        private static void closeEndsAParkedReceive(UdEndpoint r) throws InterruptedException {
            AtomicReference<Object> result = new AtomicReference<>();
            Thread t = startVirtual(() -> {
                try {
                    result.set(r.receive(30, TimeUnit.SECONDS));
                } catch (RuntimeException e) {
                    result.set(e);
                }
            });
            awaitParked(r, t, "a receive ended by its endpoint's close");
            r.close();
            t.join(TimeUnit.SECONDS.toMillis(BOUND_SECONDS));
            check(!t.isAlive(), "the endpoint's close left a parked receive waiting");
            check(result.get() instanceof IllegalStateException, "a receive on a closed endpoint returned " + result.get());
        }

        /** Until {@code t} is parked in its wait (a virtual thread in poll(2) stays RUNNABLE). */
        private static void awaitParked(UdEndpoint r, Thread t, String what) throws InterruptedException {
            if (!r.eventDriven()) {
                Thread.sleep(200); // no channel: the wait parks in 20 us steps, RUNNABLE between them
                return;
            }
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(BOUND_SECONDS);
            while (t.getState() != Thread.State.TIMED_WAITING && t.isAlive() && System.nanoTime() - end < 0) {
                Thread.sleep(5);
            }
            Thread.sleep(100); // past the spin and the arm, into the sleep itself
            check(t.getState() == Thread.State.TIMED_WAITING, what + " is " + t.getState() + ", not parked, in its wait");
        }

        private static List<Thread> pollerThreads() {
            List<Thread> found = new ArrayList<>();
            for (Thread t : Thread.getAllStackTraces().keySet()) {
                if (t.getName().equals("efa-ah-poller")) {
                    found.add(t);
                }
            }
            return found;
        }
    }
}
