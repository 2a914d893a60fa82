package org.efaah.cache;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.efaah.verbs.Device;
import org.efaah.verbs.HardwareAddressHandle;
import org.efaah.verbs.ProtectionDomain;

/*
 * The cache's entry tables, and the only writer of their membership: the per-PD tables, the PD
 * looked up last, the detached set, the AHN index, the idle list and the live counts. Every
 * other class of the cache reads them (walks, look-ups) and moves entries only through the
 * methods below; the entry itself is the only writer of its state (Entry.markLive, markFailed,
 * retireLocked), which these methods call with its lock held.
 *
 * Design rules (each path that moves an entry, against each that snapshots or drains):
 *
 *  - Tables, detached set. An entry whose AH may exist (being created or LIVE) is in its PD's
 *    table or in the detached set: an invalidation adds it to the set before it takes it out of
 *    the table (detach), and only a retire (or a failed create) takes it out of the set. Close
 *    walks the tables, then the set, until both are empty. A DEAD or FAILED entry never stays
 *    in the set. An EFA entry doomed by an invalidation stays in its table (it is still the AH of
 *    its GID); if its destroy fails it is also in the set, for the retry: walks that list or
 *    count AHs take the set's entries only when stale, so each AH is seen once.
 *  - Idle list. An entry joins and leaves it only under its lock; the reaper, the bound and an
 *    ENOMEM eviction walk it and take an entry off only by destroying it under its lock,
 *    passing over a busy one (IdleList).
 *  - Retire. One sequence, here (retire): the entry turns DEAD (its word's hits to the
 *    counter), leaves the idle list, the AHN index, the detached set and its table, in that
 *    order, under its lock. The live count drops when its AH is destroyed, or handed to its
 *    device's close (a destroy that failed at the cache's close, or under a closing device):
 *    hardwareGone, once per AH. The cache's close counts as open handles the references in the
 *    word its retire returns, so a reference is never taken for a handle that may then be refused
 *    because the cache closed: a lock-free retain follows a look at the closed flag and is handed
 *    out; a retain under the entry's lock (a create, a revival) is refused under that lock.
 *  - Revival. Every look-up that finds an entry without a reference (acquire, acquireByAhn)
 *    takes its lock and then either takes a reference (as a hit, or reviving it from 0), or
 *    finishes what an invalidation or a device close left to the lock holder; never null for
 *    an AH that stays live. An AH its device freed is never revived.
 *  - Registrations. Device listeners and MXBeans are registered under the monitor that close
 *    takes to remove them, and refused once close began: a closed cache is reachable from no
 *    device and no MBean server. A device's close makes the tables forget its PDs (forget), so
 *    a closed device is reachable from no open cache either.
 *  - Locks. Invalidation, the reaper, eviction, the bound and the leak detector never wait for
 *    an entry lock; a lock holder that leaves an entry unreferenced and LIVE has retained it,
 *    or its destroy failed (kept for a retry). Every method here that needs the entry's lock
 *    asserts it (the tests run with -ea).
 */
final class EntryTables {
    private final ConcurrentHashMap<ProtectionDomain, PdTable> byPd = new ConcurrentHashMap<>();
    /** The table last made or looked up for a create: most programs use one PD, and this saves them a map look-up per hit. */
    private volatile PdTable last;
    /** Entries out of their table (invalidated) whose AH still exists: referenced, or its destroy failed. */
    final Set<Entry> detached = ConcurrentHashMap.newKeySet();
    final IdleList idle = new IdleList();
    final AhnIndex ahnIndex = new AhnIndex();
    private final AtomicLong live = new AtomicLong();
    private final AtomicLong peak = new AtomicLong();
    private final StatsCounter stats;

    /** A PD's entries by key, and its device's key policy, chosen once when the table is made. */
    record PdTable(ProtectionDomain pd, ConcurrentHashMap<Object, Entry> table, KeyPolicy keys) {
        /*
         * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
         * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
         * NoObjectMethodsTest). Same meaning and format as the generated ones.
         */
        @Override
        public boolean equals(Object o) {
            return o == this || o instanceof PdTable that && Objects.equals(that.pd, pd)
                    && Objects.equals(that.table, table) && Objects.equals(that.keys, keys);
        }

        @Override
        public int hashCode() {
            int h = Objects.hashCode(pd);
            h = 31 * h + Objects.hashCode(table);
            h = 31 * h + Objects.hashCode(keys);
            return h;
        }

        @Override
        public String toString() {
            return new StringBuilder("PdTable[pd=").append(pd).append(", table=").append(table)
                    .append(", keys=").append(keys).append(']').toString();
        }
    }

    EntryTables(StatsCounter stats) {
        this.stats = stats;
    }

    // ---- reads

    /** {@code pd}'s table with its key policy, or null; without a map look-up for the PD used last. */
    PdTable pdTable(ProtectionDomain pd) {
        PdTable l = last;
        return l != null && l.pd == pd ? l : byPd.get(pd);
    }

    /** {@code pd}'s table, or null. */
    ConcurrentHashMap<Object, Entry> tableIfPresent(ProtectionDomain pd) {
        PdTable t = pdTable(pd);
        return t == null ? null : t.table;
    }

    /** The tables with their PDs, for walks; read-only. */
    Collection<PdTable> tables() {
        return byPd.values();
    }

    long live() {
        return live.get();
    }

    long peak() {
        return peak.get();
    }

    // ---- membership

