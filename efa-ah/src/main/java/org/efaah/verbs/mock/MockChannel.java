package org.efaah.verbs.mock;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The one channel shape of the mock, behind its async-event, network and completion channels (as
 * efa_ah_waker.c is behind the native ones): what was posted waits in a queue until a wait takes
 * it all. A wait has a bound and returns on something posted, a wake (which it consumes), a stop
 * (which stays), or an interrupt of the waiting thread (the flag kept). Waits use this object's
 * monitor only, so that whoever posts may hold its own lock (the fabric's, the network's) while
 * doing so: theirs, then this one, the one lock order.
 */
final class MockChannel<E> {
    /** The context the channel belongs to, 0 for none (network channels). */
    final long context;
    private final List<E> pending = new ArrayList<>();
    private boolean woken;
    private boolean stopped;

    MockChannel(long context) {
        this.context = context;
    }

    synchronized void post(E item) {
        pending.add(item);
        notifyAll();
    }

    synchronized void wake() {
        woken = true;
        notifyAll();
    }

    synchronized void stop() {
        stopped = true;
        notifyAll();
    }

    /** Drops what is pending and not yet taken. */
    synchronized void clear() {
        pending.clear();
    }

    /**
     * Waits up to {@code timeoutMillis} for something pending, a wake or a stop.
     *
     * @return what was pending, oldest first (now taken); empty on timeout, wake or interrupt;
     *         null once the channel is stopped
     */
    synchronized List<E> await(int timeoutMillis) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Math.max(0, timeoutMillis));
        long left;
        while (!stopped && pending.isEmpty() && !woken && (left = deadline - System.nanoTime()) > 0) {
            try {
                TimeUnit.NANOSECONDS.timedWait(this, left);
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
    }
}
