package org.efaah.ud;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import java.util.Arrays;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.efaah.fixture.LogCapture;
import org.efaah.internal.BackgroundReader;
import org.efaah.verbs.Errno;
import org.efaah.verbs.ForwardingVerbsProvider;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

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
@Tag("timing") // each wait has a bound, and a start after a failure waits out a backoff
class ChannelPollerFailureTest {
    /** Far beyond what any step here takes: a wait that lasts it has been lost. */
    private static final long LOST_NANOS = TimeUnit.SECONDS.toNanos(60);
    private static final long BOUND_MILLIS = TimeUnit.SECONDS.toMillis(10);
    private final FakeEpoll epoll = new FakeEpoll();

    @AfterEach
    void pollerEnds() throws InterruptedException {
        ChannelPoller.threadStarter = Thread::start;
        epoll.failWaits.set(0);
        epoll.failAlways = null;
        epoll.failNext = null;
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

    /** A VerbsException (a failed epoll_wait) and any other failure of a round (a provider's bug). */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"VerbsException", "IllegalStateException"})
    void aPollerWhoseEveryEpollWaitFailsLetsEachWaiterReturnAndEndsWhenIdle(String failure) throws Exception {
        epoll.failAlways = failure.equals("VerbsException")
                ? () -> new VerbsException("epoll_wait", Errno.EIO, "injected")
                : () -> new IllegalStateException("injected: a provider's bug");
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

    @Test
    void aPollerThreadThatCannotStartLeavesNothingBehindAndALaterWaitStartsOne() throws Exception {
        AtomicInteger starts = new AtomicInteger();
        ChannelPoller.threadStarter = t -> {
            starts.incrementAndGet();
            throw new OutOfMemoryError("unable to create native thread: possibly out of memory or process/resource limits reached");
        };
        try (LogCapture log = LogCapture.of(BackgroundReader.class, ChannelPoller.class)) {
            Waiter failed = new Waiter(epoll, 7);
            failed.awaitEnd();
            Thread left = ChannelPoller.thread(epoll);
            int created = epoll.creates.get();
            int destroyed = epoll.destroys.get();
            // A later wait, its fd readable meanwhile: it returns at once, never armed on a poller
            // with no thread (where it would sleep its whole wait).
            epoll.ready(8);
            Waiter later = new Waiter(epoll, 8);
            later.join();
            assertTrue(later.returned.get(), "the wait after a failed start");
            assertNull(failed.failure.get(), () -> "a failed start of the poller thread reached the wait as " + failed.failure.get());
            assertTrue(failed.returned.get(), "the wait whose poller did not start");
            assertNull(left, "a poller whose thread did not start stays registered");
            assertEquals(created, destroyed, "a poller whose thread did not start kept its set");
            // While it fails, each later wait may try again (after a backoff), and the run is logged once.
            long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(BOUND_MILLIS);
            while (starts.get() < 3 && System.nanoTime() - end < 0) {
                new Waiter(epoll, 7).join();
            }
            assertTrue(starts.get() >= 3, "no later wait tried to start the poller again: " + starts.get() + " start(s)");
            assertNull(ChannelPoller.thread(epoll), "a poller whose thread did not start stays registered");
            assertEquals(epoll.creates.get(), epoll.destroys.get(), "a poller whose thread did not start kept its set");
            assertEquals(1, log.count(Level.WARN, "could not start"), "a run of failed starts is logged once: " + log.lines());
            // A start that works brings the poller back, and says so.
            ChannelPoller.threadStarter = Thread::start;
            end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(BOUND_MILLIS);
            while (ChannelPoller.thread(epoll) == null && System.nanoTime() - end < 0) {
                ChannelPoller.park(epoll, 99, TimeUnit.MILLISECONDS.toNanos(1)); // a wait's short step, started poller or not
            }
            assertNotNull(ChannelPoller.thread(epoll), "no later wait started the poller once starts worked");
            epoll.startPoller();
            Waiter woken = new Waiter(epoll, 9);
            woken.awaitArmed();
            epoll.ready(9);
            woken.join();
            assertTrue(woken.returned.get(), "the wait on the poller started again");
            assertEquals(1, log.count(Level.INFO, "started again"), log.lines().toString());
            assertEquals(1, log.count(Level.WARN, "could not start"), log.lines().toString());
        }
    }

    @Test
    void aPollerThreadThatDiesLeavesNoRegistrationAndTheNextWaitStartsAnother() throws Exception {
        AtomicReference<Throwable> uncaught = new AtomicReference<>();
        ChannelPoller.threadStarter = t -> {
            t.setUncaughtExceptionHandler((thread, e) -> uncaught.set(e)); // not printed: a passing build is silent
            t.start();
        };
        try (LogCapture log = LogCapture.of(BackgroundReader.class, ChannelPoller.class)) {
            epoll.startPoller();
            Thread poller = ChannelPoller.thread(epoll);
            Waiter parked = new Waiter(epoll, 7);
            parked.awaitArmed();
            // A failure whose own report fails (its message cannot be had, as when the log's
            // allocation fails): it escapes the reader's loop, and the poller thread dies.
            epoll.failNext = new IllegalStateException() {
                @Override
                public String getMessage() {
                    throw new IllegalStateException("injected: the failure's report fails");
                }
            };
            epoll.wakeChannelPoller(0);
            poller.join(BOUND_MILLIS);
            assertFalse(poller.isAlive(), "the injected failure did not end the poller thread");
            assertNotNull(uncaught.get(), "the poller thread ended without a failure");
            parked.join();
            assertTrue(parked.returned.get(), "a waiter parked when the poller thread died was not unparked");
            assertNotSame(poller, ChannelPoller.thread(epoll), "a dead poller thread stays registered");
            epoll.startPoller();
            assertNotNull(ChannelPoller.thread(epoll), "the wait after the poller's death started no poller");
            Waiter next = new Waiter(epoll, 8);
            next.awaitArmed();
            epoll.ready(8);
            next.join();
            assertTrue(next.returned.get(), "the wait after the poller's death");
            assertEquals(1, log.count(Level.WARN, "ended unexpectedly"), log.lines().toString());
        }
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

        /** Until the waiter returns, whatever it returned or threw. */
        void awaitEnd() throws InterruptedException {
            thread.join(BOUND_MILLIS);
            assertFalse(thread.isAlive(), "the waiter on fd " + fd + " still parked " + BOUND_MILLIS + " ms on: lost");
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
        /** When set, every epoll_wait throws what it makes. */
        volatile Supplier<RuntimeException> failAlways;
        /** When set, the next epoll_wait throws it. */
        volatile RuntimeException failNext;
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
            long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(BOUND_MILLIS);
            // Parks again until a round begins: a round in progress may end past IDLE_NANOS after
            // a park on a loaded host and retire its poller, and the next park then makes another.
            do {
                ChannelPoller.park(this, 99, 1);
                Thread.sleep(1);
            } while (waits.get() == before && System.nanoTime() - end < 0);
            Thread t = ChannelPoller.thread(this);
            assertTrue(waits.get() > before, () -> "the poller never began a round: " + t
                    + (t == null ? "" : " " + t.getState() + " " + Arrays.toString(t.getStackTrace())));
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
            Supplier<RuntimeException> always = failAlways;
            if (always != null) {
                throw always.get();
            }
            RuntimeException next = failNext;
            if (next != null) {
                failNext = null;
                throw next;
            }
            if (failWaits.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
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
