package org.efaah.cache;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;

/**
 * The unreferenced AHs a cache keeps, least recently used first: an intrusive doubly-linked list
 * through {@link Entry#idlePrev}/{@link Entry#idleNext}, in the order their last handle closed
 * (the time is stamped here, so the order and the times agree). One monitor guards it; every
 * operation is O(1) but {@link #pollOldest}.
 *
 * <p>An entry is in the list while it is LIVE, unreferenced, not invalidated and the cache is
 * open; callers change membership with the entry's lock held.
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

    /** The least recently used entry whose idle time began at or before {@code before}, or null. */
    synchronized Entry firstIdleSince(long before) {
        Entry e = first;
        return e != null && e.idleSince - before <= 0 ? e : null;
    }

    /** The least recently used entry, or null. */
    synchronized Entry first() {
        return first;
    }

    /**
     * Removes and returns up to {@code max} entries matching {@code filter}, least recently used
     * first. The caller then owns their fate: it destroys them, or leaves them to whoever holds
     * their lock (a revival or a destroy), which never needs them in the list.
     */
    synchronized List<Entry> pollOldest(Predicate<Entry> filter, int max) {
        List<Entry> found = new ArrayList<>();
        Entry e = first;
        while (e != null && found.size() < max) {
            Entry next = e.idleNext;
            if (filter.test(e)) {
                remove(e);
                found.add(e);
            }
            e = next;
        }
        return found;
    }

    synchronized int size() {
        return size;
    }
}
