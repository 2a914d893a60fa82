package org.efaah.cache;

import java.util.concurrent.ConcurrentHashMap;
import org.efaah.verbs.CreatedAh;
import org.efaah.verbs.ProtectionDomain;

/**
 * The reverse map of the cache on EFA: (PD, AHN) to the LIVE entry holding that AH, so that a
 * receive naming its sender by AHN ({@code wc.slid}) finds the AH without a device call, as
 * libfabric's EFA address vector does ({@code efa_av_reverse_lookup}). AHNs are 16-bit, unique
 * among a device's live AHs, and reused after destroy: an entry is put when it becomes LIVE and
 * removed (only if still the one mapped) when it becomes DEAD, both under the entry's lock, so a
 * reused AHN never maps to a destroyed AH for longer than that lock is held. Lock-free reads.
 */
final class AhnIndex {
    private final ConcurrentHashMap<ProtectionDomain, ConcurrentHashMap<Integer, Entry>> byPd = new ConcurrentHashMap<>();

    /** Records a LIVE entry; AHs without an AHN (non-EFA devices) are not indexed. */
    void put(Entry e, int ahn) {
        if (ahn != CreatedAh.NO_AHN) {
            byPd.computeIfAbsent(e.pd, p -> new ConcurrentHashMap<>()).put(ahn, e);
        }
    }

    /** Forgets a DEAD entry, unless its AHN has been mapped to another entry since. */
    void remove(Entry e, int ahn) {
        ConcurrentHashMap<Integer, Entry> table = byPd.get(e.pd);
        if (table != null && ahn != CreatedAh.NO_AHN) {
            table.remove(ahn, e);
            if (table.isEmpty() && e.pd.isClosed()) {
                byPd.remove(e.pd, table);
            }
        }
    }

    /** The entry mapped to (pd, ahn), or null; it may be DEAD by the time the caller looks. */
    Entry get(ProtectionDomain pd, int ahn) {
        ConcurrentHashMap<Integer, Entry> table = byPd.get(pd);
        return table == null ? null : table.get(ahn);
    }

    void clear() {
        byPd.clear();
    }
}
