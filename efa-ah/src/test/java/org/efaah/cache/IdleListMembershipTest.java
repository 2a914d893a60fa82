package org.efaah.cache;

import static org.efaah.cache.MockFixture.peer;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.efaah.fixture.LogCapture;
import org.efaah.verbs.Errno;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.mock.MockConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Issue 22 case 3 and its kind: an unreferenced AH leaves the idle list only with its lock held,
 * so no path that drains the list (an ENOMEM eviction, the reaper, the bound) can drop one that a
 * lock holder has just put (back) on it; and a busy entry does not stop the others being reaped.
 */
@ExtendWith(CacheInvariants.class)
class IdleListMembershipTest {

    /**
     * Case 3: max_ah 1; the reaper's destroy of the retained AH throws an Error, so it is put
     * back on the idle list, and the reaper logs that while it holds the entry lock (a slow log
     * write). An acquire of another peer meanwhile meets ENOMEM and tries to evict it. Before the
     * fix the eviction took the AH off the list, found the lock taken and dropped it: on no list,
     * never reaped or evicted, every later create failed with ENOMEM.
     */
    @Test
    void anEvictionMeetingABusyVictimLeavesItOnTheListForTheNextOne() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(2);
        MockConfig maxAh1 = MockFixture.strictDevice().maxAh(1).build();
        try (LogCapture log = LogCapture.of(AddressHandleCache.class); FaultyFixture f = FaultyFixture.withRetention(maxAh1, 3600, 100)) {
            f.cache.acquire(f.pd, peer(1)).close(); // retained; the device is full
            f.advanceSeconds(3601);
            CountDownLatch logging = new CountDownLatch(1);
            CountDownLatch letGo = new CountDownLatch(1);
            log.onEvent = event -> {
                if (event.getLevel() == Level.ERROR && event.getFormattedMessage().contains("threw")) {
                    logging.countDown();
                    await(letGo);
                }
            };
            f.provider.failNextDestroy(new OutOfMemoryError("test: native memory"));
            Future<Integer> reaping = pool.submit(f.cache::cleanUp);
            assertTrue(logging.await(10, TimeUnit.SECONDS), "the reaper's destroy threw and is being logged");
            Future<Object> meanwhile = pool.submit(() -> {
                try (AddressHandle h = f.cache.acquire(f.pd, peer(2))) {
                    return h.ahn();
                } catch (VerbsException e) {
                    return e.errno();
                }
            });
            Object outcome = meanwhile.get(10, TimeUnit.SECONDS);
            assertTrue(outcome == Errno.ENOMEM || outcome.equals(0), "the acquire meanwhile: " + outcome);
            log.onEvent = null;
            letGo.countDown();
            reaping.get(10, TimeUnit.SECONDS);
            if (outcome == Errno.ENOMEM) {
                assertEquals(1, f.cache.inspection().retainedEntries(), "the busy victim is still listed");
                try (AddressHandle h = f.cache.acquire(f.pd, peer(2))) {
                    assertEquals(0, h.ahn(), "the next ENOMEM evicts it");
                }
                assertEquals(1, f.cache.stats().destroysBy(RemovalCause.EVICTED_ENOMEM));
            }
            assertEquals(f.cache.inspection().retainedEntries(), f.provider.mock.counters().liveAhs(), "listed = on the device");
        } finally {
            pool.shutdownNow();
        }
    }

    /** Seen item: one entry busy under its lock at the head of the idle list ended the reaper's round. */
    @Test
    void aBusyEntryAtTheHeadDoesNotStopTheReaperDestroyingTheOthers() throws Exception {
        try (FaultyFixture f = FaultyFixture.withRetention(3600, 100)) {
            AddressHandle busy = f.cache.acquire(f.pd, peer(1));
            Entry head = busy.entry;
            busy.close();
            for (int i = 2; i <= 5; i++) {
                f.cache.acquire(f.pd, peer(i)).close();
            }
            f.advanceSeconds(3601);
            CountDownLatch locked = new CountDownLatch(1);
            CountDownLatch letGo = new CountDownLatch(1);
            Thread holder = new Thread(() -> {
                head.lock();
                try {
                    locked.countDown();
                    await(letGo);
                } finally {
                    head.unlock();
                }
            });
            holder.start();
            assertTrue(locked.await(10, TimeUnit.SECONDS));
            assertEquals(4, f.cache.cleanUp(), "the four free ones are reaped");
            letGo.countDown();
            holder.join(10_000);
            assertEquals(1, f.cache.inspection().retainedEntries());
            assertEquals(1, f.cache.cleanUp(), "the busy one goes in the next round");
            assertEquals(0, f.provider.mock.counters().liveAhs());
        }
    }

    /**
     * Seen item: without retention a failed destroy keeps the AH unreferenced for a retry; it is
     * counted by {@code retainedEntries()} (as documented) and {@code cleanUp()} retries it.
     */
    @Test
    void withoutRetentionAFailedDestroyIsCountedAndRetriedByCleanUp() {
        try (LogCapture log = LogCapture.of(AddressHandleCache.class); FaultyFixture f = new FaultyFixture()) {
            AddressHandle h = f.cache.acquire(f.pd, peer(1));
            f.provider.failNextDestroy(new VerbsException("ibv_destroy_ah", Errno.EIO, "test"));
            h.close();
            assertEquals(1, f.provider.mock.counters().liveAhs());
            assertEquals(1, f.cache.inspection().retainedEntries(), "kept for a retry, and counted");
            assertEquals(1, f.cache.cleanUp());
            assertEquals(0, f.cache.inspection().retainedEntries());
            assertEquals(0, f.provider.mock.counters().liveAhs());
            assertEquals(1, log.count(Level.WARN, "destroy of"));
        }
    }

    private static void await(CountDownLatch latch) {
        try {
            assertTrue(latch.await(10, TimeUnit.SECONDS));
        } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
        }
    }
}
