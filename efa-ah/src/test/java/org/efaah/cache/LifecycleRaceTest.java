package org.efaah.cache;

import static org.efaah.cache.MockFixture.peer;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.efaah.fixture.LogCapture;
import org.efaah.verbs.Errno;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockCounters;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Closing a handle, the cache or a PD while other threads use them, and handles never closed. */
@ExtendWith(LogCapture.Quiet.class)
@ExtendWith(CacheInvariants.class)
class LifecycleRaceTest {

    private static ExecutorService pool;

    @BeforeAll
    static void startPool() {
        pool = Executors.newFixedThreadPool(4);
    }

    @AfterAll
    static void stopPool() throws InterruptedException {
        pool.shutdownNow();
        assertTrue(pool.awaitTermination(10, TimeUnit.SECONDS));
    }

    @Test
    void oneHandleClosedFromTwoThreadsAtOnceReleasesExactlyOnce() throws Exception {
        try (MockFixture f = new MockFixture(MockFixture.strictDevice().build(), LeakDetection.DISABLED)) {
            CyclicBarrier both = new CyclicBarrier(2);
            for (int i = 0; i < 300; i++) {
                AddressHandle keeper = f.cache.acquire(f.pd, peer(1));
                AddressHandle shared = f.cache.acquire(f.pd, peer(1));
                AddressHandle last = f.cache.acquire(f.pd, peer(2));
                Future<?> a = pool.submit(() -> closeTogether(both, shared, last));
                Future<?> b = pool.submit(() -> closeTogether(both, shared, last));
                a.get(10, TimeUnit.SECONDS);
                b.get(10, TimeUnit.SECONDS);
                // A second release of shared would have dropped keeper's reference and destroyed its AH.
                assertEquals(1, f.cache.inspection().liveHandles(), "iteration " + i);
                assertEquals(1, f.mock.counters().liveAhs(), "iteration " + i);
                keeper.nativeHandle();
                keeper.close();
            }
            MockCounters m = f.mock.counters();
            assertEquals(0, m.liveAhs());
            assertEquals(m.hardwareCreates(), m.hardwareDestroys());
            assertEquals(m.hardwareDestroys(), m.destroyCalls(), "the last handle's racing closes destroyed once");
        }
    }

    private static Void closeTogether(CyclicBarrier both, AddressHandle shared, AddressHandle last) throws Exception {
        both.await(10, TimeUnit.SECONDS);
        shared.close();
        last.close();
        return null;
    }

    @Test
    void cacheClosedWhileAcquiresRun() throws Exception {
        for (int round = 0; round < 40; round++) {
            SplittableRandom random = new SplittableRandom(round);
            MockConfig config = MockFixture.strictDevice()
                    .createLatencyNanos(random.nextBoolean() ? 0 : 30_000)
                    .destroyLatencyNanos(random.nextBoolean() ? 0 : 10_000)
                    .build();
            try (MockFixture f = new MockFixture(config, LeakDetection.DISABLED)) {
                ProtectionDomain other = f.device.allocatePd();
                ProtectionDomain[] pds = {f.pd, other};
                AtomicLong closeReturned = new AtomicLong(Long.MAX_VALUE);
                AtomicBoolean stop = new AtomicBoolean();
                List<AddressHandle> survivors = Collections.synchronizedList(new ArrayList<>());
                List<String> wrong = Collections.synchronizedList(new ArrayList<>());
                List<Future<?>> workers = new ArrayList<>();
                for (int t = 0; t < 3; t++) {
                    SplittableRandom own = random.split();
                    workers.add(pool.submit(() -> {
                        List<AddressHandle> held = new ArrayList<>();
                        while (!stop.get()) {
                            long invoked = System.nanoTime();
                            try {
                                held.add(f.cache.acquire(pds[own.nextInt(2)], peer(1 + own.nextInt(4))));
                                if (invoked > closeReturned.get()) {
                                    wrong.add("an acquire that began after close() returned succeeded");
                                }
                            } catch (IllegalStateException refused) {
                                // The cache is closed (or closing): the one allowed refusal.
                            }
                            if (held.size() > 3) {
                                held.remove(own.nextInt(held.size())).close();
                            }
                        }
                        survivors.addAll(held);
                        return null;
                    }));
                }
                TimeUnit.MICROSECONDS.sleep(random.nextInt(3_000));
                f.cache.close();
                closeReturned.set(System.nanoTime());
                TimeUnit.MILLISECONDS.sleep(2);
                stop.set(true);
                for (Future<?> w : workers) {
                    w.get(20, TimeUnit.SECONDS);
                }
                assertEquals(List.of(), wrong);
                MockCounters m = f.mock.counters();
                assertEquals(0, m.liveAhs(), "round " + round + ": every AH destroyed by close");
                assertEquals(m.hardwareCreates(), m.hardwareDestroys(), "round " + round);
                assertEquals(m.hardwareDestroys(), m.destroyCalls(), "round " + round + ": none destroyed twice");
                for (AddressHandle h : survivors) {
                    assertThrows(IllegalStateException.class, h::nativeHandle, "a handle outliving its cache refuses use");
                    h.close();
                }
                assertEquals(m, f.mock.counters(), "closing handles after the cache touches no device");
                assertEquals(0, f.cache.inspection().liveHandles());
                other.close();
            }
        }
    }

