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
 *   CREATING --create ok--> LIVE --last release, destroy ok--> DEAD
 *      |                     ^  |
 *      +--create failed--> FAILED   (LIVE with refs == 0 is "unreferenced": revivable)
 * </pre>
 * The reference count is changed without the lock only by {@link #tryRetain()}, which succeeds
 * only while it is positive, so the lock-free hit path can never revive an entry that a release
 * has taken to zero: reviving (0 to 1) happens under the lock, where a pending destroy is seen.
 * An unreferenced LIVE entry is what a retention policy (keep idle AHs for a while; evict the
 * least recently used on ENOMEM) would hold on to: it only changes when the destroy happens.
 */
final class Entry {
    enum State { CREATING, LIVE, FAILED, DEAD }

    /** Makes {@link #tryRetain()} fail for good once the AH is gone, whatever releases follow. */
    static final int GONE = Integer.MIN_VALUE / 2;

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
    RuntimeException failure; // guarded by lock
    boolean destroyFailed;    // guarded by lock
    /**
     * References held by handles the leak detector saw garbage-collected, already counted as
     * leaks, so that cache close does not count them again. Guarded by lock.
     */
    int collectedLeaks;

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

    /** Takes a reference unconditionally; only with the lock held, on a LIVE entry. */
    void retainLocked() {
        REFS.getAndAdd(this, 1);
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
