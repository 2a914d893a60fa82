package org.efaah.cache;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.Errno;
import org.efaah.verbs.HardwareAddressHandle;
import org.efaah.verbs.InterruptedOperationException;
import org.efaah.verbs.VerbsException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The destroy side of a cache: destroying an unreferenced AH and retiring its entry, keeping the
 * unreferenced AHs under the retention bound, evicting them when a create answers ENOMEM, and
 * destroying everything at close ({@link Reaper} destroys those idle too long). It moves entries
 * only through the cache's {@link EntryTables}; the cache decides when an AH is retained or
 * destroyed ({@code lastReleased}, {@code close}).
 *
 * <p>Locks: {@link #destroyLocked} and {@link #destroyHardware} run with the entry's lock held by
 * the caller; {@link #destroyAll} (cache close only) takes each entry's lock, waiting for a create
 * in progress to end. Everything else here takes entry locks only with {@code tryLock} (a busy
 * entry is being revived or destroyed by its holder, and is left to it), so eviction and the
 * bound never wait for an entry lock and never delay a hit; the idle list's monitor is taken
 * inside an entry lock, never the other way round. A create at max_ah may wait for its device's
 * turn ({@link #createEvictingOnEnomem}), holding only its fresh entry's lock. A referenced AH is
 * never touched but at close.
 *
 * <p>Rules, against the paths that move entries (see {@link EntryTables}' note):
 * <ul>
 *   <li>The eviction and the bound drain the idle list from a snapshot (or a walk) of it and take
 *       an entry off only by destroying it under its lock; one whose lock is taken stays listed
 *       ({@link IdleList}'s membership rule), so no holder that has just listed it can lose it.</li>
 *   <li>A destroy retires the entry in one place, under its lock: DEAD, out of the AHN index,
 *       the detached set and its table. A failed one keeps it LIVE and unreferenced, listed
 *       again for a retry unless invalidated (then it stays in the detached set) or the cache
 *       closed.</li>
 *   <li>Close walks the tables first and the detached set second, since an invalidation adds an
 *       entry to the set before it takes it out of its table: an entry on the move is in at least
 *       one of the two copies. It repeats until both are empty, so entries a create in progress
 *       put in a table meanwhile are seen too.</li>
 * </ul>
 */
final class Reclaimer {
    private static final Logger LOG = LoggerFactory.getLogger(AddressHandleCache.class);
    /** How often a create waiting for its device's turn looks whether the cache was closed, ms. */
    private static final long TURN_SLICE_MILLIS = 10;
    /** How long a create whose only victims are busy under their locks pauses before it looks again, ns. */
    private static final long BUSY_PAUSE_NANOS = 50_000;
    /**
     * How long in all a create waits for busy victims' holders, ns. A holder of an unreferenced
     * AH's lock (a revival, a last release keeping it, a destroy) takes microseconds; 2 s also
     * covers a destroy's admin command and a holder descheduled on a loaded machine. Past it the
     * holder is stuck (a hung provider call, a blocked log appender) and the ENOMEM goes to the
     * caller rather than the create hanging with the holder.
     */
    private static final long BUSY_WAIT_NANOS = TimeUnit.SECONDS.toNanos(2);

    private final EntryTables tables;
    private final IdleList idle;
    private final Set<Entry> detached;
    private final StatsCounter stats;
    private final CacheEvents events;
    private final LongSupplier ticker;
    private final RetentionPolicy retention;
    private final BooleanSupplier cacheClosed;
    /** Per device with a create in progress, its creates and its turn; dropped when the last create ends. */
    private final ConcurrentHashMap<Device, Room> rooms = new ConcurrentHashMap<>();

    /*
     * Making room at max_ah (max_ah is the device's, whatever the PD). A slot an eviction frees is
     * the evicting create's: no other create of this cache on the device reaches the provider
     * between the eviction and the evicting create's retry. A create that answers ENOMEM counts
     * itself in makingRoom, takes the device's turn (a fair lock, waited for in slices that look
     * at the cache's close and at interrupts) and, holding it, evicts and retries until it has its
     * AH or the cache holds no unreferenced AH of the device. While makingRoom is above zero every
     * other create on the device takes the turn before it calls the provider. So, holding the
     * turn, only the creates that read makingRoom at zero before it rose can take a freed slot:
     * a finite number, each once. The loop needs no count: each round destroys an AH of the cache
     * on the device, and while the turn is held the cache creates no AH there but those few, so
     * the rounds are bounded by the cache's AHs on the device. (AHs created outside the cache can
     * still take slots; then the loop ends when the cache has no unreferenced AH of the device
     * left, which is when its caller may get ENOMEM.) A round that finds only victims busy under
     * their locks (being revived, kept, or destroyed by their holders, none of which waits for
     * the turn) pauses briefly and looks again, for at most BUSY_WAIT_NANOS in all: the one bound
     * in time, for a holder stuck outside the cache. Lock order: the fresh entry's lock, then the
     * turn; the turn's holder takes other entries' locks only with tryLock.
     */
    private static final class Room {
        /** The creates in progress on the device; changed only inside the map's compute. */
        volatile int creates;
        /** Creates on the device making room after an ENOMEM: while above zero, creates take the turn. */
        final AtomicInteger makingRoom = new AtomicInteger();
        final ReentrantLock turn = new ReentrantLock(true);
    }

    /**
     * Thrown by a create refused before any provider call (the cache closed, or the thread was
     * interrupted, while it waited for its device's turn): the create counts nothing, as
     * {@link CacheStats}' rules say; its cause is what the caller gets.
     */
    static final class Refused extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Refused(RuntimeException cause) {
            super(cause.getMessage(), cause, false, false);
        }

        RuntimeException reason() {
            return (RuntimeException) getCause();
        }
    }

    Reclaimer(EntryTables tables, StatsCounter stats, CacheEvents events, LongSupplier ticker,
              RetentionPolicy retention, BooleanSupplier cacheClosed) {
        this.tables = tables;
        this.idle = tables.idle;
        this.detached = tables.detached;
        this.stats = stats;
        this.events = events;
        this.ticker = ticker;
        this.retention = retention;
        this.cacheClosed = cacheClosed;
    }

    /**
     * The provider create; when it answers ENOMEM, destroys unreferenced AHs of the same device
     * (in any PD), invalidated ones first, then least recently used, and retries, holding the
     * device's turn so that no other create of this cache takes the slots freed (see the note
     * above), until the create succeeds or the cache holds no unreferenced AH of the device: only
     * then does the ENOMEM go to the caller. Never touches a referenced AH. Called with the fresh
     * entry's lock held; takes other entries' locks only with {@code tryLock}.
     *
     * @throws Refused if refused before any provider call (its reason is for the caller)
     */
    HardwareAddressHandle createEvictingOnEnomem(Entry e, AddressHandleAttributes attributes) {
        Device device = e.pd.device();
        Room room = enter(device);
        try {
            if (room.makingRoom.get() == 0) {
                try {
                    return e.pd.createAh(attributes);
                } catch (VerbsException ex) {
                    if (ex.errno() != Errno.ENOMEM) {
                        throw ex;
                    }
                    room.makingRoom.incrementAndGet();
                    try {
                        awaitTurn(room, e, true);
                        try {
                            return evictAndRetry(e, attributes, room, ex);
                        } finally {
                            room.turn.unlock();
                        }
                    } finally {
                        room.makingRoom.decrementAndGet();
                    }
                }
            }
            // Another create is making room: wait for it, so as not to take the slots it frees.
            awaitTurn(room, e, false);
            try {
                try {
                    return e.pd.createAh(attributes);
                } catch (VerbsException ex) {
                    if (ex.errno() != Errno.ENOMEM) {
                        throw ex;
                    }
                    room.makingRoom.incrementAndGet();
                    try {
                        return evictAndRetry(e, attributes, room, ex);
                    } finally {
                        room.makingRoom.decrementAndGet();
                    }
                }
            } finally {
                room.turn.unlock();
            }
        } finally {
            leave(device);
        }
    }

    /**
     * Holding the device's turn, after {@code enomem}: evicts (one AH for this create and one per
     * other create in progress on the device) and retries, each retry after an eviction, until
     * the create succeeds or no unreferenced AH of the device is left to evict (or those left
     * have been busy under their holders' locks for {@link #BUSY_WAIT_NANOS} in all).
     */
    private HardwareAddressHandle evictAndRetry(Entry e, AddressHandleAttributes attributes, Room room,
                                                VerbsException enomem) {
        assert room.turn.isHeldByCurrentThread();
        Device device = e.pd.device();
        boolean waitingForBusy = false;
        long busySince = 0;
        for (;;) {
            JfrEvents.AhEnomemEviction jfr = events.beginEviction();
            int wanted = Math.max(1, room.creates);
            long result = evictUnreferenced(device, wanted);
            int evicted = (int) result;
            events.evictedForEnomem(jfr, e, wanted, evicted);
            if (evicted > 0) {
                waitingForBusy = false;
                try {
                    return e.pd.createAh(attributes);
                } catch (VerbsException ex) {
                    if (ex.errno() != Errno.ENOMEM) {
                        throw ex;
                    }
                    enomem = ex;
                    continue;
                }
            }
            long now = System.nanoTime();
            if (!waitingForBusy) {
                waitingForBusy = true;
                busySince = now;
            }
            if ((result >>> 32) == 0 || now - busySince > BUSY_WAIT_NANOS) {
                throw enomem; // the cache holds no unreferenced AH of the device it can destroy
            }
            // Only busy victims: their holders revive, keep or destroy them, and wait for no turn.
            LockSupport.parkNanos(BUSY_PAUSE_NANOS);
            if (Thread.currentThread().isInterrupted()) {
                throw new InterruptedOperationException("create interrupted while making room at max_ah on "
                        + device.name() + " for the AH to " + e.dgid(), new InterruptedException());
            }
            if (cacheClosed.getAsBoolean()) {
                throw new IllegalStateException("address handle cache is closed");
            }
        }
    }

    /** Counts a create in progress on {@code device}: its room, made if the device has none. */
    private Room enter(Device device) {
        return rooms.compute(device, (d, r) -> {
            Room room = r == null ? new Room() : r;
            room.creates++;
            return room;
        });
    }

    private void leave(Device device) {
        rooms.computeIfPresent(device, (d, r) -> --r.creates == 0 ? null : r);
    }

    /**
     * Takes the device's turn, waiting in slices that look at the cache's close. A close or an
     * interrupt while waiting throws: {@link Refused} if the create has not called the provider
     * yet ({@code tried} false), else the reason itself (the create failed after its call).
     */
    private void awaitTurn(Room room, Entry e, boolean tried) {
        if (room.turn.tryLock()) {
            return;
        }
        RuntimeException reason;
        try {
            for (;;) {
                if (room.turn.tryLock(TURN_SLICE_MILLIS, TimeUnit.MILLISECONDS)) {
                    return;
                }
                if (cacheClosed.getAsBoolean()) {
                    reason = new IllegalStateException("address handle cache is closed");
                    break;
                }
            }
        } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
            reason = new InterruptedOperationException("acquire interrupted while waiting for another create to make "
                    + "room at max_ah on " + e.pd.device().name() + "; no reference was taken", ie);
        }
        throw tried ? reason : new Refused(reason);
    }

    /**
     * Destroys up to {@code wanted} unreferenced AHs of {@code device}: invalidated ones first,
     * then retained ones, least recently used first. Busy victims are skipped and stay listed.
     * Returns the AHs destroyed (low 32 bits) and the victims found busy (high 32 bits).
     */
    private long evictUnreferenced(Device device, int wanted) {
        int evicted = 0;
        int busy = 0;
        for (Entry d : detached) {
            // LIVE only: an entry invalidated while it is being created is in the set too, locked
            // by its creator, which may be waiting for this turn.
            if (evicted < wanted && d.pd.device() == device && d.state() == Entry.State.LIVE && d.references() == 0) {
                int r = evict(d);
                evicted += r > 0 ? 1 : 0;
                busy += r < 0 ? 1 : 0;
            }
        }
        // A walk, not a removal: a victim busy under its lock is passed over and stays listed; after
        // an eviction the walk goes on from the head (the victim left the list).
        Entry e = null;
        for (int steps = idle.size() + 2; evicted < wanted && steps > 0; steps--) {
            e = idle.after(e);
            if (e == null) {
                break;
            }
            if (e.pd.device() == device) {
                int r = evict(e);
                evicted += r > 0 ? 1 : 0;
                busy += r < 0 ? 1 : 0;
            }
        }
        return (long) busy << 32 | evicted;
    }

    /**
     * Destroys an unreferenced AH for an ENOMEM unless its lock is taken (then whoever holds it
     * revives or destroys it, and it stays listed meanwhile). Returns 1 if it destroyed it, -1 if
     * its lock was taken, 0 otherwise (gone, revived, or its destroy failed). An {@link Error}
     * from the destroy is thrown, after the victim is settled (kept, for a retry).
     */
    private int evict(Entry victim) {
        if (!victim.tryLock()) {
            return -1;
        }
        Throwable failure;
        try {
            if (victim.state() != Entry.State.LIVE || !victim.isUnreferenced()) {
                return 0; // gone, or revived meanwhile
            }
            failure = destroyLocked(victim, unreferencedCause(victim, RemovalCause.EVICTED_ENOMEM), false);
        } finally {
            victim.unlock();
        }
        if (failure instanceof Error error) {
            throw error;
        }
        return failure == null ? 1 : 0;
    }

    /** Destroys least recently used unreferenced AHs while more than the policy's bound are kept. */
    void trimToBound() {
        int max = retention.maxUnreferenced();
        // A walk, not a loop on the head: an entry busy under its lock is passed over (left to
        // its holder, the next release or the reaper), and the next one tried.
        Entry e = null;
        for (int attempts = idle.size() - max + 2; attempts > 0 && idle.size() > max; attempts--) {
            Entry next = idle.after(e);
            if (next == null && e != null) {
                next = idle.after(null); // e's destroy failed and put it last: on from the head
            }
            if (next == null) {
                return;
            }
            e = next;
            tryDestroyUnreferenced(e, RemovalCause.SIZE);
        }
    }

    /**
     * Destroys {@code e} if its lock is free and it is LIVE and unreferenced; never waits.
     * Returns whether it destroyed it. An {@link Error} from the provider is rethrown after the
     * entry is settled.
     */
    boolean tryDestroyUnreferenced(Entry e, RemovalCause cause) {
        if (!e.tryLock()) {
            return false;
        }
        Throwable failure = null;
        boolean tried = false;
        try {
            if (e.state() == Entry.State.LIVE && e.isUnreferenced()) {
                tried = true;
                failure = destroyLocked(e, unreferencedCause(e, cause), true);
            }
        } finally {
            e.unlock();
        }
        if (failure instanceof Error error) {
            throw error;
        }
        return tried && failure == null;
    }

    /**
     * Why an unreferenced entry goes: invalidated (marked stale, doomed on EFA, or freed with its
     * device) whatever the caller's reason, else the caller's.
     */
    static RemovalCause unreferencedCause(Entry e, RemovalCause otherwise) {
        return e.isStale() || e.isDoomed() || e.hardware().isDestroyed() ? RemovalCause.INVALIDATED : otherwise;
    }

    /**
     * With {@code e}'s lock held and {@code e} LIVE and unreferenced: whether it may not be handed
     * out again (invalidated, doomed on EFA, or freed with its device), so that it must be
     * destroyed rather than revived or kept.
     */
    static boolean mustGo(Entry e) {
        assert e.isHeldExclusively();
        return e.isStale() || e.isDoomed() || e.hardware().isDestroyed();
    }

    /**
     * With {@code e}'s lock held and {@code e} LIVE: destroys it if it is unreferenced and may not
     * be handed out again ({@link #mustGo}). Returns the destroy's failure, or null (also when
     * there was nothing to do).
     */
    Throwable settleLocked(Entry e) {
        assert e.isHeldExclusively();
        if (e.state() == Entry.State.LIVE && e.isUnreferenced() && mustGo(e)) {
            return destroyLocked(e, RemovalCause.INVALIDATED, false);
        }
        return null;
    }

    /**
     * At the close of its device (on the closing thread, after the entry was invalidated): destroys
     * the AH of an entry still referenced, which the device is about to free anyway, and retires
     * the entry, so that it no longer counts as live; its handles refuse use and their closes
     * find it DEAD. Never waits: an entry busy under its lock is left to the device (its holder
     * finds the AH destroyed).
     */
    void destroyUnderClosingDevice(Entry e) {
        if (!e.tryLock()) {
            return;
        }
        try {
            if (e.state() != Entry.State.LIVE) {
                return;
            }
            if (destroyHardware(e, RemovalCause.INVALIDATED) == null) {
                stats.recordDestroy(RemovalCause.INVALIDATED);
            } else {
                tables.hardwareGone(); // the device's close frees it right after
            }
            tables.retire(e); // the handles out still close, into nothing
        } finally {
            e.unlock();
        }
    }

    /**
     * Destroys the hardware AH of a LIVE, unreferenced entry whose lock the caller holds, and
     * retires the entry. Returns null on success, or the provider's failure (counted, logged
     * once per entry): the AH still exists, the entry stays LIVE and unreferenced, and goes
     * (back) to the idle list, unless invalidated or the cache closed, for a later retry.
     *
     * @param quiet whether a failure is only counted (eviction, reaper: logged, never thrown)
     */
    Throwable destroyLocked(Entry e, RemovalCause cause, boolean quiet) {
        assert e.isHeldExclusively();
        tables.leaveIdle(e);
        Throwable failure = destroyHardware(e, cause);
        if (failure != null) {
            tables.keepForRetry(e, ticker.getAsLong(), cacheClosed.getAsBoolean());
            if (quiet && failure instanceof Error) {
                LOG.error("destroy of {} threw; the AH is kept and will be retried", e.hardware(), failure);
            }
            return failure;
        }
        stats.recordDestroy(cause);
        tables.retire(e);
        return null;
    }

    /**
     * Destroys the entry's hardware AH with its lock held. Returns null on success (reported,
     * with {@code cause}, as a JFR event timing the destroy), or whatever the provider threw
     * (counted; the AH still exists).
     */
    Throwable destroyHardware(Entry e, RemovalCause cause) {
        assert e.isHeldExclusively();
        JfrEvents.AhDestroy jfr = events.beginDestroy();
        HardwareAddressHandle hw = e.hardware();
        if (!hw.isDestroyed()) {
            try {
                hw.destroy();
            } catch (Throwable t) {
                if (!hw.isDestroyed()) {
                    stats.recordDestroyFailure();
                    if (!e.destroyFailed) {
                        e.destroyFailed = true;
                        LOG.warn("destroy of {} failed ({}); the AH is kept and will be retried", hw, t.toString());
                    }
                    return t;
                }
                // The device was closed under the cache and destroyed the AH itself.
            }
        }
        tables.hardwareGone();
        events.destroyed(jfr, e, cause);
        return null;
    }

    /**
     * What {@link #destroyAll()} did: handles found still open (and on which entries, for the leak
     * report), and the destroys that failed.
     */
    record Teardown(long openHandles, Map<Entry, Long> withOpen, int failed, Throwable firstFailure) {
        /*
         * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
         * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
         * NoObjectMethodsTest). Same meaning and format as the generated ones.
         */
        @Override
        public boolean equals(Object o) {
            return o == this || o instanceof Teardown that && that.openHandles == openHandles
                    && Objects.equals(that.withOpen, withOpen) && that.failed == failed
                    && Objects.equals(that.firstFailure, firstFailure);
        }

        @Override
        public int hashCode() {
            int h = Long.hashCode(openHandles);
            h = 31 * h + Objects.hashCode(withOpen);
            h = 31 * h + failed;
            h = 31 * h + Objects.hashCode(firstFailure);
            return h;
        }

        @Override
        public String toString() {
            return new StringBuilder("Teardown[openHandles=").append(openHandles)
                    .append(", withOpen=").append(withOpen).append(", failed=").append(failed)
                    .append(", firstFailure=").append(firstFailure).append(']').toString();
        }
    }

    /**
     * At cache close, once the cache is marked closed: destroys every AH still LIVE, each with its
     * entry's lock held (so it waits for a create in progress, which sees the cache closed), and
     * forgets every entry. A failed destroy leaves that AH to its device's close. Handles the leak
     * detector already reported are not counted as open. Walks the tables, then the detached set,
     * until both are empty (see the class comment).
     */
    Teardown destroyAll() {
        long openHandles = 0;
        Map<Entry, Long> withOpen = new LinkedHashMap<>();
        int failed = 0;
        Throwable firstFailure = null;
        for (;;) {
            List<Entry> all = tables.snapshot();
            if (all.isEmpty()) {
                break;
            }
            for (Entry e : all) {
                e.lock();
                try {
                    if (e.state() == Entry.State.LIVE) {
                        tables.leaveIdle(e);
                        Throwable failure = destroyHardware(e, RemovalCause.CACHE_CLOSED);
                        if (failure == null) {
                            stats.recordDestroy(RemovalCause.CACHE_CLOSED);
                        } else {
                            failed++;
                            firstFailure = chain(firstFailure, failure);
                            tables.hardwareGone(); // handed to its device's close: no longer the cache's
                        }
                        // The open handles are the references in the word the retire took: one
                        // taken lock-free before it is a handle handed out (the cache looks at its
                        // closed flag before a lock-free retain, never after), one after it fails.
                        // References taken under this lock were refused or handed out before it.
                        long was = tables.retire(e);
                        long open = Math.max(0, Entry.referencesIn(was) - e.sealCollectedLeaks());
                        if (open > 0) {
                            openHandles += open;
                            withOpen.put(e, open);
                        }
                    }
                    tables.forgetEnded(e); // DEAD or FAILED now, whoever ended it
                } finally {
                    e.unlock();
                }
            }
        }
        tables.clear();
        return new Teardown(openHandles, withOpen, failed, firstFailure);
    }

    /** The first failure to throw, an {@link Error} before any exception, the rest suppressed. */
    private static Throwable chain(Throwable first, Throwable next) {
        if (first == null) {
            return next;
        }
        if (next instanceof Error && !(first instanceof Error)) {
            next.addSuppressed(first);
            return next;
        }
        first.addSuppressed(next);
        return first;
    }
}
