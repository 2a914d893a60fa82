package org.efaah.cache;

import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;
import org.efaah.internal.BackgroundReader;

/**
 * A cache's reaper (with retention only): a daemon thread that, every half idle time (1 ms to
 * 1 s), destroys the retained AHs idle for longer than the policy's idle time, and retries the
 * destroys that failed, through {@link Reclaimer}. It runs as a {@link BackgroundReader}, as the
 * library's other background threads do: a round that fails is logged, backed off and retried.
 * It stops when the cache closes.
 *
 * <p>Locks: it takes entry locks only with {@code tryLock} (an entry busy under its lock is
 * being revived or destroyed by its holder, and is looked at next time, while the others are
 * reaped), and never touches a referenced AH, so it cannot delay a hit; it holds no lock while
 * parked. It drains the idle list from a snapshot, by destroying under the entry lock
 * ({@link IdleList}'s membership rule).
 */
final class Reaper {
    private static final AtomicInteger REAPERS = new AtomicInteger();

    private final AddressHandleCache cache;
    private final Reclaimer reclaimer;
    private final IdleList idle;
    private final Set<Entry> detached;
    private final LongSupplier ticker;
    private final long idleNanos;
    private final long period;
    private final BackgroundReader reaper;

    Reaper(AddressHandleCache cache, Reclaimer reclaimer) {
        this.cache = cache;
        this.reclaimer = reclaimer;
        this.idle = cache.idle;
        this.detached = cache.detached;
        this.ticker = cache.ticker;
        this.idleNanos = cache.retention.idleTime().toNanos();
        this.period = Math.max(TimeUnit.MILLISECONDS.toNanos(1), Math.min(idleNanos / 2, TimeUnit.SECONDS.toNanos(1)));
        this.reaper = cache.retention.retains() ? BackgroundReader.of(this::reapOnce,
                "efa-ah-cache-reaper-" + REAPERS.incrementAndGet(), "the AH cache's reaper") : null;
    }

    /** The reaper thread, null without retention. */
    Thread thread() {
        return reaper == null ? null : reaper.thread();
    }

    /** Starts the reaper thread, if retention has one; once, when the cache is otherwise built. */
    void start() {
        if (reaper != null) {
            reaper.start();
        }
    }

    /** Lets the reaper see that the cache closed, now rather than after its period. */
    void wake() {
        if (reaper != null) {
            reaper.wake();
        }
    }

    /** Stops the reaper: waits a bounded time (less if interrupted, the flag kept) for it to end. */
    void await() {
        if (reaper != null) {
            reaper.stop();
        }
    }

    /** One round: parked for the period, then a clean-up; false once the cache closed. */
    private boolean reapOnce() {
        LockSupport.parkNanos(cache, period);
        if (cache.closed) {
            return false;
        }
        cleanUp();
        return true;
    }

    /** See {@link AddressHandleCache#cleanUp()}. */
    int cleanUp() {
        if (cache.closed) {
            return 0;
        }
        int destroyed = 0;
        long now = ticker.getAsLong();
        // A snapshot: an entry busy under its lock is passed over (it stays listed, for its holder
        // or the next round), and one whose destroy fails goes back to the tail, stamped now,
        // out of this round.
        for (Entry e : idle.idleSince(now - idleNanos)) {
            try {
                if (reclaimer.tryDestroyUnreferenced(e, RemovalCause.IDLE)) {
                    destroyed++;
                }
            } catch (Error logged) {
                // Logged by the destroy (quiet, for the reaper); the AH is kept for a retry.
            }
        }
        for (Entry d : detached) {
            if (d.references() == 0) {
                try {
                    if (reclaimer.tryDestroyUnreferenced(d, RemovalCause.INVALIDATED)) {
                        destroyed++;
                    }
                } catch (Error logged) {
                    // Logged by the destroy (quiet, for the reaper); the AH is kept for a retry.
                }
            }
        }
        return destroyed;
    }
}
