package org.efaah.verbs.mock;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The one channel shape of the mock, behind its async-event, network and completion channels (as
 * efa_ah_waker.c is behind the native ones): what was posted waits in a queue until a wait takes
 * it all. A wait has a bound and returns on something posted, a wake (which it consumes), a stop
 * (which stays), or an interrupt of the waiting thread (the flag kept). Waits use this object's
 * lock only, so that whoever posts may hold its own lock (the fabric's, the network's) while
 * doing so: theirs, then this one, the one lock order. The lock is a {@link ReentrantLock}, not the
 * monitor: a virtual thread waiting on a monitor keeps its carrier before Java 24 (JEP 491), one
 * waiting on a {@link Condition} parks and lets it go.
 */
final class MockChannel<E> {
    /** The context the channel belongs to, 0 for none (network channels). */
    final long context;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    /* Guarded by lock. */
    private final List<E> pending = new ArrayList<>();
    private boolean woken;
    private boolean stopped;

    MockChannel(long context) {
        this.context = context;
    }

    void post(E item) {
        lock.lock();
        try {
            pending.add(item);
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    void wake() {
        lock.lock();
        try {
            woken = true;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    void stop() {
        lock.lock();
        try {
            stopped = true;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Drops what is pending and not yet taken. */
    void clear() {
        lock.lock();
        try {
            pending.clear();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Waits up to {@code timeoutMillis} for something pending, a wake or a stop.
     *
     * @return what was pending, oldest first (now taken); empty on timeout, wake or interrupt;
     *         null once the channel is stopped
     */
    List<E> await(int timeoutMillis) {
        lock.lock();
        try {
            long left = TimeUnit.MILLISECONDS.toNanos(Math.max(0, timeoutMillis));
            while (!stopped && pending.isEmpty() && !woken && left > 0) {
                try {
                    left = changed.awaitNanos(left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
            if (stopped) {
                return null;
            }
            woken = false;
            List<E> taken = List.copyOf(pending);
            pending.clear();
            return taken;
        } finally {
            lock.unlock();
        }
    }
}
