package org.efaah.cache;

import static org.efaah.cache.MockFixture.peer;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.efaah.fixture.LogCapture;
import org.efaah.verbs.Device;
import org.efaah.verbs.Errno;
import org.efaah.verbs.VerbsException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Issue 22 cases 2 and 4, and their kind: every revival path (acquire, acquireByAhn) against a
 * concurrent revival of the same AH, and against its device closed underneath.
 */
@ExtendWith(CacheInvariants.class)
class RevivalRaceTest {

    /**
     * Case 2: a retained AH found by AHN whose lock is held (here by the reaper, inside a destroy
     * that fails, so the AH stays) while an acquire and two look-ups wait for it. Whichever gets
     * the lock first revives it; before the fix a look-up coming after that tried only the 0 -> 1
     * revival and returned null for an AH live throughout.
     */
    @Test
    void lookUpsByAhnWaitingBehindALockHolderAllGetTheAhWhoeverRevivesItFirst() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try (LogCapture log = LogCapture.of(AddressHandleCache.class); FaultyFixture f = FaultyFixture.withRetention(3600, 100)) {
            AddressHandle first = f.cache.acquire(f.pd, peer(1));
            int ahn = first.ahn();
            Entry e = first.entry;
            first.close();
            f.advanceSeconds(3601); // idle too long: a reaper round destroys it
            CountDownLatch inDestroy = new CountDownLatch(1);
            CountDownLatch letGo = new CountDownLatch(1);
            f.provider.onDestroy = h -> {
                inDestroy.countDown();
                await(letGo);
                throw new VerbsException("ibv_destroy_ah", Errno.EIO, "held by the test");
            };
            pool.submit(f.cache::cleanUp);
            assertTrue(inDestroy.await(10, TimeUnit.SECONDS));
            Future<AddressHandle> acquired = pool.submit(() -> f.cache.acquire(f.pd, peer(1)));
            Future<AddressHandle> lookUp1 = pool.submit(() -> f.cache.acquireByAhn(f.pd, ahn, f.cache.ahnReuseMark()));
            Future<AddressHandle> lookUp2 = pool.submit(() -> f.cache.acquireByAhn(f.pd, ahn, f.cache.ahnReuseMark()));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (e.getQueueLength() < 3 && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            f.provider.onDestroy = null;
            letGo.countDown();
            List<AddressHandle> handles = new ArrayList<>();
            for (Future<AddressHandle> r : List.of(acquired, lookUp1, lookUp2)) {
                handles.add(r.get(10, TimeUnit.SECONDS));
            }
            for (AddressHandle h : handles) {
                assertNotNull(h, "every waiter gets the live AH");
                assertEquals(ahn, h.ahn());
                h.close();
            }
            assertEquals(1, f.provider.mock.counters().hardwareCreates());
            assertEquals(1, f.cache.inspection().retainedEntries());
            assertEquals(1, log.count(Level.WARN, "destroy of AH[ahn=" + ahn));
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * Case 4: with retention, a forced {@code Device.close()} frees the PD and its AHs; the
     * retained entry, and one held across the close, must then not be handed out, by acquire
     * or by AHN, nor be counted as live.
     */
    @Test
    void afterAForcedDeviceCloseNoAhOfItIsHandedOutOrCounted() {
        try (LogCapture log = LogCapture.of(AddressHandleCache.class, Device.class)) {
            FaultyFixture f = FaultyFixture.withRetention(3600, 100);
            AddressHandle retained = f.cache.acquire(f.pd, peer(1));
            int retainedAhn = retained.ahn();
            retained.close();
            AddressHandle held = f.cache.acquire(f.pd, peer(2));
            int heldAhn = held.ahn();
            f.device.close(); // forced: frees the PD and both AHs
            assertThrows(IllegalStateException.class, () -> f.cache.acquire(f.pd, peer(1)), "the retained AH");
            assertThrows(IllegalStateException.class, () -> f.cache.acquire(f.pd, peer(2)), "the held AH");
            assertThrows(IllegalStateException.class, () -> f.cache.acquire(f.pd, peer(3)), "a miss");
            long mark = f.cache.ahnReuseMark();
            assertThrows(IllegalStateException.class, () -> f.cache.acquireByAhn(f.pd, retainedAhn, mark));
            assertThrows(IllegalStateException.class, () -> f.cache.acquireByAhn(f.pd, heldAhn, mark));
            assertEquals(0, f.cache.inspection().liveEntries(), "no AH of a closed device counts as live");
            assertEquals(0, f.cache.inspection().retainedEntries());
            IllegalStateException refused = assertThrows(IllegalStateException.class, held::nativeHandle);
            assertTrue(refused.getMessage().contains("device"), refused.getMessage());
            held.close();
            assertEquals(0, f.cache.inspection().liveHandles());
            f.cache.close();
            assertEquals(0, f.cache.stats().leaksReported());
            assertEquals(0, f.provider.mock.counters().liveAhs());
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
