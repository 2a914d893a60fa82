package org.efaah.cache;

import static org.efaah.cache.MockFixture.peer;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.efaah.verbs.InterruptedOperationException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Issue 11 case 4: an acquire waiting for another thread's create of the same key returns at once
 * when interrupted (and when the cache closes), without a handle and without changing the count.
 */
@org.junit.jupiter.api.Tag("timing") // scripts/test runs it under load: see TimingRounds
@ExtendWith(CacheInvariants.class)
class InterruptedAcquireTest {

    private static final class Waiter extends Thread {
        final AtomicReference<Throwable> thrown = new AtomicReference<>();
        final AtomicReference<AddressHandle> got = new AtomicReference<>();
        volatile long returnedNanos;
        volatile boolean interruptFlagAfter;
        private final AddressHandleCache cache;
        private final FaultyFixture f;

        Waiter(FaultyFixture f) {
            super("waiter");
            this.f = f;
            this.cache = f.cache;
        }

        @Override
        public void run() {
            try {
                got.set(cache.acquire(f.pd, peer(1)));
            } catch (Throwable t) {
                thrown.set(t);
            } finally {
                returnedNanos = System.nanoTime();
                interruptFlagAfter = Thread.currentThread().isInterrupted();
            }
        }
    }

    @Test
    void interruptedWhileAnotherThreadCreatesStopsWaitingAtOnce() throws Exception {
        try (FaultyFixture f = new FaultyFixture()) {
            f.provider.createGate = new CountDownLatch(1);
            f.provider.createEntered = new CountDownLatch(1);
            AtomicReference<AddressHandle> first = new AtomicReference<>();
            Thread creator = new Thread(() -> first.set(f.cache.acquire(f.pd, peer(1))), "creator");
            creator.start();
            assertTrue(f.provider.createEntered.await(5, TimeUnit.SECONDS));
            Waiter w = new Waiter(f);
            w.start();
            Thread.sleep(400);
            long interruptedAt = System.nanoTime();
            w.interrupt();
            w.join(5_000);
            boolean returnedDuringTheCreate = !w.isAlive();
            long waitedMillis = TimeUnit.NANOSECONDS.toMillis(w.returnedNanos - interruptedAt);
            f.provider.createGate.countDown();
            w.join(5_000);
            creator.join(5_000);
            if (w.got.get() != null) {
                w.got.get().close();
            }
            assertEquals(null, w.got.get(), "an interrupted acquire hands out no handle");
            assertNotNull(w.thrown.get(), "an interrupted acquire throws");
            assertEquals(InterruptedOperationException.class, w.thrown.get().getClass());
            assertTrue(w.thrown.get().getCause() instanceof InterruptedException);
            assertTrue(w.thrown.get().getMessage().startsWith("acquire interrupted while waiting for another thread's "
                    + "create or destroy of the AH to fe80::1"), w.thrown.get().getMessage());
            assertTrue(w.interruptFlagAfter, "the interrupt status is kept");
            assertTrue(returnedDuringTheCreate && waitedMillis < 1_000,
                    "returned " + waitedMillis + " ms after the interrupt, not when the create ended");
            assertEquals(1, f.cache.inspection().liveHandles(), "only the creator's reference");
            first.get().close();
            assertEquals(0, f.provider.mock.counters().liveAhs(), "the count was not changed by the waiter");
        }
    }

    @Test
    void interruptedBeforeTheWaitThrowsWithoutWaiting() throws Exception {
        try (FaultyFixture f = new FaultyFixture()) {
            f.provider.createGate = new CountDownLatch(1);
            f.provider.createEntered = new CountDownLatch(1);
            Thread creator = new Thread(() -> f.cache.acquire(f.pd, peer(1)).close(), "creator");
            creator.start();
            assertTrue(f.provider.createEntered.await(5, TimeUnit.SECONDS));
            Thread.currentThread().interrupt();
            try {
                f.cache.acquire(f.pd, peer(1));
                throw new AssertionError("acquired while interrupted");
            } catch (InterruptedOperationException expected) {
                assertTrue(Thread.interrupted(), "flag kept (and cleared here)");
            } finally {
                f.provider.createGate.countDown();
                creator.join(5_000);
            }
        }
    }

    @Test
    void aWaiterReturnsWhenTheCacheCloses() throws Exception {
        FaultyFixture f = new FaultyFixture();
        f.provider.createGate = new CountDownLatch(1);
        f.provider.createEntered = new CountDownLatch(1);
        Thread creator = new Thread(() -> {
            try {
                f.cache.acquire(f.pd, peer(1)).close();
            } catch (IllegalStateException closed) {
                // the cache closed under the create: expected
            }
        }, "creator");
        creator.start();
        assertTrue(f.provider.createEntered.await(5, TimeUnit.SECONDS));
        Waiter w = new Waiter(f);
        w.start();
        Thread.sleep(100);
        Thread closer = new Thread(f.cache::close, "closer");
        long closedAt = System.nanoTime();
        closer.start();
        w.join(5_000);
        boolean returnedDuringTheCreate = !w.isAlive();
        long waitedMillis = TimeUnit.NANOSECONDS.toMillis(w.returnedNanos - closedAt);
        f.provider.createGate.countDown();
        w.join(5_000);
        creator.join(5_000);
        closer.join(5_000);
        assertTrue(w.thrown.get() instanceof IllegalStateException, "got " + w.thrown.get());
        assertTrue(returnedDuringTheCreate && waitedMillis < 1_000, "returned " + waitedMillis + " ms after close");
        assertEquals(0, f.provider.mock.counters().liveAhs(), "the late create was destroyed");
        assertEquals(0, f.cache.stats().leaksReported(), "the create close refused counted as a handle left open");
        f.pd.close();
        f.device.close();
    }
}
