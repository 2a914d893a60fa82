package org.efaah.verbs.mock;

import java.util.concurrent.locks.LockSupport;

/**
 * A device's admin queue, through which AH creates and destroys pass: the device works on at most
 * {@code depth} commands at once and queues the rest in arrival order. A command's completion time
 * is fixed when it arrives (the earliest a slot frees, plus its latency), as the hardware keeps
 * working through its queue whether or not the thread that posted a command has woken up yet.
 * Thread-safe; the lock is held only to book a slot, never while waiting.
 */
final class MockAdminQueue {
    /**
     * How early the wait stops sleeping and starts yielding: a timed park on Linux wakes 50 to
     * 150 us late (timer slack plus scheduling), which would make a 50 us command take three times
     * as long. The kernel waits for an admin completion by interrupt, not by timer.
     */
    private static final long SPIN_NANOS = 150_000;

    private final long[] slotFreeAt; // System.nanoTime() at which each slot is next free; guarded by this

    MockAdminQueue(int depth) {
        slotFreeAt = new long[depth];
        long now = System.nanoTime();
        java.util.Arrays.fill(slotFreeAt, now);
    }

    /** Runs one command taking {@code nanos} on the device: returns once the device has completed it. */
    void execute(long nanos) {
        long done;
        synchronized (this) {
            long now = System.nanoTime();
            int earliest = 0;
            for (int i = 1; i < slotFreeAt.length; i++) {
                if (slotFreeAt[i] - slotFreeAt[earliest] < 0) {
                    earliest = i;
                }
            }
            long start = slotFreeAt[earliest] - now > 0 ? slotFreeAt[earliest] : now;
            done = start + nanos;
            slotFreeAt[earliest] = done;
        }
        // Like the kernel's wait for the completion, not cut short by an interrupt.
        long left;
        while ((left = done - System.nanoTime()) > 0) {
            if (left > SPIN_NANOS) {
                LockSupport.parkNanos(left - SPIN_NANOS);
            } else {
                Thread.yield();
            }
        }
    }
}
