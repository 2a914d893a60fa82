package org.efaah.cache;

import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.efaah.health.HealthReport;
import org.efaah.health.HealthThresholds;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.DeviceEvent;
import org.efaah.verbs.Gid;
import org.efaah.verbs.HardwareAddressHandle;
import org.efaah.verbs.InterruptedOperationException;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.VerbsException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A refcounted, deduplicating cache of Address Handles: every caller asks for its own
 * {@link AddressHandle}, and at most one hardware AH exists per key.
 *
 * <p><b>Key.</b> The PD object (identity, never its native address, which is reused after
 * {@code ibv_dealloc_pd}) plus what defines the hardware AH on the PD's device: on EFA the
 * destination GID alone, as the EFA driver keys its own AH table; elsewhere (mlx5, rxe) every
 * field of {@code struct ibv_ah_attr}. Requests on different PDs, or differing in a field that
 * matters, never share an AH. On EFA the AH is created from the key alone (dgid, port 1,
 * sgid_index 0, everything else at its default), so its attributes never depend on which
 * requester came first; EFA ignores the other fields.
 *
 * <p><b>Concurrency.</b> A hit takes no lock: a concurrent map read and an atomic increment of
 * the entry's reference count. A per-entry {@link java.util.concurrent.locks.ReentrantLock}
 * serialises the create and the destroy of one key, so a create never races a destroy of the same
 * destination: while key K is being destroyed, an acquire of K either revives the entry before
 * the destroy starts or waits for it to finish and creates anew. Different keys never wait for
 * each other. A thread waiting for another thread's create or destroy of its key stops waiting
 * when interrupted ({@link InterruptedOperationException}, interrupt status kept, no reference
 * taken) and when the cache closes ({@link IllegalStateException}). All methods are thread-safe.
 *
 * <p><b>Retention</b> ({@link RetentionPolicy}, default none). With retention, the last close of
 * an AH's handles keeps it, unreferenced, in an idle list (least recently used first); the next
 * acquire of its key takes it back without a provider call. A reaper thread destroys those idle
 * longer than the idle time (read from the {@linkplain Builder#ticker ticker}); beyond the bound
 * on unreferenced AHs the least recently used is destroyed at once. The reaper only ever takes an
 * entry lock with {@code tryLock}, and never touches a referenced AH: it cannot delay a hit, and a
 * revival that meets a destroy in progress waits for it and creates anew. It stops when the cache
 * closes.
 *
 * <p><b>ENOMEM.</b> When a create fails with ENOMEM (the device's max_ah), the cache destroys
 * unreferenced AHs of that device (in any of its PDs), invalidated ones first, then the least
 * recently used, and retries, each retry after an eviction, until the create succeeds: a slot
 * freed for a create is that create's, since the cache's other creates on the device wait
 * meanwhile. A referenced AH is never evicted; the caller gets the ENOMEM only when the cache
 * holds no unreferenced AH of the device (AHs made outside the cache, or by another cache, can
 * fill the device too), or when those it holds stay locked by other threads for 2 s (a stuck
 * provider call).
 *
 * <p><b>Invalidation.</b> {@link #invalidate}, {@link #invalidatePort}, {@link #invalidateAll},
 * the device's asynchronous events (GID_CHANGE, PORT_ERR and PORT_ACTIVE invalidate the
 * entries of that port; DEVICE_FATAL those of the device, whose later acquires then fail), and on
 * RoCE the network under the port ({@link org.efaah.roce.NetworkEvent}: a neighbour's new MAC or
 * deletion invalidates the AHs to it, a change of the netdev's MAC or MTU or its link going down
 * those of the port; on by default, off with {@code -Defaah.network.watch=false}). On IB and RoCE
 * (rxe, mlx5): an acquire that starts after the invalidation returns creates a fresh AH; handles
 * already out keep the old one until they close, and the last close destroys it. An invalidated
 * AH is never handed out again.
 *
 * <p><b>Invalidation on EFA</b> means something else, since nothing in an EFA AH can go stale
 * (the kernel's {@code efa_create_ah} takes the dgid alone) and the device holds one AH per (PD,
 * GID): it ends the AH's retention. An unreferenced AH is destroyed at once; a held one stays the
 * AH every acquire of its GID gets (also {@link #acquireByAhn}), and is destroyed at its last
 * close, however it was retained before; the next acquire after that creates a new one. No
 * acquire fails because of an invalidation. The EFA driver raises no asynchronous events at all
 * (its event queues carry completions only), so on real EFA only the calls invalidate; nothing
 * in this cache waits for an event. DEVICE_FATAL (never raised by EFA) and a device's close
 * invalidate as on IB and RoCE.
 *
 * <p><b>Device closed underneath.</b> A forced {@link Device#close()} frees every AH of the
 * device; the cache hears it first (a close listener) and invalidates them: none is handed out
 * again or counted as live, handles out refuse use, and acquires on its PDs fail with
 * {@link IllegalStateException}.
 *
 * <p><b>Failure.</b> When the provider's create fails with a {@link VerbsException}, the
 * acquiring caller and every caller waiting on the same key get its errno; the key is forgotten
 * and the next acquire tries again. Any other throwable (an {@link OutOfMemoryError} from native
 * allocation, a provider bug) reaches the acquiring caller as it is; waiters try the create
 * themselves. When a destroy fails, the AH (which still exists, as rdma-core frees it only on
 * success) stays cached, unreferenced: a later acquire reuses it, the reaper and {@link #close()}
 * try again; an {@link Error} from that destroy also reaches whoever caused it (the last
 * {@code close()} of a handle, an invalidation, the cache's close), after the cache is consistent.
 *
 * <p><b>Closing.</b> {@link #close()} destroys every hardware AH exactly once. Handles still open
 * are reported as leaks (a warning, and {@link CacheStats#leaksReported()}), and refuse use from
 * then on; closing them later is harmless. Handles garbage-collected without {@code close()}
 * are reported with their acquire site, per {@link LeakDetection}. A PD cannot be deallocated
 * while the cache holds AHs in it ({@code ibv_dealloc_pd} answers EBUSY): close the handles (and,
 * with retention, call {@link #invalidate(ProtectionDomain)}), or the cache, first. With
 * retention the reaper thread keeps the cache reachable: close it.
 *
 * <pre>{@code
 * try (AddressHandleCache cache = AddressHandleCache.create();
 *      AddressHandle ah = cache.acquire(pd, AddressHandleAttributes.forGid("fe80::1"))) {
 *     post(ah.nativeHandle(), ...);
 * }
 * }</pre>
 */
public final class AddressHandleCache implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(AddressHandleCache.class);
    /** How often a waiting acquire looks whether the cache was closed, ms. */
    private static final long WAIT_SLICE_MILLIS = 10;

    /** The entries, and the only writer of their membership; its note has the lifecycle rules. */
    final EntryTables tables;
    private final LeakTracker leaks;
    final StatsCounter stats;
    final LongSupplier ticker;
    final RetentionPolicy retention;
    private final boolean retains;
    /** The default {@link #ticker}, one object so that the cache can tell it apart. */
    private static final LongSupplier SYSTEM_TICKER = System::nanoTime;
    /** Whether {@link #ticker} is {@link #SYSTEM_TICKER}: then a create reads the clock twice, not three times. */
    private final boolean systemTicker;
    /** {@link EntryTables#idle} and {@link EntryTables#detached}, for the reaper's walks. */
    final IdleList idle;
    final Set<Entry> detached;
    // The concerns beside acquire and release: destroys, the retention bound, ENOMEM eviction and
    // close's teardown (Reclaimer); the idle reaper thread (Reaper); invalidation and device
    // events (Invalidator); MXBean names (MXBeanRegistrations).
    private final Invalidator invalidator;
    final NetworkInvalidation network = new NetworkInvalidation(this);
    final MXBeanRegistrations mxBeans = new MXBeanRegistrations();
    private final CacheInspection inspection = new CacheInspection(this);
    /** Listeners, recent failures and JFR events: each create, destroy, eviction and invalidation. */
    final CacheEvents events;
    final Reclaimer reclaimer;
    private final Reaper reaper;
    volatile boolean closed;
    /** The thread running the close, until it ends; guarded by this. */
    private Thread closer;
    /** Whether the close ended; guarded by this. */
    private boolean closeEnded;
    private final AtomicLong leaksAtClose = new AtomicLong();

    private AddressHandleCache(Builder b) {
        this.leaks = new LeakTracker(b.leakDetection, b.ticker);
        this.stats = b.recordStats ? StatsCounter.concurrent() : StatsCounter.disabled();
        this.tables = new EntryTables(stats);
        this.idle = tables.idle;
        this.detached = tables.detached;
        this.ticker = b.ticker;
        this.retention = b.retention;
        this.retains = retention.retains();
        this.systemTicker = ticker == SYSTEM_TICKER;
        this.events = new CacheEvents(ticker);
        this.reclaimer = new Reclaimer(tables, stats, events, ticker, retention, () -> closed);
        this.invalidator = new Invalidator(tables, reclaimer, stats, events, network::forget);
        this.reaper = new Reaper(this, reclaimer);
        reaper.start();
    }

    /**
     * A cache with leak detection from the system property {@value LeakDetection#PROPERTY}
     * (default sampled), no retention, statistics recorded.
     *
     * @return a new open cache; close it when done
     * @throws IllegalArgumentException if the system property names no level
     */
    public static AddressHandleCache create() {
        return builder().build();
    }

    /**
     * A builder for a cache with retention, a test clock or stats off.
     *
     * @return a new builder with the defaults
     * @throws IllegalArgumentException if the system property {@value LeakDetection#PROPERTY}
     *                                  names no level
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Returns a handle to the AH for {@code attributes} in {@code pd}, creating the hardware AH
     * ({@code ibv_create_ah(3)}) only when none exists for the key. Close the handle when done.
     * Thread-safe; a hit takes no lock.
     *
     * @param pd         the PD of the AH
     * @param attributes the AH attributes ({@code ibv_ah_attr}); on EFA only the dgid keys the AH
     * @return a new open handle to the AH
     *
     * @throws NullPointerException          if an argument is null
     * @throws IllegalArgumentException      if {@code port_num} or {@code sgid_index} is out of range
     *                                       for the device, or the device is EFA and the AH is not
     *                                       global; checked before any provider call
     * @throws IllegalStateException         if the cache (or the PD) is closed, or the device
     *                                       reported DEVICE_FATAL, or was closed while this call
     *                                       created the AH (the close freed it; nothing is counted live)
     * @throws InterruptedOperationException if interrupted while waiting for another thread's
     *                                       create or destroy of the same key, or for another
     *                                       create making room at max_ah on the device
     * @throws VerbsException                if the provider fails to create the AH (ENOMEM at max_ah
     *                                       with no unreferenced AH to evict, EINVAL, ETIME, ENODEV,
     *                                       ...); callers waiting on the same key get the same errno
     */
    public AddressHandle acquire(ProtectionDomain pd, AddressHandleAttributes attributes) {
        Objects.requireNonNull(pd, "pd");
        Objects.requireNonNull(attributes, "attributes");
        Device device = pd.device();
        // The hit, kept small so that the JIT inlines it into the caller (and then needs no heap
        // object for a handle used in place): attributes this device validated before, whose key
        // needs no resolving (its PD table's key policy says: the dgid on EFA; elsewhere a request
        // that names its sgid_index).
        // The one read of the closed flag comes before the reference is taken, never after: a
        // reference taken lock-free is handed out, so that close, which retires each entry's
        // word, counts as open exactly the handles given out (see handOut). Closed: the slow
        // path refuses.
        EntryTables.PdTable t = !closed && device.hasValidated(attributes) ? tables.pdTable(pd) : null;
        if (t != null) {
            Object key = t.keys().plainKey(attributes);
            Entry e = key == null ? null : t.table().get(key);
            long word = e == null ? -1 : e.tryRetainHit(); // the hit is counted in the entry's word
            if (word >= 0) {
                if (Entry.hitsDue(word)) {
                    stats.recordHits(e.takeHits());
                }
                // handOut's work, written out: the handle must be allocated in this method,
                // which callers inline; handOut, called from every path, may be compiled on its
                // own first and then not inlined here (seen: 32 B per hit in one JVM of four).
                LeakTracker.Watch watch = leaks.maybeTrack(e);
                return new AddressHandle(this, e, watch);
            }
            if (key != null && e == null) {
                // Checked already, no entry: create.
                return acquireSlow(pd, t.keys(), key, t.keys().createWith(device, attributes));
            }
        }
        return acquireChecked(pd, device, attributes);
    }

    /** An acquire whose attributes need resolving or checking first, or whose key is not a plain hit. */
    private AddressHandle acquireChecked(ProtectionDomain pd, Device device, AddressHandleAttributes attributes) {
        EntryTables.PdTable t = tables.pdTable(pd);
        KeyPolicy keys = t == null ? KeyPolicy.of(device) : t.keys();
        AddressHandleAttributes checked = keys.checked(device, attributes);
        Object key = keys.key(checked);
        checkOpen();
        Entry e = t == null ? null : t.table().get(key);
        if (e != null && e.tryRetain()) {
            return hit(e);
        }
        return acquireSlow(pd, keys, key, keys.createWith(device, checked));
    }

    /**
     * The mark {@link #acquireByAhn} takes: {@link ProtectionDomain#ahnMark()}, a count of the
     * creates, in any PD, that returned an AHN already given in their PD (by this cache or not). A
     * receiver reads it before it polls a receive CQ (and once before it makes its QP), so that it
     * knows which AHNs its completions may name ambiguously. A count that only grows, from 0, not
     * a time. One volatile read, no lock. Thread-safe.
     *
     * @return the count now, 0 or more
     */
    public long ahnReuseMark() {
        return tables.ahnIndex.reuseMark();
    }

    /**
     * Returns a handle to the live AH numbered {@code ahn} in {@code pd}, as a hit with no device
     * call, provided no create in {@code pd} returned that number since {@code ahnReuseMark}
     * was read; null when the cache holds no live AH with that number, or a create in the PD
     * returned the number again after the mark. That is how an EFA receiver turns {@code wc.slid} (the AHN of the receiver's
     * own AH for the sender, which the device writes when the datagram arrives) into the AH it
     * named then: with a mark read before the datagram arrived (say before a poll of the receive
     * CQ that then came back short, or before its QP was made), an AH found is the one the device
     * named, and a null says the sender cannot be told (the AH found now may be a newer
     * one than the device named, or none is left), never the wrong AH. Pass
     * {@link #ahnReuseMark()} read now for the AH that holds the number now. Exact for every AH
     * made in {@code pd}, also those made outside this cache ({@link ProtectionDomain#createAh},
     * another cache): the PD stamps each AHN a create in it returns
     * ({@link ProtectionDomain#ahnUnchangedSince}); an AH made outside this cache is never
     * returned (null).
     *
     * <p>AHN 0 is a valid number; {@code 0xFFFF} (EFA's "no AH") is never one. An AH that stays
     * live (and keeps its number past the mark) is always found, also while other threads revive
     * or release it; an invalidated AH is not, but on EFA a held one, which stays in use (see the
     * class comment). Close the handle when done. Thread-safe.
     *
     * @param pd           the PD the AH belongs to
     * @param ahn          the AH number ({@code efadv_query_ah}, efadv.h), 0..0xFFFE
     * @param ahnReuseMark a value {@link #ahnReuseMark()} returned, read before {@code ahn} was
     *                     written; 0 (older than any) refuses every number a create in the PD
     *                     returned again
     * @return a new open handle to that AH, or null if the cache holds no live AH with that
     *         number that has held it since the mark
     * @throws NullPointerException        if {@code pd} is null
     * @throws IllegalArgumentException    if {@code ahn} is outside 0..0xFFFE, or
     *                                     {@code ahnReuseMark} is negative or above
     *                                     {@link #ahnReuseMark()} now
     * @throws IllegalStateException       if the cache is closed, or the PD is (its device's close
     *                                     freed every AH of it)
     * @throws InterruptedOperationException if interrupted while waiting for a destroy of that AH
     */
    public AddressHandle acquireByAhn(ProtectionDomain pd, int ahn, long ahnReuseMark) {
        Objects.requireNonNull(pd, "pd");
        if (ahn < 0 || ahn >= 0xFFFF) {
            throw new IllegalArgumentException("ahn: " + ahn + " is out of range; valid 0..65534 (0xFFFF means none)");
        }
        long now = tables.ahnIndex.reuseMark();
        if (ahnReuseMark < 0 || ahnReuseMark > now) {
            throw new IllegalArgumentException("ahnReuseMark: " + ahnReuseMark + " is out of range; valid 0.." + now
                    + " (a value ahnReuseMark() returned)");
        }
        checkOpen();
        for (Entry seen = null; ; ) {
            Entry e = tables.ahnIndex.get(pd, ahn, ahnReuseMark);
            if (e == null || e == seen) {
                if (pd.isClosed()) {
                    throw new IllegalStateException("protection domain is closed: it holds no AH");
                }
                return null;
            }
            if (e.tryRetain()) {
                return hit(e);
            }
            lockToWait(e);
            int taken;
            try {
                taken = e.state() == Entry.State.LIVE ? retainLocked(e) : NOT_TAKEN;
                if (taken != NOT_TAKEN) {
                    refuseIfClosedLocked(e);
                }
            } finally {
                e.unlock();
            }
            if (taken != NOT_TAKEN) {
                return hitTaken(e, taken == REVIVED);
            }
            // Not to be handed out, or gone: the AHN may name a newer AH by now; look once more.
            seen = e;
        }
    }

    /**
     * With {@code e}'s lock held and {@code e} LIVE: takes a reference if its AH may still be
     * handed out (referenced, or unreferenced and revivable), the revival path every look-up
     * shares. Otherwise finishes what an invalidation or a device close left to the lock holder
     * (destroys it if unreferenced) and returns false. A doomed (EFA) entry's AH whose destroy
     * fails is revived instead: it still exists, and the device allows no other for its GID.
     * Counts nothing: the caller counts the hit (or revival) once the handle is not refused.
     *
     * @return {@link #NOT_TAKEN}, {@link #HELD} (a reference taken on a referenced entry) or
     *         {@link #REVIVED} (the first reference of an unreferenced one)
     */
    private int retainLocked(Entry e) {
        assert e.isHeldExclusively();
        if (e.hardware().isDestroyed()) {
            // Freed with its device (closed underneath): never handed out, whatever its count.
            long hits = e.markStale();
            if (hits > 0) {
                stats.recordHits(hits);
            }
            throwIfError(reclaimer.settleLocked(e));
            return NOT_TAKEN;
        }
        if (e.tryRetain()) {
            return HELD;
        }
        if (e.refs() == 0 && e.isDoomed()) {
            Throwable failure = reclaimer.settleLocked(e);
            throwIfError(failure);
            if (failure == null) {
                return NOT_TAKEN;
            }
        }
        if (e.reviveLocked()) {
            // Unreferenced but not destroyed: retained, or its destroy is yet to run (or failed).
            tables.leaveIdle(e);
            return REVIVED;
        }
        // Invalidated: finish an invalidation whose tryLock this thread's lock beat.
        throwIfError(reclaimer.settleLocked(e));
        return NOT_TAKEN;
    }

    private static final int NOT_TAKEN = 0;
    private static final int HELD = 1;
    private static final int REVIVED = 2;

    private static void throwIfError(Throwable failure) {
        if (failure instanceof Error error) {
            throw error;
        }
    }

    /** @param attributes what to create the AH with: {@code keys.createWith}, the key's attributes */
    private AddressHandle acquireSlow(ProtectionDomain pd, KeyPolicy keys, Object key,
                                      AddressHandleAttributes attributes) {
        leaks.report(); // a miss, holding no lock: where leaks the collector found are told
        for (;;) {
            checkOpen();
            invalidator.checkUsable(pd.device());
            ConcurrentHashMap<Object, Entry> table = tables.tableFor(pd, () -> {
                invalidator.listenTo(pd.device());
                network.listenTo(pd.device());
            }).table();
            // One map operation on a miss: the fresh entry goes in locked, so whoever finds it
            // waits for its create; when the key has an entry already, the fresh one is dropped.
            Entry fresh = new Entry(key, pd, keys);
            fresh.lock();
            Entry e;
            try {
                e = tables.putIfAbsent(table, fresh);
                if (e == null) {
                    create(table, fresh, attributes);
                    // Decided under the lock, which close takes after it sets the flag: the
                    // reference is either dropped here, before close can count it, or handed out
                    // and, if still open then, counted by close as the leak it is.
                    if (closed) {
                        throw releaseClosed(fresh);
                    }
                }
            } finally {
                fresh.unlock();
            }
            if (e == null) {
                refuseIfFreedByDeviceClose(fresh, "this acquire created");
                return handOut(fresh);
            }
            if (e.tryRetain()) {
                return hit(e);
            }
            lockToWait(e);
            int taken = NOT_TAKEN;
            try {
                switch (e.state()) {
                    case LIVE:
                        taken = retainLocked(e);
                        if (taken != NOT_TAKEN) {
                            refuseIfClosedLocked(e);
                            break;
                        }
                        if (e.state() == Entry.State.LIVE) {
                            tables.detach(table, e); // invalidated and still referenced: its holders release it
                        }
                        break;
                    case FAILED:
                        if (e.failure() instanceof VerbsException v) {
                            throw sameFailure(v);
                        }
                        break; // anything else: try the create ourselves
                    default:
                        // DEAD: destroyed and removed while we waited; look again and create anew.
                        break;
                }
            } finally {
                e.unlock();
            }
            if (taken != NOT_TAKEN) {
                return hitTaken(e, taken == REVIVED);
            }
        }
    }

    /*
     * A reference taken under an entry's lock while the entry's device was being closed (issue
     * 33, race 5.3): by a create, or by a look-up that revived the AH or joined its holders. The
     * close never waits for an entry lock (a creator holding one may be waiting for the device),
     * so its listener marks the entry stale and leaves it to the lock holder, whose AH the device
     * then frees. Checked once the lock is released: a device-close mark made before the release
     * is seen here (stale, and the device's isClosed waits for that close to end); one made after
     * it finds the lock free and retires the entry itself, the handle then being one taken before
     * the close, like any other held across it. A stale mark with the device open is an ordinary
     * invalidation after the reference was taken, which hands the AH out as before. Refused, the
     * reference is dropped and the entry retired as the close would have (other holders' handles,
     * from before the close, refuse use): nothing counts as live.
     */
    private void refuseIfFreedByDeviceClose(Entry e, String how) {
        if (e.isStale() && e.pd.device().isClosed()) {
            release(e); // the last reference retires the entry (its AH already freed)
            reclaimer.destroyUnderClosingDevice(e); // or, still referenced, as the close would have
            throw new IllegalStateException("device " + e.pd.device().name() + " was closed while " + how + " the AH to "
                    + e.dgid() + ": the close freed it; no reference was taken");
        }
    }

    /** Takes {@code e}'s lock, waiting only as long as the thread is not interrupted and the cache open. */
    private void lockToWait(Entry e) {
        if (e.tryLock()) {
            return;
        }
        try {
            while (!e.tryLock(WAIT_SLICE_MILLIS, TimeUnit.MILLISECONDS)) {
                checkOpen();
            }
        } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
            throw new InterruptedOperationException("acquire interrupted while waiting for another thread's create or "
                    + "destroy of the AH to " + e.dgid() + "; no reference was taken", ie);
        }
    }

    /** Creates the hardware AH for a fresh entry whose lock the caller holds. */
    private void create(ConcurrentHashMap<Object, Entry> table, Entry e, AddressHandleAttributes attributes) {
        assert e.isHeldExclusively();
        if (closed) {
            // Refused before any provider call: counts nothing (CacheStats' rules).
            fail(table, e, new IllegalStateException("address handle cache is closed"));
        }
        JfrEvents.AhCreate jfr = events.beginCreate();
        long start = System.nanoTime();
        HardwareAddressHandle hw;
        try {
            hw = reclaimer.createEvictingOnEnomem(e, attributes);
        } catch (Reclaimer.Refused r) {
            // Closed or interrupted while waiting for another create making room: no provider call.
            fail(table, e, r.reason());
            throw r; // not reached: fail throws the reason
        } catch (Throwable t) {
            stats.recordCreateFailure(t instanceof VerbsException v ? v.errno() : null);
            events.createFailed(jfr, e, t, System.nanoTime() - start);
            fail(table, e, t);
            throw t;
        }
        long end = System.nanoTime();
        long nanos = end - start;
        stats.recordCreate(nanos);
        tables.markLive(e, hw, systemTicker ? end : ticker.getAsLong());
        events.created(jfr, e, nanos);
        // Publishing the first reference lets lock-free hits in, so the entry must be LIVE first.
        // An add, not a set: an invalidation may have marked the entry while it was created.
        e.retainLocked();
        int invalidated = e.madeCounts(); // invalidated while made: counted now that the AH exists
        if (invalidated != Entry.NOT_COUNTED) {
            stats.recordInvalidated(1, invalidated == Entry.COUNTED_BY_NETWORK ? 1 : 0);
        }
    }

    private void fail(ConcurrentHashMap<Object, Entry> table, Entry e, Throwable cause) {
        tables.removeFailed(table, e, cause);
        if (cause instanceof RuntimeException r) {
            throw r;
        }
    }

    /** A fresh exception for a waiter, so each thread gets its own stack trace. */
    private static VerbsException sameFailure(VerbsException v) {
        VerbsException copy = new VerbsException(v.operation(), v.errnoValue(),
                "while waiting for another thread's create of the same AH");
        copy.initCause(v);
        return copy;
    }

    /**
     * A handle for a reference taken (a create's, or a hit's, counted by the caller); never
     * refused. Close counts as open handles the references it finds in each entry's word as it
     * retires it, so a reference must not be taken for a handle that may then be refused: a
     * lock-free retain is preceded by the caller's look at the closed flag (a reference taken
     * after that look is taken before close, and close either counts it or makes the retain
     * fail), and a reference taken under the entry's lock is refused, if at all, under that lock
     * ({@link #refuseIfClosedLocked}, {@link #acquireSlow}'s create), which close takes after setting the
     * flag.
     */
    private AddressHandle handOut(Entry e) {
        // The watch first: allocating the handle before a call that may deoptimise keeps C2
        // from scalar-replacing it (measured: 32 B per hit instead of 0 with detection off).
        LeakTracker.Watch watch = leaks.maybeTrack(e);
        return new AddressHandle(this, e, watch);
    }

    /** A handle for a reference just taken lock-free, after the caller saw the cache open: a hit. */
    private AddressHandle hit(Entry e) {
        stats.recordHit();
        return handOut(e);
    }

    /**
     * With {@code e}'s lock held, a reference just taken: refused here if the cache closed
     * meanwhile (close's count of {@code e} waits for the lock, so it never sees the reference).
     */
    private void refuseIfClosedLocked(Entry e) {
        assert e.isHeldExclusively();
        if (closed) {
            throw releaseClosed(e);
        }
    }

    /**
     * A handle for a reference taken under {@code e}'s lock, now released: refused if the
     * device's close freed the AH meanwhile, else counted as a hit (or a revival). A refused
     * acquire counts nothing (CacheStats' rules).
     */
    private AddressHandle hitTaken(Entry e, boolean revived) {
        refuseIfFreedByDeviceClose(e, "this acquire took");
        AddressHandle h = hit(e);
        if (revived) {
            stats.recordRevived(); // after its hit: revived is part of the hits (CacheStats)
        }
        return h;
    }

    /** Raced with close(), with the entry's lock held: the reference just taken must not outlive the cache. */
    private IllegalStateException releaseClosed(Entry e) {
        release(e);
        return new IllegalStateException("address handle cache is closed");
    }

    /**
     * A handle for a reference already taken on {@code e} ({@link AddressHandle#duplicate()}):
     * tracked for leaks like any other, since a user can drop it too.
     */
    AddressHandle adopt(Entry e) {
        return new AddressHandle(this, e, leaks.maybeTrack(e));
    }

    /** Drops one reference; keeps or destroys the AH when it was the last. Called once per handle. */
    void release(Entry e) {
        if (Entry.isUnreferenced(e.dropReference())) {
            lastReleased(e);
        }
    }

    private void lastReleased(Entry e) {
        boolean kept = false;
        Throwable failure = null;
        e.lock();
        try {
            if (e.state() != Entry.State.LIVE) {
                return; // already gone
            }
            if (!e.isUnreferenced()) {
                return; // revived meanwhile
            } else if (Reclaimer.mustGo(e)) {
                failure = reclaimer.destroyLocked(e, RemovalCause.INVALIDATED, false);
            } else if (retains && !closed) {
                tables.keepIdle(e, ticker.getAsLong());
                stats.recordRetained();
                kept = true;
            } else {
                failure = reclaimer.destroyLocked(e, closed ? RemovalCause.CACHE_CLOSED : RemovalCause.CLOSED, false);
            }
        } finally {
            e.unlock();
        }
        if (kept && (e.isStale() || e.isDoomed())) {
            // An invalidation marked it after our check and found the lock taken: finish it.
            reclaimer.tryDestroyUnreferenced(e, RemovalCause.INVALIDATED);
        }
        if (kept && idle.size() > retention.maxUnreferenced()) {
            reclaimer.trimToBound();
        }
        if (failure instanceof Error error) {
            throw error;
        }
    }

    /**
     * Destroys the retained AHs idle for longer than the policy's idle time, and retries the
     * destroys that failed, without waiting for any lock. The reaper thread calls this; tests with
     * a fake {@linkplain Builder#ticker ticker} may call it directly.
     *
     * @return how many AHs it destroyed
     */
    public int cleanUp() {
        return reaper.cleanUp();
    }

    /** Reports the leaks the collector found since the last look; where no lock is held. */
    void reportLeaks() {
        leaks.report();
    }

    /** Leaks reported within the last {@code windowNanos}, for health. */
    long leaksWithin(long windowNanos) {
        return leaks.within(windowNanos);
    }

    /** The reaper thread, null without retention; for tests. */
    Thread reaperThread() {
        return reaper.thread();
    }

    // ---- invalidation

    /**
     * Invalidates the AHs of {@code pd} to {@code dgid} (on IB/RoCE, every entry with that dgid,
     * whatever its other fields): the next acquire creates a fresh AH; handles already out keep
     * the old one until they close, and it is destroyed then. Use it when a neighbour's MAC or a
     * route to {@code dgid} changed. Never waits.
     *
     * @param pd   the PD whose AHs are invalidated
     * @param dgid the destination GID (16 bytes, network order)
     *
     * @return how many entries were invalidated
     */
    public int invalidate(ProtectionDomain pd, Gid dgid) {
        Objects.requireNonNull(pd, "pd");
        Objects.requireNonNull(dgid, "dgid");
        return invalidator.invalidateWhere("dgid " + dgid + " in " + AddressHandleEntry.pdId(pd),
                e -> e.pd == pd && dgid.equals(e.dgid()), false);
    }

    /**
     * Invalidates the AHs of {@code pd} to the GID written {@code dgid}, as {@link
     * #invalidate(ProtectionDomain, Gid)} does; the text form every other GID argument takes.
     *
     * @param pd   the PD whose AHs are invalidated
     * @param dgid the destination GID in IPv6 notation, e.g. {@code fe80::1} or {@code ::ffff:10.0.0.5}
     * @return how many entries were invalidated
     * @throws NullPointerException     if {@code pd} or {@code dgid} is null
     * @throws IllegalArgumentException if {@code dgid} is not a GID
     */
    public int invalidate(ProtectionDomain pd, String dgid) {
        Objects.requireNonNull(dgid, "dgid");
        return invalidate(pd, Gid.parse(dgid));
    }

    /**
     * Invalidates the AHs to {@code dgid} on port {@code portNum} of {@code device}, in every PD
     * (whatever their other fields): what a neighbour's new MAC, or its deletion, makes stale on
     * RoCE. The cache does it by itself on RoCE ports ({@link org.efaah.roce.RoceNetwork}). Never waits.
     *
     * @param device  the device
     * @param portNum the port number ({@code port_num}, from 1)
     * @param dgid    the destination GID
     *
     * @return how many entries were invalidated
     */
    public int invalidate(Device device, int portNum, Gid dgid) {
        Objects.requireNonNull(device, "device");
        Objects.requireNonNull(dgid, "dgid");
        return invalidator.invalidateWhere("dgid " + dgid + " on port " + portNum + " of " + device.name(),
                e -> e.pd.device() == device && e.portNum() == portNum
                && dgid.equals(e.dgid()), false);
    }

    /**
     * Invalidates every AH on port {@code portNum} of {@code device}, in every PD (as a GID table
     * change or a port state change does). Never waits.
     *
     * @param device  the device
     * @param portNum the port number ({@code port_num}, from 1); no entry matches a port that does not exist
     *
     * @return how many entries were invalidated
     */
    public int invalidatePort(Device device, int portNum) {
        Objects.requireNonNull(device, "device");
        return invalidator.invalidateWhere("port " + portNum + " of " + device.name(),
                e -> e.pd.device() == device && e.portNum() == portNum, false);
    }

    /**
     * Invalidates every AH of {@code pd}: with retention, what to call before deallocating the PD
     * ({@code ibv_dealloc_pd} answers EBUSY while an AH of it exists). Never waits.
     *
     * @param pd the PD whose AHs are invalidated
     *
     * @return how many entries were invalidated
     */
    public int invalidate(ProtectionDomain pd) {
        Objects.requireNonNull(pd, "pd");
        return invalidator.invalidateWhere(AddressHandleEntry.pdId(pd), e -> e.pd == pd, false);
    }

    /**
     * Invalidates every AH of the cache. Never waits.
     *
     * @return how many entries were invalidated
     */
    public int invalidateAll() {
        return invalidator.invalidateWhere("all", e -> true, false);
    }

    /**
     * What a change of the network under a RoCE port invalidates ({@link NetworkInvalidation}):
     * the AHs to {@code dgid} on the port in every PD, or with {@code dgid} null all of the port's;
     * counted in {@link CacheStats#networkInvalidated()} too. Never waits.
     */
    int invalidateByNetwork(Device device, int portNum, Gid dgid) {
        return invalidator.invalidateWhere((dgid == null ? "port " + portNum : "dgid " + dgid + " on port " + portNum)
                + " of " + device.name() + " (network)", e -> e.pd.device() == device && e.portNum() == portNum
                && (dgid == null || dgid.equals(e.dgid())), false, true);
    }

    /** The cache's listener on each device it has AHs on; tests call it to simulate an event. */
    void onDeviceEvent(DeviceEvent event) {
        invalidator.onDeviceEvent(event);
    }

    void checkOpen() {
        if (closed) {
            throw new IllegalStateException("address handle cache is closed");
        }
    }

    /**
     * Whether {@link #close()} was called. Thread-safe.
     *
     * @return true once the cache is closed (acquires are then refused)
     */
    public boolean isClosed() {
        return closed;
    }

    /**
     * A snapshot of the counters. Safe to call from any thread, also after close. O(entries): a
     * lock-free hit is counted in its entry (in the same atomic step that takes its reference, so
     * that it pays for no counter of its own), and the snapshot sums the entries, taking no
     * lock a hit or a create needs. While other threads work, a hit being
     * moved from its entry to the counter may be left out of one snapshot, never counted twice;
     * the hits reported never go down. Handles the collector found unclosed since the cache last
     * looked are counted and logged first (leak detection has no thread of its own).
     *
     * @return the counters now (all zero when built with {@code recordStats(false)}, leaks apart)
     */
    public CacheStats stats() {
        leaks.report();
        return stats.snapshot(leaks.reported.sum() + leaksAtClose.get(), this::pendingHits);
    }

    /**
     * The hits counted in the entries' words and not yet added to the statistics: an entry adds
     * its own when it is retired or invalidated (clearing its word first), so a snapshot that
     * reads the counter before the entries counts no hit twice.
     */
    private long pendingHits() {
        long n = 0;
        for (EntryTables.PdTable t : tables.tables()) {
            for (Entry e : t.table().values()) {
                n += e.pendingHits();
            }
        }
        return n;
    }

    /**
     * What the cache holds and how it is doing, for operators and tests: counts, the entries,
     * health, JMX and listeners ({@link CacheInspection}). Thread-safe; also after close.
     *
     * @return the cache's inspection facet, the same object each call
     */
    public CacheInspection inspection() {
        return inspection;
    }

    /**
     * Destroys every hardware AH the cache holds, exactly once, stops the reaper, stops listening
     * to device events, and refuses further acquires. Handles still open are counted and logged as
     * leaks; they refuse use afterwards. Waits for creates in progress. Idempotent: a close while
     * another thread's runs waits for it to end (returning early, interrupt status kept, if
     * interrupted).
     *
     * @throws VerbsException if some AH could not be destroyed (after trying all of them); that
     *                        AH still exists and is left to its device's {@code close()}
     * @throws Error          if the provider threw one while destroying (after trying all)
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                awaitCloseEnded();
                return;
            }
            closed = true; // under this monitor, which CacheInspection.addListener takes to decide
            closer = Thread.currentThread();
        }
        try {
            closeOnce();
        } finally {
            synchronized (this) {
                closer = null;
                closeEnded = true;
                notifyAll();
            }
        }
    }

    /**
     * A close while another runs: waits for it (its thread excepted, re-entering from a listener
     * or a provider), so that what follows a close (a PD's deallocation) finds every AH gone.
     * Holds the monitor only while parked in {@code wait}, which releases it.
     */
    private void awaitCloseEnded() {
        assert Thread.holdsLock(this);
        while (!closeEnded && closer != Thread.currentThread()) {
            try {
                wait();
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    private void closeOnce() {
        reaper.wake();
        // Each refuses registrations from now on, under the monitor its registrations take.
        invalidator.stopListening();
        network.stopListening();
        mxBeans.unregisterAll();
        leaks.beforeClose(); // handles the collector found are reported as such, not as open
        Reclaimer.Teardown teardown = reclaimer.destroyAll();
        long openHandles = teardown.openHandles();
        if (openHandles > 0) {
            leaksAtClose.addAndGet(openHandles);
        }
        leaks.afterClose(openHandles, teardown.withOpen());
        reaper.await();
        events.closed();
        Throwable firstFailure = teardown.firstFailure();
        if (firstFailure != null) {
            LOG.error("{} AH(s) could not be destroyed at cache close", teardown.failed());
            if (firstFailure instanceof Error error) {
                throw error;
            }
            throw (RuntimeException) firstFailure;
        }
    }

    /**
     * Builds an {@link AddressHandleCache}. Defaults: leak detection from the system property
     * {@value LeakDetection#PROPERTY}, {@link RetentionPolicy#none()}, {@link System#nanoTime()} as ticker,
     * statistics recorded. Not thread-safe.
     */
    public static final class Builder {
        private LeakDetection leakDetection = LeakDetection.fromSystemProperty();
        private RetentionPolicy retention = RetentionPolicy.none();
        private LongSupplier ticker = SYSTEM_TICKER;
        private boolean recordStats = true;

        private Builder() {
        }

        /**
         * How closely handles are tracked for leaks.
         *
         * @param leakDetection the level, not null
         * @return this builder
         */
        public Builder leakDetection(LeakDetection leakDetection) {
            this.leakDetection = Objects.requireNonNull(leakDetection, "leakDetection");
            return this;
        }

        /**
         * How long AHs are kept after their last handle closes.
         *
         * @param retention the policy, not null (default {@link RetentionPolicy#none()})
         * @return this builder
         */
        public Builder retention(RetentionPolicy retention) {
            this.retention = Objects.requireNonNull(retention, "retention");
            return this;
        }

        /**
         * The clock of retention (idle times), of the create-failure window and of the listing's
         * ages, read as {@link System#nanoTime()} is: nanoseconds from an arbitrary fixed origin,
         * only differences meaningful. Called from any thread, so thread-safe; read when the last
         * handle of an AH closes, on a create and by the reaper, never on an acquire that hits.
         * Tests pass a fake one, e.g. {@code AtomicLong::get}, and move time by hand.
         *
         * @param ticker the clock, ns, not null (default {@code System::nanoTime})
         * @return this builder
         */
        public Builder ticker(LongSupplier ticker) {
            this.ticker = Objects.requireNonNull(ticker, "ticker");
            return this;
        }

        /**
         * Whether {@link AddressHandleCache#stats()} counts (default true); off, it reports zeros.
         *
         * @param recordStats false to spare the hit path its counter
         * @return this builder
         */
        public Builder recordStats(boolean recordStats) {
            this.recordStats = recordStats;
            return this;
        }

        /**
         * Builds the cache and starts its reaper thread when the policy retains AHs.
         *
         * @return a new open cache; close it when done
         */
        public AddressHandleCache build() {
            return new AddressHandleCache(this);
        }
    }
}
