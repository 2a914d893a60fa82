package org.efaah.cache;

import static org.efaah.cache.MockFixture.peer;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.efaah.fixture.LogCapture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Issue 22, seen item: the leak detector runs on the JVM's one shared Cleaner thread, which
 * took each leaked handle's entry lock with a blocking {@code lock()}: one entry lock held long
 * (a slow create or destroy of that key) held back every leak report in the JVM. It takes none.
 */
@ExtendWith(CacheInvariants.class)
class LeakDetectorLockTest {

    @Test
    void aLeakIsReportedWhileItsEntryLockIsHeldAndCountedOnce() throws Exception {
        try (LogCapture log = LogCapture.of(AddressHandleCache.class)) {
            MockFixture f = new MockFixture(MockFixture.strictDevice().build(), LeakDetection.PARANOID);
            AddressHandle kept = f.cache.acquire(f.pd, peer(7));
            Entry e = kept.entry;
            CountDownLatch locked = new CountDownLatch(1);
            CountDownLatch letGo = new CountDownLatch(1);
            Thread holder = new Thread(() -> {
                e.lock();
                try {
                    locked.countDown();
                    letGo.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                } finally {
                    e.unlock();
                }
            }, "lock-holder");
            holder.start();
            try {
                assertTrue(locked.await(10, TimeUnit.SECONDS));
                dropWithoutClose(f);
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (f.cache.stats().leaksReported() == 0 && System.nanoTime() < deadline) {
                    System.gc();
                    Thread.sleep(20);
                }
                assertEquals(1, f.cache.stats().leaksReported(), "reported while the entry lock is held");
                assertTrue(e.isLocked());
            } finally {
                letGo.countDown();
                holder.join(10_000);
            }
            assertFalse(holder.isAlive());
            kept.close();
            f.cache.close(); // the dropped handle's reference is still open, but already reported
            assertEquals(1, f.cache.stats().leaksReported(), "one leaked handle is one leak");
            assertEquals(0, f.mock.counters().liveAhs());
            assertEquals(1, log.count(Level.WARN, "garbage-collected"));
            f.pd.close();
            f.device.close();
        }
    }

    private static void dropWithoutClose(MockFixture f) {
        assertFalse(f.cache.acquire(f.pd, peer(7)).isClosed());
    }
}
