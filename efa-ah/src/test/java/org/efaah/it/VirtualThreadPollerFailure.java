package org.efaah.it;

import static org.efaah.it.ChildJvm.attributes;
import static org.efaah.it.ChildJvm.check;
import static org.efaah.it.VirtualThreadWaits.Child.startVirtual;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.fixture.Jdks;
import org.efaah.ud.Datagram;
import org.efaah.ud.UdEndpoint;
import org.efaah.verbs.Device;
import org.efaah.verbs.Errno;
import org.efaah.verbs.ForwardingVerbsProvider;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.VerbsProviders;
import org.efaah.verbs.spi.VerbsProvider;
import org.junit.jupiter.api.Assumptions;

/**
 * Issue 35 item 4, the poller thread's failures through the native provider (over the EFA double):
 * the native provider behind switches that fail the poller's {@code epoll_wait} (its read), a
 * waiter's {@code epoll_ctl} (its arm) and {@code epoll_create1}, as the stub's own calls would
 * fail (EIO, ENOMEM, EMFILE). Eight virtual threads wait in {@code receive} on two carriers; with
 * every failure each still gets its datagram (none hangs, none misses its wake-up), the poller
 * thread that failed is the one that reads on, and each failure is logged once; a poller that
 * cannot be made is a typed error to the receive. The child's output, its WARNs among it, is
 * checked here, never printed: a passing build prints no warning.
 */
final class VirtualThreadPollerFailure {
    private static final int RECEIVERS = 8;
    private static final long BOUND_SECONDS = 10;
    private static final String NO_EVENTS = "NO CQ EVENTS";

    private VirtualThreadPollerFailure() {
    }

    static void runInChild() throws IOException, InterruptedException {
        Path java = Jdks.withVirtualThreads();
        Assumptions.assumeTrue(java != null, "no Java 21 or later here (this JVM is "
                + Runtime.version().feature() + ", no JDK 25 found): virtual threads are not tested");
        String out = ChildJvm.run(java, List.of("-Djdk.virtualThreadScheduler.parallelism=2",
                "-Djdk.virtualThreadScheduler.maxPoolSize=2"), Child.class, Map.of());
        Assumptions.assumeFalse(out.contains(NO_EVENTS), "the device gives no CQ events (EFA_DOUBLE_CQ_NOTIFICATIONS=0): "
                + "its waits park in short steps and never reach the poller");
        check(count(out, "the poller of parked completion waits failed") == 1,
                "the failed epoll_wait rounds were not logged once:\n" + out);
        check(count(out, "arming a completion channel's fd") == 1, "the failed arms were not logged once:\n" + out);
        check(count(out, " WARN ") == 2, "other warnings than the two failures':\n" + out);
    }

    private static int count(String text, String what) {
        int n = 0;
        for (int i = text.indexOf(what); i >= 0; i = text.indexOf(what, i + 1)) {
            n++;
        }
        return n;
    }

    /** The native provider whose poller calls fail at a switch. */
    static final class FailingPoller extends ForwardingVerbsProvider {
        final AtomicInteger failWaits = new AtomicInteger();
        final AtomicInteger failedWaits = new AtomicInteger();
        volatile boolean failArms;
        final AtomicInteger failedArms = new AtomicInteger();
        volatile boolean failCreate;
        private volatile long poller;

        FailingPoller(VerbsProvider delegate) {
            super(delegate);
        }

        @Override
        public long createChannelPoller() {
            if (failCreate) {
                throw new VerbsException("epoll_create1", 24, "injected: EMFILE");
            }
            poller = super.createChannelPoller();
            return poller;
        }

        @Override
        public void armChannelPoller(long p, int fd) {
            if (failArms) {
                failedArms.incrementAndGet();
                throw new VerbsException("epoll_ctl", Errno.ENOMEM, "injected, fd " + fd);
            }
            super.armChannelPoller(p, fd);
        }

        @Override
        public int awaitChannelPoller(long p, int timeoutMillis, int[] ready) {
            if (failWaits.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                failedWaits.incrementAndGet();
                throw new VerbsException("epoll_wait", Errno.EIO, "injected");
            }
            return super.awaitChannelPoller(p, timeoutMillis, ready);
        }

        /** Ends the poller's round in progress, so that a switch set now applies to the next. */
        void wakePoller() {
            super.wakeChannelPoller(poller);
        }
    }

    /** The case in the child; exits 1 on a failed check. */
    static final class Child {
        public static void main(String[] args) {
            ChildJvm.exit(Child::run);
        }

