package org.efaah.ud;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The slots' lock: what ReentrantLock.lock and unlock promise, with a release store for a release. */
class SlotsLockTest {
    /** A liveness bound, not a timing: it holds beside busy JVMs on fewer CPUs. */
    private static final long BOUND_SECONDS = 60;

    @Test
    void noTwoThreadsHoldItAtOnceAndNoUpdateIsLost() throws Exception {
        SlotsLock lock = new SlotsLock();
        AtomicBoolean inside = new AtomicBoolean();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        long[] count = {0};
        int threads = 4;
        int rounds = 20_000;
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> all = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            all.add(started("slots-lock-" + t, failure, () -> {
                start.await();
                for (int i = 0; i < rounds; i++) {
                    lock.lock();
                    try {
                        if (!inside.compareAndSet(false, true)) {
                            throw new AssertionError("two holders at once");
                        }
                        count[0]++; // a plain field: the lock's release orders it for the next holder
                        if (i % 1000 == 0) {
                            Thread.yield(); // held a while: the others go to their parks
                        }
                        inside.set(false);
                    } finally {
                        lock.unlock();
                    }
                }
            }));
        }
        start.countDown();
        for (Thread th : all) {
            th.join(TimeUnit.SECONDS.toMillis(BOUND_SECONDS));
            assertFalse(th.isAlive(), th.getName() + " still waits after " + BOUND_SECONDS + " s");
        }
        if (failure.get() != null) {
            throw new AssertionError(failure.get());
        }
        lock.lock();
        try {
            assertEquals((long) threads * rounds, count[0]);
        } finally {
            lock.unlock();
        }
    }

    @Test
    void itIsReentrantAndFreeOnlyAfterTheLastUnlock() throws Exception {
        SlotsLock lock = new SlotsLock();
        lock.lock();
        lock.lock();
        assertTrue(lock.isHeldByCurrentThread());
        CountDownLatch taken = new CountDownLatch(1);
        Thread other = taker(lock, taken, () -> { });
        lock.unlock();
        assertFalse(taken.await(200, TimeUnit.MILLISECONDS), "taken while still held once");
        assertTrue(lock.isHeldByCurrentThread());
        lock.unlock();
        assertFalse(lock.isHeldByCurrentThread());
        assertTrue(taken.await(BOUND_SECONDS, TimeUnit.SECONDS), "the waiter never got the lock");
        other.join();
    }

    @Test
    void onlyTheHolderMayUnlock() throws Exception {
        SlotsLock lock = new SlotsLock();
        assertThrows(IllegalMonitorStateException.class, lock::unlock);
        lock.lock();
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        started("slots-lock-stranger", thrown, lock::unlock).join();
        assertTrue(thrown.get() instanceof IllegalMonitorStateException, String.valueOf(thrown.get()));
        lock.unlock();
    }

    @Test
    void anInterruptDoesNotEndTheWaitAndIsKept() throws Exception {
        SlotsLock lock = new SlotsLock();
        lock.lock();
        CountDownLatch taken = new CountDownLatch(1);
        AtomicBoolean interruptedAfter = new AtomicBoolean();
        Thread waiter = taker(lock, taken, () -> interruptedAfter.set(Thread.currentThread().isInterrupted()));
        awaitParked(waiter);
        waiter.interrupt();
        assertFalse(taken.await(200, TimeUnit.MILLISECONDS), "an interrupt gave the lock away");
        lock.unlock();
        assertTrue(taken.await(BOUND_SECONDS, TimeUnit.SECONDS), "the waiter never got the lock");
        waiter.join();
        assertTrue(interruptedAfter.get(), "the interrupt was lost");
    }

    @Test
    void aParkedWaiterGetsTheLockOnceItIsFree() throws Exception {
        SlotsLock lock = new SlotsLock();
        for (int round = 0; round < 50; round++) {
            lock.lock();
            CountDownLatch taken = new CountDownLatch(1);
            Thread waiter = taker(lock, taken, () -> { });
            if (round % 2 == 0) {
                awaitParked(waiter);
            }
            lock.unlock();
            assertTrue(taken.await(BOUND_SECONDS, TimeUnit.SECONDS), "round " + round + ": the waiter never got the lock");
            waiter.join();
        }
    }

    /** What a test thread runs; whatever it throws is kept for the test to check. */
    private interface Body {
        void run() throws Exception;
    }

    /** A started thread that runs {@code body}, keeping in {@code failure} the first it throws. */
    private static Thread started(String name, AtomicReference<Throwable> failure, Body body) {
        Thread t = new Thread(() -> {
            try {
                body.run();
            } catch (Throwable e) {
                failure.compareAndSet(null, e);
            }
        }, name);
        t.start();
        return t;
    }

    /** A started thread that takes the lock, runs {@code whileHeld}, counts {@code taken} down and lets go. */
    private static Thread taker(SlotsLock lock, CountDownLatch taken, Runnable whileHeld) {
        Thread t = new Thread(() -> {
            lock.lock();
            try {
                whileHeld.run();
                taken.countDown();
            } finally {
                lock.unlock();
            }
        }, "slots-lock-taker");
        t.start();
        return t;
    }

    private static void awaitParked(Thread t) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(BOUND_SECONDS);
        while (t.getState() != Thread.State.TIMED_WAITING) {
            assertTrue(System.nanoTime() < deadline, t.getName() + " never parked");
            Thread.sleep(1);
        }
    }
}
