package org.efaah.cache;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.AbstractQueuedSynchronizer;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Gid;
import org.efaah.verbs.HardwareAddressHandle;
import org.efaah.verbs.ProtectionDomain;

/**
 * One cache key's AH and its reference count.
 *
 * <p>Life cycle, all transitions made here ({@link #markLive}, {@link #markFailed},
 * {@link #retireLocked}), with the entry's lock ({@link #lock()}) held:
 * <pre>
 *   CREATING --create ok--> LIVE --unreferenced (or invalidated, unreferenced), destroy ok--> DEAD
 *      |                     ^  |
 *      +--create failed--> FAILED   (LIVE with refs == 0 is "unreferenced": revivable)
 * </pre>
 * A destroy that fails leaves the entry LIVE and unreferenced (the AH still exists), to be
 * retried by the reaper, an ENOMEM eviction, a revival's later last release, or the cache's close.
 * One transition keeps the count: the close of the entry's device retires it (DEAD) while handles
 * are out, which then refuse use and release into nothing.
 * The reference count is raised without the lock only by {@link #tryRetain()} and
 * {@link #tryRetainHit()}, which succeed only while it is positive, so the lock-free hit path can
 * never revive an entry that a release has taken to zero: reviving (0 to 1) happens under the
 * lock, where a pending destroy is seen. The count shares one word with the hits of the
 * lock-free path ({@link #word}); whoever clears them from the word (an invalidation, the
 * retirement, a fold past {@code FOLD_AT}) adds them to the cache's statistics.
 * An unreferenced LIVE entry is what a {@link RetentionPolicy} keeps, in the cache's
 * {@link IdleList}.
 *
 * <p><b>Invalidation</b> is one atomic step on the count, so it needs no lock and wins or loses
 * cleanly against a hit: {@link #markStale()} adds {@link #STALE} (a large negative number) to a
 * non-negative count. From then on {@link #tryRetain()} fails, the handles already out keep
 * counting down, and the release that brings the count to exactly {@code STALE} was the last
 * one.
 *
 * <p>The packed word ({@link #word}), one CAS for a hit's reference and its count:
 * <pre>
 *   63                              32 31                               0
 *  +----------------------------------+----------------------------------+
 *  |         hits : 32 (unsigned)     |          refs : int32            |
 *  +----------------------------------+----------------------------------+
 *
 *  refs bands:   [ 0, MAX ]      valid, refs references (0: unreferenced, revivable under the lock)
 *                [ STALE, 0 )    invalidated, refs - STALE references (STALE: unreferenced)
 *                ( MIN, GONE ]   retired: destroyed, failed or freed with its device; never retained
 * </pre>
 * As a number the word is {@code hits * HIT + refs}, so adding 1 (a reference) or {@code HIT}
 * (a hit) to it changes the one field.
 *
 * <p><b>On EFA</b> an invalidation does not mark the count: the device holds one AH per (PD,
 * GID), so the held AH stays the one every acquire gets. It sets {@link #doomed} instead (also a
 * single lock-free step): the entry is never retained again, and an unreferenced doomed entry is
 * destroyed by whoever finds it so under its lock.
 */
// The entry is its own lock, a reentrant mutex on its AbstractQueuedSynchronizer state (the hold
// count): ReentrantLock's behaviour without its two objects, 48 bytes per entry at a million peers.
@SuppressWarnings("serial") // never serialised
final class Entry extends AbstractQueuedSynchronizer {
    enum State { CREATING, LIVE, FAILED, DEAD }

    /** Makes {@link #tryRetain()} fail for good once the AH is gone, whatever releases follow. */
    static final int GONE = Integer.MIN_VALUE / 2;
    /** Added to the count by an invalidation; see the class comment. */
    static final int STALE = GONE / 2;

    /** {@link #collectedLeaks} once the cache's close has counted the entry's open handles. */
    private static final int LEAKS_COUNTED_AT_CLOSE = Integer.MIN_VALUE;

    private static final VarHandle WORD;
    /** One hit in {@link #word}: hits are counted above the 32 bits of the reference count. */
    static final long HIT = 1L << 32;
    /** Hits past which the lock-free hit folds them into the cache's counter, far below overflow. */
    private static final long FOLD_AT = 1L << 61;
    private static final VarHandle DOOMED;
    private static final VarHandle INVALIDATION;
    private static final VarHandle COLLECTED_LEAKS;

