package org.efaah.cache;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;
import org.efaah.verbs.HardwareAddressHandle;

/**
 * {@link CacheInspection#entries}: walks the tables, then the invalidated entries still
 * referenced, reading each entry's volatile fields and its count once, without its lock.
 */
final class EntryListing {
    static final int MAX_LIMIT = 1_000_000;

    private EntryListing() {
    }

    static List<AddressHandleEntry> list(AddressHandleCache cache, Predicate<? super AddressHandleEntry> filter,
                                         int limit) {
        long now = cache.ticker.getAsLong();
        List<AddressHandleEntry> out = new ArrayList<>(Math.min(limit, 1024));
        for (EntryTables.PdTable t : cache.tables.tables()) {
            // Each PD's id and device are made once per table, not once per entry.
            String pdId = AddressHandleEntry.pdId(t.pd());
            String device = t.pd().device().name();
            for (Entry e : t.table().values()) {
                if (out.size() == limit) {
                    return out;
                }
                if (!e.isStale()) { // an invalidated entry is listed once, from the detached set
                    add(out, e, filter, device, pdId, now);
                }
            }
        }
        for (Entry e : cache.tables.detached) {
            if (out.size() == limit) {
                return out;
            }
            if (!e.isStale()) {
                continue; // still in its table, listed from there (EFA: doomed, its destroy failed)
            }
            String pdId = AddressHandleEntry.pdId(e.pd);
            add(out, e, filter, e.pd.device().name(), pdId, now);
        }
        return out;
    }

    private static void add(List<AddressHandleEntry> out, Entry e, Predicate<? super AddressHandleEntry> filter,
                            String device, String pdId, long now) {
        Entry.State state = e.state(); // volatile: createdAt and hardware were written before it turned LIVE
        if (state != Entry.State.LIVE && state != Entry.State.CREATING) {
            return; // failed or destroyed meanwhile
        }
        int refs = e.refs(); // one read: references and the invalidation mark agree
        if (refs <= Entry.GONE) {
            return;
        }
        boolean invalidated = refs < 0 || e.isDoomed(); // EFA: invalidated, yet still the AH of its GID
        int references = refs >= 0 ? refs : refs - Entry.STALE;
        HardwareAddressHandle hw = state == Entry.State.LIVE ? e.hardware() : null;
        long idleNanos = 0;
        if (references == 0 && e.idle) {
            idleNanos = Math.max(0, now - e.idleSince);
        }
        AddressHandleEntry row = new AddressHandleEntry(device, pdId, e.dgid(),
                e.portNum(), e.attributes().sgidIndex(), hw == null ? -1 : hw.ahn(), references, state.name(),
                hw == null ? 0 : Math.max(0, now - e.createdAt()), idleNanos, invalidated, e.destroyFailed,
                e.collectedLeaks());
        if (filter.test(row)) {
            out.add(row);
        }
    }
}
