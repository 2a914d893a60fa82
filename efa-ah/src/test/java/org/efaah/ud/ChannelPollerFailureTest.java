package org.efaah.ud;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.efaah.fixture.LogCapture;
import org.efaah.internal.BackgroundReader;
import org.efaah.verbs.Errno;
import org.efaah.verbs.ForwardingVerbsProvider;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The poller thread of parked waits ({@link ChannelPoller}) when its readiness set fails: a failed
 * {@code epoll_wait} (the round's read), a failed {@code epoll_ctl} (a waiter's arm), a failed
 * {@code epoll_create1}. A background reader survives a failed read, and no failure is lost: each
 * parked waiter returns (and looks again) within a bound, the poller thread goes on and reads again
 * once the set works, each failure is reported once, and a poller that cannot be made is a typed
 * error to the waiter. Over an epoll of the test's own ({@link FakeEpoll}), so each failure comes
 * exactly where the test puts it; the waits are platform threads calling {@link ChannelPoller#park}
 * (what a virtual thread's wait calls), so this runs on Java 17.
 */
class ChannelPollerFailureTest {
    /** Far beyond what any step here takes: a wait that lasts it has been lost. */
    private static final long LOST_NANOS = TimeUnit.SECONDS.toNanos(60);
    private static final long BOUND_MILLIS = TimeUnit.SECONDS.toMillis(10);
    private final FakeEpoll epoll = new FakeEpoll();

    @AfterEach
    void pollerEnds() throws InterruptedException {
        epoll.failWaits.set(0);
        epoll.failAlways = false;
        Thread t = ChannelPoller.thread(epoll);
        if (t != null) {
            t.join(BOUND_MILLIS);
            assertFalse(t.isAlive(), "the poller thread outlived its last waiter by " + BOUND_MILLIS + " ms");
        }
    }

    @Test
    void aFailedEpollWaitUnparksEveryParkedWaiterAndThePollerReadsOn() throws Exception {
        try (LogCapture log = LogCapture.of(BackgroundReader.class, ChannelPoller.class)) {
            epoll.startPoller();
            Waiter first = new Waiter(epoll, 7);
            first.awaitArmed();
            Thread poller = ChannelPoller.thread(epoll);
            assertNotNull(poller, "no poller thread for a parked waiter");
            epoll.failWaits.set(1);
            epoll.wakeChannelPoller(0); // ends the round in progress: the next one fails
            first.join();
            assertTrue(first.returned.get(), "a waiter parked when the poller's epoll_wait failed was not unparked");
            // The same thread goes on, and reads again (a round that ends, here at a wake, says so;
            // till then a waiter parks in short steps): a readiness unparks the next waiter.
            epoll.wakeChannelPoller(0);
            awaitLogged(log, Level.INFO, "reading again");
            assertEquals(1, log.count(Level.INFO, "reading again"), log.lines().toString());
            Waiter second = new Waiter(epoll, 8);
            second.awaitArmed();
            assertSame(poller, ChannelPoller.thread(epoll), "a failed epoll_wait replaced the poller thread");
            assertTrue(poller.isAlive(), "a failed epoll_wait ended the poller thread");
            epoll.ready(8);
            second.join();
            assertTrue(second.returned.get(), "a readiness after the failure did not unpark its waiter");
            assertEquals(1, log.count(Level.WARN, "the poller of parked completion waits failed"), log.lines().toString());
        }
    }

    @Test
    void aPollerWhoseEveryEpollWaitFailsLetsEachWaiterReturnAndEndsWhenIdle() throws Exception {
        epoll.failAlways = true;
        try (LogCapture log = LogCapture.of(BackgroundReader.class, ChannelPoller.class)) {
            Thread poller = null;
            for (int i = 0; i < 20; i++) {
                Waiter w = new Waiter(epoll, 7);
                w.join();
                assertTrue(w.returned.get(), "park " + i + " on a failing poller did not return");
                Thread t = ChannelPoller.thread(epoll);
                if (poller == null) {
                    poller = t;
                } else if (t != null) {
                    assertSame(poller, t, "the failing poller thread was replaced");
                }
            }
            assertTrue(epoll.waits.get() > 1, "the poller gave up after " + epoll.waits.get() + " failed epoll_wait");
            assertEquals(1, log.count(Level.WARN, "the poller of parked completion waits failed"),
                    "each failure of a run is reported once: " + log.lines());
            if (poller != null) {
                poller.join(BOUND_MILLIS);
                assertFalse(poller.isAlive(), "a failing poller with no waiter left runs on");
            }
            assertEquals(epoll.creates.get(), epoll.destroys.get(), "a poller that ended did not free its set");
        }
    }

    @Test
    void aFailedArmIsReportedOnceAndTheWaitParksInShortSteps() throws Exception {
        try (LogCapture log = LogCapture.of(BackgroundReader.class, ChannelPoller.class)) {
            epoll.failArms = Errno.ENOMEM;
            long start = System.nanoTime();
            for (int i = 0; i < 50; i++) {
                Waiter w = new Waiter(epoll, 7);
                w.join();
                assertTrue(w.returned.get(), "a park whose arm failed did not return");
            }
            assertTrue(System.nanoTime() - start < TimeUnit.MILLISECONDS.toNanos(BOUND_MILLIS), "50 parks with a failed arm");
            assertEquals(1, log.count(Level.WARN, "epoll_ctl"), "a failed arm is reported, once a run: " + log.lines());
            // An fd closed under its wait (the endpoint's close, a recovery's new CQ) is no failure of the poller.
            epoll.failArms = null;
            epoll.startPoller();
            Waiter armed = new Waiter(epoll, 7);
            armed.awaitArmed();
            epoll.ready(7);
            armed.join();
            assertEquals(1, log.count(Level.INFO, "arms again"), log.lines().toString());
            epoll.failArms = Errno.EBADF;
            Waiter closed = new Waiter(epoll, 9);
            closed.join();
            assertTrue(closed.returned.get(), "a park whose fd closed did not return");
            assertEquals(1, log.count(Level.WARN, "epoll_ctl"), "an fd closed under a wait was reported: " + log.lines());
        }
    }

    @Test
    void aPollerThatCannotBeMadeIsATypedErrorAndLeavesNothingBehind() throws Exception {
        epoll.failCreate = 24; // EMFILE: the process is out of fds
        VerbsException e = assertThrows(VerbsException.class, () -> ChannelPoller.park(epoll, 7, LOST_NANOS));
        assertEquals("epoll_create1", e.operation());
        assertEquals(24, e.errnoValue());
        assertNull(ChannelPoller.thread(epoll), "a poller that could not be made left a thread");
        epoll.failCreate = 0;
        epoll.startPoller();
        Waiter w = new Waiter(epoll, 7);
        w.awaitArmed();
        epoll.ready(7);
        w.join();
        assertTrue(w.returned.get(), "the wait after the failed create");
    }

    private static void awaitLogged(LogCapture log, Level level, String text) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(BOUND_MILLIS);
        while (log.count(level, text) == 0 && System.nanoTime() - end < 0) {
            Thread.sleep(1);
        }
    }

    /** A platform thread in {@link ChannelPoller#park} on one fd, for at most {@link #LOST_NANOS}. */
    private static final class Waiter {
        final AtomicBoolean returned = new AtomicBoolean();
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        private final FakeEpoll epoll;
        private final int fd;
        private final Thread thread;

        Waiter(FakeEpoll epoll, int fd) {
            this.epoll = epoll;
            this.fd = fd;
            this.thread = new Thread(() -> {
                try {
                    returned.set(ChannelPoller.park(epoll, fd, LOST_NANOS));
                } catch (Throwable t) {
                    failure.set(t);
                }
            }, "waiter-" + fd);
            thread.start();
        }

        /** Until the waiter has armed its fd and parked. */
        void awaitArmed() throws InterruptedException {
            long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(BOUND_MILLIS);
            while (!(epoll.armed.contains(fd) && thread.getState() == Thread.State.TIMED_WAITING)
                    && System.nanoTime() - end < 0) {
                Thread.sleep(1);
            }
            assertTrue(epoll.armed.contains(fd), "fd " + fd + " never armed");
            assertEquals(Thread.State.TIMED_WAITING, thread.getState(), "the waiter on fd " + fd + " is not parked");
        }

        void join() throws InterruptedException {
            thread.join(BOUND_MILLIS);
            assertFalse(thread.isAlive(), "the waiter on fd " + fd + " still parked " + BOUND_MILLIS + " ms on: lost");
            assertNull(failure.get(), () -> "the waiter on fd " + fd + " threw " + failure.get());
        }
    }

    /**
     * An epoll(7) in Java with switches: the next N {@code epoll_wait} fail (or all), every arm
     * fails with an errno, the create fails with an errno. Level-triggered, one shot, as the stub's.
     */
    static final class FakeEpoll extends ForwardingVerbsProvider {
        private static final int WAKE = -1;
        final AtomicInteger failWaits = new AtomicInteger();
        volatile boolean failAlways;
        volatile Errno failArms;
        volatile int failCreate;
        final Set<Integer> armed = ConcurrentHashMap.newKeySet();
        private final Set<Integer> readable = ConcurrentHashMap.newKeySet();
        private final BlockingQueue<Integer> events = new LinkedBlockingQueue<>();
        final AtomicInteger waits = new AtomicInteger();
        final AtomicInteger creates = new AtomicInteger();
        final AtomicInteger destroys = new AtomicInteger();

        FakeEpoll() {
            super(new MockVerbsProvider(MockConfig.defaults()));
        }

        /**
         * Starts the poller and waits for its first round: its start unparks every waiter parked by
         * then (a start after a failure may follow a lost readiness), which a waiter of a test must not meet.
         */
        void startPoller() throws InterruptedException {
            int before = waits.get();
            ChannelPoller.park(this, 99, 1);
            long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(BOUND_MILLIS);
            while (waits.get() == before && System.nanoTime() - end < 0) {
                Thread.sleep(1);
            }
            assertTrue(waits.get() > before, "the poller never began a round");
        }

        /** {@code fd} becomes readable (and stays so: level-triggered). */
        void ready(int fd) {
            readable.add(fd);
            events.add(fd);
        }

        @Override
        public long createChannelPoller() {
            if (failCreate != 0) {
                throw new VerbsException("epoll_create1", failCreate, "injected");
            }
            creates.incrementAndGet();
            return 1;
        }

        @Override
        public void armChannelPoller(long poller, int fd) {
            Errno e = failArms;
            if (e != null) {
                throw new VerbsException("epoll_ctl", e, "injected, fd " + fd);
            }
            armed.add(fd);
            if (readable.contains(fd)) {
                events.add(fd);
            }
        }

        @Override
        public int awaitChannelPoller(long poller, int timeoutMillis, int[] ready) {
            waits.incrementAndGet();
            if (failAlways || failWaits.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                throw new VerbsException("epoll_wait", Errno.EIO, "injected");
            }
            Integer fd;
            try {
                fd = events.poll(timeoutMillis, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return 0;
            }
            if (fd == null || fd == WAKE || !armed.remove(fd)) {
                return 0;
            }
            ready[0] = fd;
            return 1;
        }

        @Override
        public void wakeChannelPoller(long poller) {
            events.add(WAKE);
        }

        @Override
        public void destroyChannelPoller(long poller) {
            destroys.incrementAndGet();
        }
    }
}
