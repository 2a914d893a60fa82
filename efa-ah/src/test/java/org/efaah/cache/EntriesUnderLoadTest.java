package org.efaah.cache;

import static org.efaah.cache.MockFixture.peer;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.efaah.health.HealthStatus;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Listings and health reports taken while threads acquire, close and invalidate: never an
 * exception, never a lock a hit waits for, and every row consistent in itself.
 */
@org.junit.jupiter.api.Tag("timing") // scripts/test runs it under load: see TimingRounds
@ExtendWith(CacheInvariants.class)
class EntriesUnderLoadTest {

    @Test
    void listingsDuringChurnAreConsistentPerRow() throws Exception {
        try (MockFixture f = new MockFixture(MockFixture.strictDevice().maxAh(4096).createLatencyNanos(0).build(),
                LeakDetection.DISABLED)) {
            AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED)
                    .retention(RetentionPolicy.idle(Duration.ofHours(1), 32)).build();
            AtomicBoolean stop = new AtomicBoolean();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            List<Thread> workers = new ArrayList<>();
            for (int t = 0; t < 3; t++) {
                Thread w = new Thread(() -> {
                    ThreadLocalRandom r = ThreadLocalRandom.current();
                    try {
                        while (!stop.get()) {
                            try (AddressHandle a = cache.acquire(f.pd, peer(1 + r.nextInt(64)))) {
                                if (r.nextInt(50) == 0) {
                                    cache.invalidate(f.pd, a.attributes().dgid());
                                }
                            } catch (org.efaah.verbs.VerbsException refused) {
                                // As documented: EFA (the strict mock) refuses a fresh AH for a GID
                                // whose invalidated AH is still referenced by another thread.
                            }
                        }
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    }
                });
                w.start();
                workers.add(w);
            }
            long rows = 0;
            try {
                long deadline = System.nanoTime() + 1_000_000_000L;
                while (System.nanoTime() < deadline) {
                    for (AddressHandleEntry row : cache.inspection().entries(e -> true, 1000)) {
                        rows++;
                        // An entry may be invalidated while it is created, or between its last
                        // release and its destroy: references and the mark come from one read.
                        assertTrue(row.references() >= 0, row::toString);
                        assertTrue(row.state().equals("LIVE") || row.state().equals("CREATING"), row::toString);
                        assertTrue(row.state().equals("LIVE") || row.ahn() == -1 && row.ageNanos() == 0,
                                row::toString);
                    }
                    assertTrue(cache.inspection().health().status() != HealthStatus.DOWN, () -> cache.inspection().health().toString());
                }
            } finally {
                stop.set(true);
                for (Thread w : workers) {
                    w.join();
                }
            }
            assertEquals(null, failure.get());
            assertTrue(rows > 0);
            cache.invalidateAll();
            cache.close();
        }
    }
}
