package org.efaah.cache;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.efaah.verbs.Device;
import org.efaah.verbs.Errno;
import org.efaah.verbs.HardwareAddressHandle;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.VerbsException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The destroy side of a cache: destroying an unreferenced AH and retiring its entry, keeping the
 * unreferenced AHs under the retention bound, evicting them when a create answers ENOMEM, and
 * destroying everything at close ({@link Reaper} destroys those idle too long). It works on the
 * cache's tables, idle list and detached set; the cache decides when an AH is retained or
 * destroyed ({@code lastReleased}, {@code close}).
 *
 * <p>Locks: {@link #destroyLocked} and {@link #destroyHardware} run with the entry's lock held by
 * the caller; {@link #destroyAll} (cache close only) takes each entry's lock, waiting for a create
 * in progress to end. Everything else here takes entry locks only with {@code tryLock} (a busy
 * entry is being revived or destroyed by its holder, and is left to it), so eviction and the
 * bound never wait and never delay a hit; the idle list's monitor is taken inside an entry lock,
 * never the other way round. A referenced AH is never touched but at close.
 */
final class Reclaimer {
    private static final Logger LOG = LoggerFactory.getLogger(AddressHandleCache.class);
    /**
     * Most retries of one create after ENOMEM evictions. libfabric retries once; here other
     * threads' creates can take the slots freed between an eviction and the retry, so a create
     * may retry a few times, each time only after evicting at least one AH. Measured with
     * EnomemEvictionTest (8 threads, max_ah 64, 1,000 peers, 20,000 acquires): one retry let 17
     * to 41 ENOMEMs reach callers while unreferenced AHs existed; four let none.
     */
    private static final int ENOMEM_RETRIES = 4;

    private final AddressHandleCache cache;
    private final ConcurrentHashMap<ProtectionDomain, ConcurrentHashMap<Object, Entry>> tables;
    private final IdleList idle;
    private final Set<Entry> detached;
    private final StatsCounter stats;
    private final AhnIndex ahnIndex;
    private final AtomicLong liveEntries;
    private final Ticker ticker;
    private final RetentionPolicy retention;
    private final AtomicInteger createsInFlight = new AtomicInteger();

    Reclaimer(AddressHandleCache cache) {
        this.cache = cache;
        this.tables = cache.tables;
        this.idle = cache.idle;
        this.detached = cache.detached;
        this.stats = cache.stats;
        this.ahnIndex = cache.ahnIndex;
        this.liveEntries = cache.liveEntries;
        this.ticker = cache.ticker;
        this.retention = cache.retention;
    }

    /**
     * The provider create; when it answers ENOMEM, destroys unreferenced AHs of the same device,
     * least recently used first (one, plus one per other create in flight, which could take the
     * freed slot), and retries, at most {@value #ENOMEM_RETRIES} times and only after an eviction
     * succeeded. With no unreferenced AH of the device, the ENOMEM goes to the caller. Never
     * touches a referenced AH. Called with the fresh entry's lock held; takes other entries' locks
     * only with {@code tryLock}.
     */
    HardwareAddressHandle createEvictingOnEnomem(Entry e) {
        createsInFlight.incrementAndGet();
        try {
            for (int retry = 0; ; retry++) {
                try {
                    return e.pd.createAh(e.attributes);
                } catch (VerbsException ex) {
                    if (ex.errno() != Errno.ENOMEM || retry == ENOMEM_RETRIES) {
                        throw ex;
                    }
                    int wanted = createsInFlight.get();
                    int evicted = evictUnreferenced(e.pd.device(), wanted);
                    cache.events.evictedForEnomem(e, wanted, evicted);
                    if (evicted == 0) {
                        throw ex;
                    }
                }
            }
        } finally {
            createsInFlight.decrementAndGet();
        }
    }

    /**
     * Destroys up to {@code wanted} unreferenced AHs of {@code device}: invalidated ones first,
     * then retained ones, least recently used first. Victims are taken off the idle list before
     * their lock is tried, so concurrent evictions never fight over the same AHs.
     */
    private int evictUnreferenced(Device device, int wanted) {
        int evicted = 0;
        for (Entry d : detached) {
            if (evicted < wanted && d.pd.device() == device && d.references() == 0 && evict(d)) {
                evicted++;
            }
        }
        for (int budget = idle.size(); evicted < wanted && budget > 0; ) {
            List<Entry> victims = idle.pollOldest(x -> x.pd.device() == device, wanted - evicted);
            if (victims.isEmpty()) {
                break;
            }
            budget -= victims.size();
            for (Entry victim : victims) {
                if (evict(victim)) {
                    evicted++;
                }
            }
        }
        return evicted;
    }

    /**
     * Destroys an unreferenced AH for an ENOMEM unless its lock is taken (then whoever holds it
     * revives or destroys it). An {@link Error} from the destroy is thrown, after the victim is
     * settled (kept, for a retry).
     */
    private boolean evict(Entry victim) {
        if (!victim.lock.tryLock()) {
            return false;
        }
        Throwable failure = null;
        try {
            if (victim.state != Entry.State.LIVE) {
                return false;
            }
            int r = victim.refs();
            if (r == 0) {
                failure = destroyLocked(victim, RemovalCause.EVICTED_ENOMEM, false);
            } else if (r == Entry.STALE) {
                failure = destroyLocked(victim, RemovalCause.INVALIDATED, false);
            } else {
                return false; // revived meanwhile
            }
        } finally {
            victim.lock.unlock();
        }
        if (failure instanceof Error error) {
            throw error;
        }
        return failure == null;
    }

    /** Destroys least recently used unreferenced AHs while more than the policy's bound are kept. */
    void trimToBound() {
        int attempts = 4; // entries busy under their lock are left to the next release or the reaper
        while (idle.size() > retention.maxUnreferenced() && attempts-- > 0) {
            Entry oldest = idle.first();
            if (oldest == null) {
                return;
            }
            tryDestroyUnreferenced(oldest, RemovalCause.SIZE);
        }
    }

    /**
     * Destroys {@code e} if its lock is free and it is LIVE and unreferenced; never waits.
     * Returns whether it destroyed it. An {@link Error} from the provider is rethrown after the
     * entry is settled.
     */
    boolean tryDestroyUnreferenced(Entry e, RemovalCause cause) {
        if (!e.lock.tryLock()) {
            return false;
        }
        Throwable failure = null;
        boolean tried = false;
        try {
            if (e.state == Entry.State.LIVE) {
                if (e.refs() == 0) {
                    tried = true;
                    failure = destroyLocked(e, cause, true);
                } else if (e.refs() == Entry.STALE) {
                    tried = true;
                    failure = destroyLocked(e, RemovalCause.INVALIDATED, true);
                }
            }
        } finally {
            e.lock.unlock();
        }
        if (failure instanceof Error error) {
            throw error;
        }
        return tried && failure == null;
    }

    /** With {@code e}'s lock held: destroys it if invalidated and unreferenced. */
    void destroyIfStaleAndUnreferenced(Entry e) {
        if (e.state == Entry.State.LIVE && e.refs() == Entry.STALE) {
            Throwable failure = destroyLocked(e, RemovalCause.INVALIDATED, false);
            if (failure instanceof Error error) {
                throw error;
            }
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
        idle.remove(e);
        Throwable failure = destroyHardware(e);
        if (failure != null) {
            if (!e.isStale() && !cache.closed) {
                idle.addLast(e, ticker.read());
            }
            if (quiet && failure instanceof Error) {
                LOG.error("destroy of {} threw; the AH is kept and will be retried", e.hardware, failure);
            }
            return failure;
        }
        stats.recordDestroy(cause);
        cache.events.destroyed(e, cause);
        e.setRefs(Entry.GONE);
        e.state = Entry.State.DEAD;
        ahnIndex.remove(e, e.hardware.ahn());
        detached.remove(e);
        ConcurrentHashMap<Object, Entry> table = tables.get(e.pd);
        if (table != null) {
            table.remove(e.key, e);
        }
        return null;
    }

    /**
     * Destroys the entry's hardware AH with its lock held. Returns null on success, or whatever
     * the provider threw (counted; the AH still exists).
     */
    Throwable destroyHardware(Entry e) {
        HardwareAddressHandle hw = e.hardware;
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
        liveEntries.decrementAndGet();
        return null;
    }

    /** What {@link #destroyAll()} did: handles found still open, and the destroys that failed. */
    record Teardown(long openHandles, int failed, Throwable firstFailure) {
    }

    /**
     * At cache close, once the cache is marked closed: destroys every AH still LIVE, each with its
     * entry's lock held (so it waits for a create in progress, which sees the cache closed), and
     * forgets every entry. A failed destroy leaves that AH to its device's close. Handles the leak
     * detector already reported are not counted as open.
     */
    Teardown destroyAll() {
        long openHandles = 0;
        int failed = 0;
        Throwable firstFailure = null;
        List<Entry> all = new ArrayList<>(detached);
        for (ConcurrentHashMap<Object, Entry> table : tables.values()) {
            all.addAll(table.values());
        }
        for (Entry e : all) {
            e.lock.lock();
            try {
                if (e.state != Entry.State.LIVE) {
                    continue;
                }
                openHandles += Math.max(0, e.references() - e.collectedLeaks);
                idle.remove(e);
                Throwable failure = destroyHardware(e);
                if (failure == null) {
                    stats.recordDestroy(RemovalCause.CACHE_CLOSED);
                    cache.events.destroyed(e, RemovalCause.CACHE_CLOSED);
                } else {
                    failed++;
                    firstFailure = chain(firstFailure, failure);
                }
                e.setRefs(Entry.GONE);
                e.state = Entry.State.DEAD;
                ahnIndex.remove(e, e.hardware.ahn());
            } finally {
                e.lock.unlock();
            }
        }
        tables.clear();
        detached.clear();
        ahnIndex.clear();
        return new Teardown(openHandles, failed, firstFailure);
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
