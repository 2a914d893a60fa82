package org.efaah.cache;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;

/**
 * The unreferenced AHs a cache keeps (retained, or kept for a retry after a failed destroy),
 * least recently used first: an intrusive doubly-linked list through
 * {@link Entry#idlePrev}/{@link Entry#idleNext}, in the order their last handle closed (the time
 * is stamped here, so the order and the times agree). One monitor guards it; adding and removing
 * are O(1), snapshots O(n).
 *
 * <p><b>Membership rule.</b> An entry joins and leaves the list only with its lock held
 * ({@code lastReleased} retaining it, a destroy, a failed destroy putting it back, a revival), so
 * a path that drains the list (the reaper, an ENOMEM eviction, the bound) only ever looks at a
 * snapshot of it ({@link #oldest}, {@link #idleSince}) and takes an entry off by destroying it
 * under its lock: an entry whose lock it cannot get stays listed, for its holder or the next
 * round. Every listed entry is LIVE and was unreferenced when listed; an invalidation (a
 * lock-free mark) may make a listed entry stale, and whoever destroys it then takes it off.
 * Outside the lock of an entry only {@link #size()} and snapshots read the list.
 */
final class IdleList {
    private Entry first;
    private Entry last;
    private int size;

    /** Appends {@code e} as the most recently used, stamped with {@code now}; no-op if present. */
    synchronized void addLast(Entry e, long now) {
        if (e.idle) {
            return;
        }
        e.idle = true;
        e.idleSince = now;
        e.idlePrev = last;
        e.idleNext = null;
        if (last == null) {
            first = e;
        } else {
            last.idleNext = e;
        }
        last = e;
        size++;
    }

    /** Removes {@code e}; returns whether it was there. */
    synchronized boolean remove(Entry e) {
        if (!e.idle) {
            return false;
        }
        Entry p = e.idlePrev;
        Entry n = e.idleNext;
        if (p == null) {
            first = n;
        } else {
            p.idleNext = n;
        }
        if (n == null) {
            last = p;
        } else {
            n.idlePrev = p;
        }
        e.idlePrev = null;
        e.idleNext = null;
        e.idle = false;
        size--;
        return true;
    }

    /**
     * The entry after {@code e}, or the least recently used one when {@code e} is null or no
     * longer listed; null past the end. For walks that must not allocate.
     */
    synchronized Entry after(Entry e) {
        return e == null || !e.idle ? first : e.idleNext;
    }

    /**
     * The entries whose idle time began at or before {@code before}, least recently used first
     * (a prefix of the list, since times are stamped in list order). A snapshot: the list is not
     * changed.
     */
    synchronized List<Entry> idleSince(long before) {
        List<Entry> found = new ArrayList<>();
        for (Entry e = first; e != null && e.idleSince - before <= 0; e = e.idleNext) {
            found.add(e);
        }
        return found;
    }

    /**
     * Up to {@code max} entries matching {@code filter}, least recently used first. A snapshot:
     * the list is not changed.
     */
    synchronized List<Entry> oldest(Predicate<Entry> filter, int max) {
        List<Entry> found = new ArrayList<>();
        for (Entry e = first; e != null && found.size() < max; e = e.idleNext) {
            if (filter.test(e)) {
                found.add(e);
            }
        }
        return found;
    }

    synchronized int size() {
        return size;
    }
}