    /**
     * {@code pd}'s table, made if it has none (dropping first the empty tables of PDs deallocated
     * since, so they do not pile up), and remembered as the one used last.
     */
    PdTable tableFor(ProtectionDomain pd, Runnable beforeNewTable) {
        PdTable t = pdTable(pd);
        if (t == null) {
            byPd.values().removeIf(old -> old.table.isEmpty() && old.pd.isClosed());
            ahnIndex.forgetClosedPds();
            beforeNewTable.run();
            t = byPd.computeIfAbsent(pd, p -> new PdTable(p, new ConcurrentHashMap<>(), KeyPolicy.of(p.device())));
            if (pd.device().isClosed()) {
                // Its close may have forgotten the device before the put (isClosed waits for that
                // close): take the table out again; the create is refused on its own.
                byPd.remove(pd, t);
                return t;
            }
        }
        if (last != t) {
            last = t;
        }
        return t;
    }

    /** Puts a fresh entry, locked by the caller, unless the key has one: returns that one, or null. */
    Entry putIfAbsent(ConcurrentHashMap<Object, Entry> table, Entry fresh) {
        assert fresh.isHeldExclusively();
        return table.putIfAbsent(fresh.key, fresh);
    }

    /** The create succeeded: the entry turns LIVE, is counted and indexed by its AHN. */
    void markLive(Entry e, HardwareAddressHandle hw, long createdAt) {
        assert e.isHeldExclusively();
        ConcurrentStatsCounter.raiseTo(peak, live.incrementAndGet());
        e.markLive(hw, createdAt);
        ahnIndex.put(e, hw.ahn());
    }

    /** The create failed: the entry turns FAILED and leaves its table (and the set, if invalidated meanwhile). */
    void removeFailed(ConcurrentHashMap<Object, Entry> table, Entry e, Throwable cause) {
        assert e.isHeldExclusively();
        e.markFailed(cause);
        table.remove(e.key, e);
        detached.remove(e);
    }

    /**
     * An invalidated (stale) entry leaves its table for the detached set: into the set first, so
     * that a walk of the tables and then the set sees it. Needs no lock; an entry that ended
     * between its mark and the add is taken out of the set again.
     */
    void detach(ConcurrentHashMap<Object, Entry> table, Entry e) {
        detached.add(e);
        Entry.State s = e.state();
        if (s == Entry.State.DEAD || s == Entry.State.FAILED) {
            detached.remove(e);
        }
        table.remove(e.key, e);
    }

    /** An unreferenced LIVE entry kept, as retained (or for a destroy's retry), least recently used last. */
    void keepIdle(Entry e, long now) {
        assert e.isHeldExclusively();
        idle.addLast(e, now);
    }

    /** A revived (or destroyed) entry leaves the idle list. */
    void leaveIdle(Entry e) {
        assert e.isHeldExclusively();
        if (e.idle) { // read under e's lock, which every change of its membership holds
            idle.remove(e);
        }
    }

    /**
     * A destroy failed: the AH still exists, kept for a retry: an invalidated one (stale, or
     * doomed on EFA) in the detached set, which the reaper, eviction and close walk whatever its
     * age; any other idle, as retained, unless the cache is closing.
     */
    void keepForRetry(Entry e, long now, boolean closing) {
        assert e.isHeldExclusively();
        if (e.isStale() || e.isDoomed()) {
            detached.add(e);
        } else if (!closing) {
            idle.addLast(e, now);
        }
    }

    /** An entry's AH was destroyed, freed with its device, or left to its device's close: one fewer live. */
    void hardwareGone() {
        live.decrementAndGet();
    }

    /**
     * The one retire: see the class note. The AH is gone already ({@link #hardwareGone()}).
     * Returns the word the entry held (its references as the retire found them: no retain
     * succeeds after it).
     */
    long retire(Entry e) {
        assert e.isHeldExclusively();
        leaveIdle(e);
        long was = e.retireLocked();
        stats.recordHits(Entry.hitsOf(was)); // after the swap, before the entry leaves its table
        ahnIndex.remove(e, e.hardware().ahn());
        // Only an invalidated entry can be in the detached set (marked stale, which the swap sees
        // or forbids from now on; or doomed, whose failed destroy put it there under this lock):
        // others skip the look-up, which would also hash a fresh entry's identity.
        if (Entry.isStale(Entry.refsIn(was)) || e.isDoomed()) {
            detached.remove(e);
        }
        forgetInTable(e);
        return was;
    }

    /** An entry found ended (DEAD or FAILED) by close: out of the set and its table. */
    void forgetEnded(Entry e) {
        detached.remove(e);
        forgetInTable(e);
    }

    private void forgetInTable(Entry e) {
        ConcurrentHashMap<Object, Entry> table = tableIfPresent(e.pd);
        if (table != null) {
            table.remove(e.key, e);
        }
    }

    /** Every entry of the tables, then of the detached set (close's walk). */
    List<Entry> snapshot() {
        List<Entry> all = new ArrayList<>();
        for (PdTable t : byPd.values()) {
            all.addAll(t.table.values());
        }
        all.addAll(detached);
        return all;
    }

    /**
     * A device of the cache's is being closed, its AHs invalidated and destroyed: drops its PDs'
     * tables and AHN index, so that nothing of the cache keeps the closed device reachable.
     */
    void forget(Device device) {
        byPd.keySet().removeIf(pd -> pd.device() == device);
        PdTable l = last;
        if (l != null && l.pd.device() == device) {
            last = null;
        }
        ahnIndex.forget(device);
    }

    /** At close, once every entry ended. */
    void clear() {
        last = null;
        byPd.clear();
        ahnIndex.clear();
    }
}
