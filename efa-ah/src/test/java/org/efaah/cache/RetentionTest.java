package org.efaah.cache;

import static org.efaah.cache.MockFixture.peer;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Issue 10 item 1: idle retention with a bound, on a fake clock. */
@ExtendWith(CacheInvariants.class)
class RetentionTest {

    @Test
    void theDefaultKeepsNothing() {
        try (FaultyFixture f = new FaultyFixture()) {
            assertFalse(f.cache.inspection().retention().retains());
            f.cache.acquire(f.pd, peer(1)).close();
            assertEquals(0, f.provider.mock.counters().liveAhs(), "destroyed at the last close, as before");
            assertEquals(1, f.cache.stats().destroysBy(RemovalCause.CLOSED));
        }
    }

    @Test
    void anUnreferencedAhIsKeptForTheIdleTimeAndTakenBackWithoutACreate() {
        try (FaultyFixture f = FaultyFixture.withRetention(30, 100)) {
            AddressHandle h = f.cache.acquire(f.pd, peer(1));
            int ahn = h.ahn();
            h.close();
            assertEquals(1, f.provider.mock.counters().liveAhs(), "kept");
            assertEquals(1, f.cache.inspection().retainedEntries());
            f.advanceSeconds(29);
            assertEquals(0, f.cache.cleanUp(), "not idle long enough");
            try (AddressHandle again = f.cache.acquire(f.pd, peer(1))) {
                assertEquals(ahn, again.ahn());
            }
            assertEquals(1, f.provider.mock.counters().hardwareCreates(), "one create for two acquires");
            CacheStats s = f.cache.stats();
            assertEquals(1, s.revived());
            assertEquals(2, s.retained());
            assertEquals(1, s.hits());
            f.advanceSeconds(29);
            assertEquals(0, f.cache.cleanUp(), "its idle time began again at the last close");
            f.advanceSeconds(2);
            assertEquals(1, f.cache.cleanUp());
            assertEquals(0, f.provider.mock.counters().liveAhs());
            assertEquals(1, f.cache.stats().destroysBy(RemovalCause.IDLE));
            assertEquals(0, f.cache.inspection().retainedEntries());
        }
    }

    @Test
    void theTickerIsReadOnACreateAndALastCloseButNeverOnAHit() {
        Thread test = Thread.currentThread();
        AtomicLong reads = new AtomicLong();
        LongSupplier ticker = () -> {
            if (Thread.currentThread() == test) { // not the reaper's reads
                reads.incrementAndGet();
            }
            return 1;
        };
        try (MockFixture f = new MockFixture();
             AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED)
                     .ticker(ticker).retention(RetentionPolicy.idle(Duration.ofHours(1), 100)).build()) {
            AddressHandle held = cache.acquire(f.pd, peer(1));
            long afterCreate = reads.get();
            assertTrue(afterCreate > 0, "a create reads it (the AH's age)");
            for (int i = 0; i < 100; i++) {
                cache.acquire(f.pd, peer(1)).close();
            }
            assertEquals(100, cache.stats().hits());
            assertEquals(afterCreate, reads.get(), "no hit and no close that is not the last reads it");
            held.close();
            assertTrue(reads.get() > afterCreate, "the last close reads it (the idle time's start)");
        }
    }

    @Test
    void theReaperNeverDestroysAReferencedAh() {
        try (FaultyFixture f = FaultyFixture.withRetention(1, 100)) {
            AddressHandle held = f.cache.acquire(f.pd, peer(1));
            f.cache.acquire(f.pd, peer(2)).close();
            f.advanceSeconds(3600);
            assertEquals(1, f.cache.cleanUp(), "only the unreferenced one");
            assertEquals(0, held.ahn(), "still usable");
            held.close();
            assertEquals(1, f.provider.mock.counters().liveAhs(), "kept after its own last close");
        }
    }

    @Test
    void beyondTheBoundTheLeastRecentlyUsedGoes() {
        try (FaultyFixture f = FaultyFixture.withRetention(3600, 2)) {
            AddressHandle a = f.cache.acquire(f.pd, peer(1));
            AddressHandle b = f.cache.acquire(f.pd, peer(2));
            AddressHandle c = f.cache.acquire(f.pd, peer(3));
            int ahnB = b.ahn();
            a.close();
            b.close();
            c.close();
            assertEquals(2, f.cache.inspection().retainedEntries());
            assertEquals(1, f.cache.stats().destroysBy(RemovalCause.SIZE));
            try (AddressHandle again = f.cache.acquire(f.pd, peer(2))) {
                assertEquals(ahnB, again.ahn(), "peer 2 was kept: peer 1, closed first, went");
            }
            assertEquals(3, f.provider.mock.counters().hardwareCreates());
        }
    }

    @Test
    void theReaperThreadRunsOnItsOwnAndStopsWithTheCache() throws Exception {
        // Real time here: 50 ms idle time, the reaper looks every 25 ms.
        AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.PARANOID)
                .retention(RetentionPolicy.idle(Duration.ofMillis(50), 10)).build();
        try (MockFixture f = new MockFixture()) {
            cache.acquire(f.pd, peer(1)).close();
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (f.mock.counters().liveAhs() != 0 && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertEquals(0, f.mock.counters().liveAhs(), "reaped without anyone calling cleanUp");
            Thread reaper = cache.reaperThread();
            assertTrue(reaper.isAlive());
            cache.close();
            reaper.join(2_000);
            assertFalse(reaper.isAlive(), "the reaper stops with the cache");
        } finally {
            cache.close();
        }
    }

    @Test
    void retainedAhsGoAtCacheCloseAndThePdCanThenBeDeallocated() {
        FaultyFixture f = FaultyFixture.withRetention(3600, 100);
        f.cache.acquire(f.pd, peer(1)).close();
        assertThrows(org.efaah.verbs.VerbsException.class, f.pd::close, "a retained AH keeps its PD busy");
        f.cache.close();
        assertEquals(1, f.cache.stats().destroysBy(RemovalCause.CACHE_CLOSED));
        assertEquals(0, f.cache.stats().leaksReported(), "a retained AH is no leak");
        f.pd.close();
        f.device.close();
    }

    @Test
    void policyArgumentsAreChecked() {
        assertThrows(IllegalArgumentException.class, () -> RetentionPolicy.idle(Duration.ofSeconds(-1), 1));
        assertThrows(IllegalArgumentException.class, () -> RetentionPolicy.idle(Duration.ofSeconds(1), -1));
        assertThrows(IllegalArgumentException.class, () -> RetentionPolicy.idle(Duration.ofSeconds(1), 65537));
        assertFalse(RetentionPolicy.idle(Duration.ofSeconds(1), 0).retains());
        assertTrue(RetentionPolicy.idle(Duration.ofSeconds(1), 1).retains());
    }
}