    @Test
    void pdClosedWhileAcquiresOnItRun() throws Exception {
        for (int round = 0; round < 20; round++) {
            SplittableRandom random = new SplittableRandom(1000 + round);
            try (MockFixture f = new MockFixture(MockFixture.strictDevice().build(), LeakDetection.DISABLED)) {
                ProtectionDomain doomed = f.device.allocatePd();
                AddressHandle onTheOtherPd = f.cache.acquire(f.pd, peer(1));
                AtomicLong pdClosed = new AtomicLong(Long.MAX_VALUE);
                AtomicBoolean stop = new AtomicBoolean();
                List<String> wrong = Collections.synchronizedList(new ArrayList<>());
                List<Future<?>> workers = new ArrayList<>();
                for (int t = 0; t < 3; t++) {
                    SplittableRandom own = random.split();
                    workers.add(pool.submit(() -> {
                        while (!stop.get()) {
                            long invoked = System.nanoTime();
                            try (AddressHandle h = f.cache.acquire(doomed, peer(1 + own.nextInt(3)))) {
                                h.nativeHandle();
                                if (invoked > pdClosed.get()) {
                                    wrong.add("an acquire on a PD already deallocated succeeded");
                                }
                            } catch (IllegalStateException refused) {
                                if (!refused.getMessage().contains("protection domain is closed")) {
                                    wrong.add("unexpected: " + refused);
                                }
                            }
                        }
                        return null;
                    }));
                }
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                int busy = 0;
                while (!doomed.isClosed() && System.nanoTime() < deadline) {
                    try {
                        doomed.close();
                        pdClosed.set(System.nanoTime());
                    } catch (VerbsException e) {
                        assertEquals(Errno.EBUSY, e.errno());
                        busy++;
                    }
                }
                TimeUnit.MILLISECONDS.sleep(2);
                stop.set(true);
                for (Future<?> w : workers) {
                    w.get(20, TimeUnit.SECONDS);
                }
                assertTrue(doomed.isClosed(), "round " + round + ": the PD was deallocated between AHs ("
                        + busy + " EBUSY)");
                assertEquals(List.of(), wrong);
                assertEquals(1, f.cache.inspection().liveHandles(), "only the other PD's handle is open");
                assertEquals(1, f.mock.counters().liveAhs(), "only the other PD's AH exists");
                onTheOtherPd.nativeHandle();
                onTheOtherPd.close();
                MockCounters m = f.mock.counters();
                assertEquals(m.hardwareCreates(), m.hardwareDestroys());
                assertEquals(m.hardwareDestroys(), m.destroyCalls());
            }
        }
    }

    @Test
    void aHandleDroppedWithoutCloseIsReportedOnceAndItsAhReclaimedAtCacheClose() throws Exception {
        MockFixture f = new MockFixture(MockFixture.strictDevice().build(), LeakDetection.PARANOID);
        try (AddressHandle kept = f.cache.acquire(f.pd, peer(2))) {
            dropWithoutClose(f);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (f.cache.stats().leaksReported() == 0 && System.nanoTime() < deadline) {
                System.gc();
                Thread.sleep(20);
            }
            assertEquals(1, f.cache.stats().leaksReported(), "the dropped handle is reported, the closed one not");
            assertEquals(2, f.mock.counters().liveAhs(), "reporting frees nothing");
            kept.nativeHandle();
        }
        assertEquals(1, f.mock.counters().liveAhs(), "the leaked handle still holds its AH");
        f.cache.close();
        assertEquals(0, f.mock.counters().liveAhs(), "reclaimed at cache close");
        assertEquals(2, f.mock.counters().hardwareDestroys());
        assertEquals(2, f.mock.counters().destroyCalls());
        assertEquals(1, f.cache.stats().leaksReported(), "one leaked handle is one leak, however it was found");
        f.pd.close();
        f.device.close();
    }