    static {
        try {
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            WORD = lookup.findVarHandle(Entry.class, "word", long.class);
            DOOMED = lookup.findVarHandle(Entry.class, "doomed", boolean.class);
            INVALIDATION = lookup.findVarHandle(Entry.class, "invalidation", int.class);
            COLLECTED_LEAKS = lookup.findVarHandle(Entry.class, "collectedLeaks", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /**
     * The key, which is also all the entry keeps of its attributes: on EFA the dgid (the AH's
     * attributes are {@link AddressHandleAttributes#forEfa} of it), elsewhere the attributes.
     */
    final Object key;
    final ProtectionDomain pd;
    /** How the key reads back as attributes: its device's policy. */
    final KeyPolicy keys;

    /**
     * The reference count (the low 32 bits, a signed int: the ranges of the class comment) and,
     * above it, the hits counted on the lock-free path since they were last folded into the
     * cache's statistics: one compare-and-set takes the reference and counts the hit, so a hit
     * pays for no statistics counter of its own. As a number the word is
     * {@code hits * HIT + refs}, which every change of either keeps exact.
     */
    @SuppressWarnings("unused") // accessed through WORD
    private volatile long word;
    private volatile State state = State.CREATING;
    /** Written once, before {@link #state} turns LIVE. */
    private volatile HardwareAddressHandle hardware;
    /** The ticker's time at which the create completed, ns; written before {@link #state} turns LIVE. */
    private long createdAt;
    /** EFA's invalidation: never retained again; destroyed once unreferenced. Set once, lock-free. */
    private volatile boolean doomed;
    /**
     * What the counting of this entry's invalidation has seen: {@link #MADE} (its create
     * succeeded), {@link #MARKED} (an invalidation marked it), {@link #BY_NETWORK} (that one was a
     * network change's). Each side sets its bits in one atomic step; whichever completes
     * MADE and MARKED counts the invalidation (and with it the network's), so that an entry whose
     * create fails is never counted, none twice, and the network count never without the other.
     */
    @SuppressWarnings("unused") // accessed through INVALIDATION
    private volatile int invalidation;
    private static final int MADE = 1;
    private static final int MARKED = 2;
    private static final int BY_NETWORK = 4;
    /** What {@link #madeCounts()} returns: nothing to count, an invalidation, or a network one. */
    static final int NOT_COUNTED = 0;
    static final int COUNTED = 1;
    static final int COUNTED_BY_NETWORK = 2;
    private Throwable failure; // guarded by lock
    boolean destroyFailed;    // guarded by lock
    /**
     * References held by handles the leak detector saw garbage-collected, already counted as
     * leaks, so that cache close does not count them again; {@link #LEAKS_COUNTED_AT_CLOSE} once
     * close has counted. Changed only atomically, never under the lock (the leak detector's
     * shared thread must not wait for an entry lock).
     */
    @SuppressWarnings("unused") // accessed through COLLECTED_LEAKS
    private volatile int collectedLeaks;

    // Retention: guarded by the cache's IdleList monitor.
    Entry idlePrev;
    Entry idleNext;
    boolean idle;
    /** The ticker's time at which the last reference was dropped, ns. */
    long idleSince;

    /** An entry for {@code key}, made by {@code keys}: an EFA dgid ({@link Gid}) or, elsewhere, the resolved attributes. */
    Entry(Object key, ProtectionDomain pd, KeyPolicy keys) {
        this.key = key;
        this.pd = pd;
        this.keys = keys;
    }

    State state() {
        return state;
    }

    HardwareAddressHandle hardware() {
        return hardware;
    }

    /** The ticker's time of the create's end, ns; read after {@link #state()} was seen LIVE. */
    long createdAt() {
        return createdAt;
    }

    /** Why the create failed; read with the lock held, after {@link #state()} was seen FAILED. */
    Throwable failure() {
        return failure;
    }

    /** CREATING to LIVE, with its AH; the first reference is taken after, by the creator. */
    void markLive(HardwareAddressHandle hw, long createdAt) {
        assert isHeldExclusively();
        this.hardware = hw;
        this.createdAt = createdAt;
        this.state = State.LIVE;
    }

    /**
     * CREATING to FAILED, for good: the count turns {@link #GONE}, so that a racing invalidation
     * cannot mark it (and keep it in the detached set).
     */
    void markFailed(Throwable cause) {
        assert isHeldExclusively();
        failure = cause;
        state = State.FAILED;
        word = GONE;
    }

    /**
     * LIVE to DEAD (its AH destroyed, or freed with its device): sets the count to {@link #GONE}
     * for good and returns the word it held (the caller adds its hits, {@link #hitsOf}, to the
     * cache's counter). Handles still out then release into nothing.
     */
    long retireLocked() {
        assert isHeldExclusively();
        long was = (long) WORD.getAndSet(this, (long) GONE);
        state = State.DEAD;
        return was;
    }

    /**
     * Whether nobody holds a reference: the count is 0 (valid) or exactly {@link #STALE}
     * (invalidated); with the lock held and the entry LIVE, it is then to be kept, revived or
     * destroyed by the holder.
     */
    boolean isUnreferenced() {
        return isUnreferenced(refsOf(word));
    }

    /** {@link #isUnreferenced()} of a count read once. */
    static boolean isUnreferenced(int refs) {
        return refs == 0 || refs == STALE;
    }

    /** The attributes of the AH; on EFA a new object each call. */
    AddressHandleAttributes attributes() {
        return keys.attributes(key);
    }

    /** The destination GID, or null for a non-global AH. */
    Gid dgid() {
        return keys.dgid(key);
    }

    /** The port the AH is on; 1 on EFA, which has one. */
    int portNum() {
        return keys.portNum(key);
    }

    private static int refsOf(long word) {
        return (int) word;
    }

    /** The hits a word holds. */
    static long hitsOf(long word) {
        return (word - (int) word) >>> 32;
    }

    /** Takes a reference if the entry has one already; never revives an unreferenced entry. */
    boolean tryRetain() {
        for (;;) {
            long w = word;
            if (refsOf(w) <= 0) {
                return false;
            }
            if (WORD.compareAndSet(this, w, w + 1)) {
                return true;
            }
        }
    }

    /**
     * {@link #tryRetain()} for the lock-free hit, counting the hit in the same step. Returns the
     * word it wrote (positive), or -1 if it took no reference; see {@link #hitsDue(long)}.
     */
    long tryRetainHit() {
        for (;;) {
            long w = word;
            if (refsOf(w) <= 0) {
                return -1;
            }
            long next = w + 1 + HIT;
            if (WORD.compareAndSet(this, w, next)) {
                return next;
            }
        }
    }

    /** Whether a word written by {@link #tryRetainHit()} holds hits enough to fold ({@link #takeHits()}). */
    static boolean hitsDue(long word) {
        return word >= FOLD_AT;
    }

    /**
     * Takes the hits counted in the word, leaving 0 there: the caller adds them to the cache's
     * counter (after this step, which a statistics snapshot relies on).
     */
    long takeHits() {
        for (;;) {
            long w = word;
            long h = hitsOf(w);
            if (h == 0 || WORD.compareAndSet(this, w, w - h * HIT)) {
                return h;
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
            long w = word;
            int r = refsOf(w);
            if (r <= STALE || r == 0) {
                return false;
            }
            if (WORD.compareAndSet(this, w, w + 1)) {
                return true;
            }
        }
    }

    /** Takes a reference unconditionally; only with the lock held, on a LIVE entry. */
    void retainLocked() {
        assert isHeldExclusively();
        WORD.getAndAdd(this, 1L);
    }

    /**
     * Takes the first reference of an unreferenced entry (0 to 1); fails if it is referenced or
     * was invalidated meanwhile. Only with the lock held, on a LIVE entry.
     */
    boolean reviveLocked() {
        assert isHeldExclusively();
        for (;;) {
            long w = word;
            if (refsOf(w) != 0) {
                return false;
            }
            if (WORD.compareAndSet(this, w, w + 1)) {
                return true;
            }
        }
    }

    /**
     * Invalidates the entry unless it already is (or is gone): hits fail from now on. Returns
     * the hits the word held, which it clears (the caller adds them to the cache's counter), or
     * -1 if this call did not invalidate it. Needs no lock.
     */
    long markStale() {
        for (;;) {
            long w = word;
            int r = refsOf(w);
            if (r < 0) {
                return -1;
            }
            if (WORD.compareAndSet(this, w, (long) (r + STALE))) {
                return hitsOf(w);
            }
        }
    }

    /** EFA's invalidation: returns whether this call doomed the entry (false if it already was). */
    boolean markDoomed() {
        return DOOMED.compareAndSet(this, false, true);
    }

    boolean isDoomed() {
        return doomed;
    }

    /**
     * Called by the invalidation whose mark ({@link #markStale()}, {@link #markDoomed()}) took:
     * whether it is the one to count the entry invalidated, because its AH exists already; else
     * its creator counts it once the create succeeds ({@link #madeCounts()}), or nobody does.
     */
    boolean markedCounts(boolean byNetwork) {
        int was = (int) INVALIDATION.getAndBitwiseOr(this, MARKED | (byNetwork ? BY_NETWORK : 0));
        return (was & (MADE | MARKED)) == MADE;
    }

    /**
     * Called by the creator once its create succeeded: {@link #COUNTED} or
     * {@link #COUNTED_BY_NETWORK} if an invalidation marked the entry while it was being made and
     * left the count to it, else {@link #NOT_COUNTED}.
     */
    int madeCounts() {
        int was = (int) INVALIDATION.getAndBitwiseOr(this, MADE);
        if ((was & (MADE | MARKED)) != MARKED) {
            return NOT_COUNTED;
        }
        return (was & BY_NETWORK) != 0 ? COUNTED_BY_NETWORK : COUNTED;
    }

    /**
     * The leak detector's report of one collected handle; returns false if the cache's close
     * counted the entry's open handles already (that handle among them).
     */
    boolean addCollectedLeak() {
        for (;;) {
            int n = collectedLeaks;
            if (n == LEAKS_COUNTED_AT_CLOSE) {
                return false;
            }
            if (COLLECTED_LEAKS.compareAndSet(this, n, n + 1)) {
                return true;
            }
        }
    }

    /** The collected handles reported so far (0 once the cache's close counted them). */
    int collectedLeaks() {
        int n = collectedLeaks;
        return n == LEAKS_COUNTED_AT_CLOSE ? 0 : n;
    }

    /** At the cache's close: the collected handles reported so far; later reports defer to close's count. */
    int sealCollectedLeaks() {
        int n = (int) COLLECTED_LEAKS.getAndSet(this, LEAKS_COUNTED_AT_CLOSE);
        return n == LEAKS_COUNTED_AT_CLOSE ? 0 : n;
    }

    boolean isStale() {
        return isStale(refsOf(word));
    }

    static boolean isStale(int refs) {
        return refs < 0 && refs >= STALE;
    }

    static int refsIn(long word) {
        return refsOf(word);
    }

    /** References held, whether or not the entry was invalidated; 0 once destroyed. */
    int references() {
        return referencesIn(word);
    }

    /** {@link #references()} of a word read once (the one {@link #retireLocked()} returns). */
    static int referencesIn(long word) {
        int r = refsOf(word);
        return r >= 0 ? r : r >= STALE ? r - STALE : 0;
    }

    /** Drops a reference; returns the count left. */
    int dropReference() {
        return refsOf((long) WORD.getAndAdd(this, -1L) - 1);
    }

    int refs() {
        return refsOf(word);
    }

    /** The hits counted in the word now, for a statistics snapshot. */
    long pendingHits() {
        return hitsOf(word);
    }

    // ---- the lock

    /** Takes the lock, waiting as long as it takes. */
    void lock() {
        acquire(1);
    }

    /** Takes the lock if it is free (or held by this thread); never waits. */
    boolean tryLock() {
        return tryAcquire(1);
    }

    /** Takes the lock, waiting at most {@code time}; interruptible. */
    boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
        return tryAcquireNanos(1, unit.toNanos(time));
    }

    void unlock() {
        release(1);
    }

    boolean isLocked() {
        return getState() != 0;
    }

    @Override
    protected boolean tryAcquire(int holds) {
        Thread me = Thread.currentThread();
        int c = getState();
        if (c == 0) {
            if (compareAndSetState(0, holds)) {
                setExclusiveOwnerThread(me);
                return true;
            }
            return false;
        }
        if (getExclusiveOwnerThread() == me) {
            setState(c + holds);
            return true;
        }
        return false;
    }

    @Override
    protected boolean tryRelease(int holds) {
        if (getExclusiveOwnerThread() != Thread.currentThread()) {
            throw new IllegalMonitorStateException("entry lock of " + key + " not held by this thread");
        }
        int c = getState() - holds;
        if (c == 0) {
            setExclusiveOwnerThread(null);
        }
        setState(c);
        return c == 0;
    }

    /** Whether this thread holds the lock: what every {@code *Locked} method and transition asserts. */
    @Override
    protected boolean isHeldExclusively() {
        return getExclusiveOwnerThread() == Thread.currentThread();
    }
}
