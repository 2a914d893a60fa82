package org.efaah.cache;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.locks.ReentrantLock;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.HardwareAddressHandle;
import org.efaah.verbs.ProtectionDomain;

/**
 * One cache key's AH and its reference count.
 *
 * <p>Life cycle, all transitions made with {@link #lock} held:
 * <pre>
 *   CREATING --create ok--> LIVE --unreferenced (or invalidated, unreferenced), destroy ok--> DEAD
 *      |                     ^  |
 *      +--create failed--> FAILED   (LIVE with refs == 0 is "unreferenced": revivable)
 * </pre>
 * A destroy that fails leaves the entry LIVE and unreferenced (the AH still exists), to be
 * retried by the reaper, an ENOMEM eviction, a revival's later last release, or the cache's close.
 * The reference count is changed without the lock only by {@link #tryRetain()}, which succeeds
 * only while it is positive, so the lock-free hit path can never revive an entry that a release
 * has taken to zero: reviving (0 to 1) happens under the lock, where a pending destroy is seen.
 * An unreferenced LIVE entry is what a {@link RetentionPolicy} keeps, in the cache's
 * {@link IdleList}.
 *
 * <p><b>Invalidation</b> is one atomic step on the count, so it needs no lock and wins or loses
 * cleanly against a hit: {@link #markStale()} adds {@link #STALE} (a large negative number) to a
 * non-negative count. From then on {@link #tryRetain()} fails, the handles already out keep
 * counting down, and the release that brings the count to exactly {@code STALE} was the last
 * one. Ranges: {@code >= 0} valid; {@code [STALE, 0)} invalidated with {@code refs - STALE}
 * references; {@code <= GONE} destroyed.
 */
final class Entry {
    enum State { CREATING, LIVE, FAILED, DEAD }

    /** Makes {@link #tryRetain()} fail for good once the AH is gone, whatever releases follow. */
    static final int GONE = Integer.MIN_VALUE / 2;
    /** Added to the count by an invalidation; see the class comment. */
    static final int STALE = GONE / 2;

    private static final VarHandle REFS;

    static {
        try {
            REFS = MethodHandles.lookup().findVarHandle(Entry.class, "refs", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final Object key;
    final ProtectionDomain pd;
    final AddressHandleAttributes attributes;
    final ReentrantLock lock = new ReentrantLock();

    @SuppressWarnings("unused") // accessed through REFS
    private volatile int refs;
    volatile State state = State.CREATING;
    volatile HardwareAddressHandle hardware;
    /** Ticker time at which the create completed, ns; written before {@link #state} turns LIVE. */
    long createdAt;
    Throwable failure;        // guarded by lock
    boolean destroyFailed;    // guarded by lock
    /**
     * References held by handles the leak detector saw garbage-collected, already counted as
     * leaks, so that cache close does not count them again. Guarded by lock.
     */
    int collectedLeaks;

    // Retention: guarded by the cache's IdleList monitor.
    Entry idlePrev;
    Entry idleNext;
    boolean idle;
    /** Ticker time at which the last reference was dropped, ns. */
    long idleSince;

    Entry(Object key, ProtectionDomain pd, AddressHandleAttributes attributes) {
        this.key = key;
        this.pd = pd;
        this.attributes = attributes;
    }

    /** Takes a reference if the entry has one already; never revives an unreferenced entry. */
    boolean tryRetain() {
        for (;;) {
            int r = refs;
            if (r <= 0) {
                return false;
            }
            if (REFS.compareAndSet(this, r, r + 1)) {
                return true;
            }
        }
    }

    /**
     * Takes one more reference for a caller that holds one (a handle being duplicated): works
     * on an invalidated entry too, whose AH stays until its last handle closes. Fails once the
     * AH is gone.
     */
    boolean retainHeld() {
        for (;;) {
            int r = refs;
            if (r <= STALE || r == 0) {
                return false;
            }
            if (REFS.compareAndSet(this, r, r + 1)) {
                return true;
            }
        }
    }

    /** Takes a reference unconditionally; only with the lock held, on a LIVE entry. */
    void retainLocked() {
        REFS.getAndAdd(this, 1);
    }

    /**
     * Takes the first reference of an unreferenced entry (0 to 1); fails if it is referenced or
     * was invalidated meanwhile. Only with the lock held, on a LIVE entry.
     */
    boolean reviveLocked() {
        return REFS.compareAndSet(this, 0, 1);
    }

    /**
     * Invalidates the entry unless it already is (or is gone): hits fail from now on. Returns
     * whether this call invalidated it. Needs no lock.
     */
    boolean markStale() {
        for (;;) {
            int r = refs;
            if (r < 0) {
                return false;
            }
            if (REFS.compareAndSet(this, r, r + STALE)) {
                return true;
            }
        }
    }

    boolean isStale() {
        int r = refs;
        return r < 0 && r >= STALE;
    }

    /** References held, whether or not the entry was invalidated; 0 once destroyed. */
    int references() {
        int r = refs;
        return r >= 0 ? r : r >= STALE ? r - STALE : 0;
    }

    /** Drops a reference; returns the count left. */
    int release() {
        return (int) REFS.getAndAdd(this, -1) - 1;
    }

    int refs() {
        return refs;
    }

    /** Sets the count outright; only with the lock held. */
    void setRefs(int value) {
        refs = value;
    }
}