    @Test
    void aHandleCollectedAfterCacheCloseIsNotCountedAgain() throws Exception {
        ch.qos.logback.classic.Logger log = (ch.qos.logback.classic.Logger) org.slf4j.LoggerFactory
                .getLogger(AddressHandleCache.class);
        ch.qos.logback.core.read.ListAppender<ch.qos.logback.classic.spi.ILoggingEvent> events =
                new ch.qos.logback.core.read.ListAppender<>();
        events.start();
        log.addAppender(events);
        try {
            MockFixture f = new MockFixture(MockFixture.strictDevice().build(), LeakDetection.PARANOID);
            dropWithoutClose(f);
            f.cache.close();
            assertEquals(1, f.cache.stats().leaksReported(), "counted as open at close");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (!collectedReported(events) && System.nanoTime() < deadline) {
                System.gc();
                Thread.sleep(20);
            }
            assertTrue(collectedReported(events), "the collector reported the dropped handle");
            assertEquals(1, f.cache.stats().leaksReported(), "the collector's later report adds nothing");
            f.pd.close();
            f.device.close();
        } finally {
            log.detachAppender(events);
        }
    }

    private static boolean collectedReported(
            ch.qos.logback.core.read.ListAppender<ch.qos.logback.classic.spi.ILoggingEvent> events) {
        synchronized (events.list) {
            return events.list.stream().anyMatch(e -> e.getFormattedMessage().contains("garbage-collected"));
        }
    }

    private static void dropWithoutClose(MockFixture f) {
        assertFalse(f.cache.acquire(f.pd, peer(7)).isClosed());
    }

    @Test
    void theSameGidOnTwoPdsGivesTwoAhsUnderConcurrency() throws Exception {
        try (MockFixture f = new MockFixture(MockFixture.strictDevice().createLatencyNanos(200_000).build(),
                LeakDetection.DISABLED)) {
            ProtectionDomain second = f.device.allocatePd();
            ProtectionDomain[] pds = {f.pd, second};
            CyclicBarrier go = new CyclicBarrier(4);
            List<Future<List<AddressHandle>>> results = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                int thread = t;
                results.add(pool.submit(() -> {
                    go.await(10, TimeUnit.SECONDS);
                    List<AddressHandle> mine = new ArrayList<>();
                    for (int i = 0; i < 50; i++) {
                        mine.add(f.cache.acquire(pds[(thread + i) % 2], peer(9)));
                    }
                    return mine;
                }));
            }
            List<AddressHandle> all = new ArrayList<>();
            for (Future<List<AddressHandle>> r : results) {
                all.addAll(r.get(20, TimeUnit.SECONDS));
            }
            assertEquals(2, f.mock.counters().hardwareCreates(), "one AH per PD, however many threads ask");
            assertEquals(0, f.mock.counters().duplicatesRefused());
            long[] nativeOf = new long[2];
            for (int p = 0; p < 2; p++) {
                ProtectionDomain pd = pds[p];
                nativeOf[p] = all.stream().filter(h -> h.pd() == pd).findFirst().orElseThrow().nativeHandle();
                for (AddressHandle h : all) {
                    if (h.pd() == pd) {
                        assertEquals(nativeOf[p], h.nativeHandle());
                    }
                }
            }
            assertNotEquals(nativeOf[0], nativeOf[1]);
            // Releasing one PD's AH and deallocating that PD leaves the other PD's AH alone.
            AddressHandle survivor = null;
            for (AddressHandle h : all) {
                if (h.pd() == second) {
                    h.close();
                } else {
                    survivor = h;
                }
            }
            second.close();
            assertEquals(1, f.mock.counters().liveAhs());
            assertEquals(nativeOf[0], survivor.nativeHandle());
            CompletableFuture.runAsync(() -> all.forEach(AddressHandle::close)).get(10, TimeUnit.SECONDS);
            assertEquals(0, f.mock.counters().liveAhs());
        }
    }
}