        private static void run() throws Exception {
            UdEndpoint.Options options = UdEndpoint.Options.defaults().withSpin(0, TimeUnit.NANOSECONDS);
            try (FailingPoller provider = new FailingPoller(VerbsProviders.factory("native").create());
                 Device device = Device.openFirst(provider);
                 ProtectionDomain pd = device.allocatePd();
                 AddressHandleCache cache = AddressHandleCache.create();
                 UdEndpoint sender = UdEndpoint.open(pd, cache, options)) {
                List<UdEndpoint> receivers = new ArrayList<>();
                try {
                    for (int i = 0; i < RECEIVERS; i++) {
                        receivers.add(UdEndpoint.open(pd, cache, options));
                    }
                    if (!receivers.get(0).eventDriven()) {
                        System.out.println(NO_EVENTS);
                        return;
                    }
                    try (AddressHandle ah = cache.acquire(pd, attributes(receivers.get(0)))) {
                        // A failed epoll_wait, three rounds running, while every receiver is parked.
                        Thread poller = round("epoll_wait failing", sender, ah, receivers, () -> { }, () -> {
                            provider.failWaits.set(3);
                            provider.wakePoller();
                        }, () -> {
                            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(BOUND_SECONDS);
                            while (provider.failedWaits.get() < 3 && System.nanoTime() - end < 0) {
                                LockSupport.parkNanos(1_000_000); // the poller's backoffs, 70 ms in all, may outlast the receives
                            }
                            check(provider.failedWaits.get() == 3, "epoll_wait failed " + provider.failedWaits.get()
                                    + " times, not 3");
                        }, null);
                        // Every arm failing: the receivers park in short steps instead.
                        round("epoll_ctl failing", sender, ah, receivers, () -> provider.failArms = true, () -> { },
                                () -> check(provider.failedArms.get() > 0, "no arm failed"), poller);
                        provider.failArms = false;
                        round("after the failures", sender, ah, receivers, () -> { }, () -> { }, () -> { }, poller);
                        // No poller, and none can be made: a receive on a virtual thread gets a typed error.
                        poller.join(TimeUnit.SECONDS.toMillis(BOUND_SECONDS));
                        check(!poller.isAlive(), "the poller thread outlived its waiters by " + BOUND_SECONDS + " s");
                        provider.failCreate = true;
                        Object r = receiveOnVirtualThread(receivers.get(0));
                        check(r instanceof VerbsException && ((VerbsException) r).operation().equals("epoll_create1")
                                && ((VerbsException) r).errnoValue() == 24, "a receive whose poller cannot be made "
                                + "returned " + r);
                        provider.failCreate = false;
                        round("a poller made again", sender, ah, receivers, () -> { }, () -> { }, () -> { }, null);
                    }
                } finally {
                    for (UdEndpoint r : receivers) {
                        r.close();
                    }
                }
            }
        }

        private static Object receiveOnVirtualThread(UdEndpoint r) throws InterruptedException {
            AtomicReference<Object> result = new AtomicReference<>();
            Thread t = startVirtual(() -> {
                try {
                    result.set(r.receive(BOUND_SECONDS, TimeUnit.SECONDS));
                } catch (RuntimeException e) {
                    result.set(e);
                }
            });
            t.join(TimeUnit.SECONDS.toMillis(2 * BOUND_SECONDS));
            check(!t.isAlive(), "a receive on a virtual thread never returned");
            return result.get();
        }

        /**
         * The receivers wait on virtual threads, {@code before} run before they start and {@code during}
         * once they are parked; then each gets its datagram, and {@code failed} checks what failed. Returns the poller thread, checked to be {@code samePoller}
         * when given: the one that failed reads on.
         */
        private static Thread round(String what, UdEndpoint sender, AddressHandle ah, List<UdEndpoint> receivers,
                                    Runnable before, Runnable during, Runnable failed, Thread samePoller)
                throws InterruptedException {
            before.run();
            List<AtomicReference<Object>> got = new ArrayList<>();
            List<Thread> threads = new ArrayList<>();
            for (UdEndpoint r : receivers) {
                AtomicReference<Object> slot = new AtomicReference<>();
                got.add(slot);
                threads.add(startVirtual(() -> {
                    try {
                        slot.set(r.receive(3 * BOUND_SECONDS, TimeUnit.SECONDS));
                    } catch (RuntimeException e) {
                        slot.set(e);
                    }
                }));
            }
            Thread.sleep(300); // into their waits
            during.run();
            Thread.sleep(300); // the failures happen
            for (int i = 0; i < receivers.size(); i++) {
                sender.send(ah, receivers.get(i).address(),
                        ByteBuffer.wrap((what + " " + i).getBytes(StandardCharsets.US_ASCII)));
            }
            for (Thread t : threads) {
                t.join(TimeUnit.SECONDS.toMillis(BOUND_SECONDS));
                check(!t.isAlive(), what + ": a receiver still waits " + BOUND_SECONDS + " s after its datagram was sent");
            }
            failed.run();
            for (int i = 0; i < receivers.size(); i++) {
                Object r = got.get(i).get();
                check(r instanceof Datagram && new String(((Datagram) r).payload(), StandardCharsets.US_ASCII)
                        .equals(what + " " + i), what + ": receiver " + i + " got " + r);
            }
            Thread poller = null;
            for (Thread t : Thread.getAllStackTraces().keySet()) {
                if (t.getName().equals("efa-ah-poller")) {
                    check(poller == null, what + ": two poller threads");
                    poller = t;
                }
            }
            check(poller != null, what + ": no poller thread");
            check(samePoller == null || poller == samePoller, what + ": the poller thread was replaced");
            return poller;
        }
    }
}
