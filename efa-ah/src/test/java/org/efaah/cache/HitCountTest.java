package org.efaah.cache;

import static org.efaah.cache.MockFixture.peer;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.efaah.fixture.LogCapture;
import org.efaah.verbs.AddressHandleAttributes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Issue 19: a lock-free hit is counted in the same compare-and-set that takes its reference
 * (the entry's word), and added to the statistics when the entry is retired or invalidated. No
 * path may lose a hit or count one twice, and reported hits never go down.
 */
@org.junit.jupiter.api.Tag("timing") // scripts/test runs it under load: see TimingRounds
@ExtendWith(CacheInvariants.class)
class HitCountTest {

    @Test
    void hitsCountedInTheEntrySurviveItsDestroyInvalidationAndTheCacheClose() {
        try (MockFixture f = new MockFixture(MockFixture.strictDevice().build(), LeakDetection.DISABLED)) {
            // The same objects every time: after the first, each acquire takes the lock-free path.
            AddressHandleAttributes one = peer(1);
            AddressHandleAttributes two = peer(2);
            AddressHandle keep = f.cache.acquire(f.pd, one); // a miss
            AddressHandle keep2 = f.cache.acquire(f.pd, two);
            for (int i = 0; i < 100; i++) {
                f.cache.acquire(f.pd, one).close();
                f.cache.acquire(f.pd, two).close();
            }
            assertEquals(200, f.cache.stats().hits(), "live entries: counted from their words");
            keep.close(); // the last reference: destroyed, its 100 hits recorded
            assertEquals(200, f.cache.stats().hits());
            f.cache.invalidate(f.pd, peer(2).dgid()); // on the EFA mock: doomed, still held
            f.cache.acquire(f.pd, two).close();
            assertEquals(201, f.cache.stats().hits());
            keep2.close();
            assertEquals(201, f.cache.stats().hits());
            assertEquals(2, f.cache.stats().misses());
        }
    }

    @Test
    void aStaleMarkAndACacheCloseRecordTheHitsOfHeldEntries() {
        MockFixture f = new MockFixture(MockFixture.strictDevice().efa(false).build(), LeakDetection.DISABLED);
        AddressHandleAttributes three = peer(3).toBuilder().sgidIndex(0).build();
        AddressHandle keep = f.cache.acquire(f.pd, three);
        for (int i = 0; i < 50; i++) {
            f.cache.acquire(f.pd, three).close();
        }
        assertEquals(1, f.cache.invalidateAll()); // RoCE: marked stale, out of the table, still held
        assertEquals(50, f.cache.stats().hits());
        keep.close();
        AddressHandleAttributes four = peer(4).toBuilder().sgidIndex(0).build();
        AddressHandle held = f.cache.acquire(f.pd, four);
        for (int i = 0; i < 7; i++) {
            f.cache.acquire(f.pd, four).close();
        }
        held.close();
        AddressHandleAttributes five = peer(5).toBuilder().sgidIndex(0).build();
        f.cache.acquire(f.pd, five); // left open
        f.cache.acquire(f.pd, five).close();
        try (LogCapture log = LogCapture.of(AddressHandleCache.class)) {
            f.cache.close(); // one handle left open: counted as a leak, its entry's hit recorded
            assertEquals(1, log.count(ch.qos.logback.classic.Level.WARN, "still open"));
        }
        assertEquals(58, f.cache.stats().hits());
        f.pd.close();
        f.device.close();
    }

    @Test
    void theWordKeepsCountAndReferencesApartAcrossEveryRange() {
        Entry e = new Entry(peer(1).dgid(), null, null);
        e.lock(); // as its creator holds it
        e.retainLocked();
        for (int i = 0; i < 5; i++) {
            assertTrue(e.tryRetainHit() > 0);
        }
        assertEquals(6, e.refs());
        assertEquals(5, e.pendingHits());
        for (int i = 0; i < 6; i++) {
            e.dropReference();
        }
        assertEquals(0, e.refs(), "an unreferenced entry keeps its hits");
        assertEquals(5, e.pendingHits());
        assertEquals(-1, e.tryRetainHit(), "never revives");
        assertTrue(e.reviveLocked());
        assertTrue(e.tryRetainHit() > 0);
        assertEquals(2, e.refs());
        assertEquals(6, e.markStale(), "the mark takes the hits");
        assertEquals(0, e.pendingHits());
        assertTrue(e.isStale());
        assertEquals(2, e.references());
        assertEquals(-1, e.tryRetainHit());
        assertEquals(-1, e.markStale());
        e.dropReference();
        assertEquals(Entry.STALE, e.dropReference(), "the last release of a stale entry");
        long was = e.retireLocked();
        assertEquals(Entry.STALE, Entry.refsIn(was));
        assertEquals(0, Entry.hitsOf(was));

        Entry f = new Entry(peer(2).dgid(), null, null);
        f.lock();
        f.retainLocked();
        f.tryRetainHit();
        f.tryRetainHit();
        assertEquals(2, f.takeHits());
        assertEquals(0, f.takeHits());
        assertEquals(3, f.refs());
        assertFalse(Entry.hitsDue(f.tryRetainHit()));
    }

    @Test
    void hitsPastTheFoldPointMoveToTheCounterWithoutLoss() throws Exception {
        try (MockFixture f = new MockFixture(MockFixture.strictDevice().build(), LeakDetection.DISABLED)) {
            AddressHandleAttributes one = peer(1);
            AddressHandle keep = f.cache.acquire(f.pd, one);
            f.cache.acquire(f.pd, one).close(); // validated and a hit: the lock-free path from now on
            // As after 2^29 - 1 more hits (a second's worth of a few hundred at most).
            long preset = (1L << 29) - 1;
            java.lang.reflect.Field word = Entry.class.getDeclaredField("word");
            word.setAccessible(true);
            word.setLong(keep.entry, preset * Entry.HIT + 1 + Entry.HIT);
            f.cache.acquire(f.pd, one).close(); // past the fold point: the word's hits go to the counter
            assertEquals(0, keep.entry.pendingHits());
            assertEquals(1, keep.entry.refs());
            assertEquals(preset + 2, f.cache.stats().hits());
            keep.close();
            assertEquals(preset + 2, f.cache.stats().hits());
        }
    }

    @Test
    void reportedHitsNeverGoDownWhileEntriesComeAndGoAndTheFinalCountIsExact() throws Exception {
        try (MockFixture f = new MockFixture(MockFixture.strictDevice().createLatencyNanos(0).destroyLatencyNanos(0).build(),
                LeakDetection.DISABLED)) {
            AtomicBoolean stop = new AtomicBoolean();
            AtomicLong expectedHits = new AtomicLong();
            List<Thread> workers = new ArrayList<>();
            for (int t = 0; t < 2; t++) {
                int base = t * 100;
                AddressHandleAttributes[] peers = new AddressHandleAttributes[8];
                for (int i = 0; i < peers.length; i++) {
                    peers[i] = peer(base + i);
                }
                workers.add(new Thread(() -> {
                    long hits = 0;
                    for (int round = 0; !stop.get(); round++) {
                        AddressHandleAttributes peer = peers[round % peers.length];
                        // One miss (the key has no entry), then hits on it, then its last close.
                        try (AddressHandle first = f.cache.acquire(f.pd, peer)) {
                            for (int i = 0; i < 20; i++) {
                                f.cache.acquire(f.pd, peer).close();
                                hits++;
                            }
                        }
                    }
                    expectedHits.addAndGet(hits);
                }));
            }
            workers.forEach(Thread::start);
            long last = 0;
            long deadline = System.nanoTime() + 1_000_000_000L;
            int snapshots = 0;
            while (System.nanoTime() < deadline) {
                long now = f.cache.stats().hits();
                assertTrue(now >= last, "hits went down from " + last + " to " + now);
                last = now;
                snapshots++;
                if (snapshots % 50 == 0) {
                    f.cache.invalidateAll();
                }
            }
            stop.set(true);
            for (Thread w : workers) {
                w.join(10_000);
            }
            System.out.println("FIGURE hit counting: " + snapshots + " snapshots, " + expectedHits.get() + " hits");
            assertEquals(expectedHits.get(), f.cache.stats().hits());
        }
    }
}
