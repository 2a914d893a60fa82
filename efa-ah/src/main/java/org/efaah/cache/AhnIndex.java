package org.efaah.cache;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.efaah.verbs.spi.CreatedAh;
import org.efaah.verbs.ProtectionDomain;

/**
 * The reverse map of the cache on EFA: (PD, AHN) to the LIVE entry holding that AH, so that a
 * receive naming its sender by AHN ({@code wc.slid}) finds the AH without a device call, as
 * libfabric's EFA address vector does ({@code efa_av_reverse_lookup}). AHNs are 16-bit, unique
 * among a device's live AHs, and reused after destroy: an entry is put when it becomes LIVE and
 * removed (only if still the one mapped) when it becomes DEAD, both under the entry's lock, so a
 * reused AHN never maps to a destroyed AH for longer than that lock is held. Lock-free reads.
 *
 * <p>Per PD a table indexed by the AHN itself, in pages of 256 made on first use (at most
 * 256 KiB for a PD using every AHN): a put or remove is an array store, with no boxed key and no
 * map node, on every miss and every last release.
 */
final class AhnIndex {
    private static final int PAGE_BITS = 8;
    private static final int PAGE_SIZE = 1 << PAGE_BITS;
    private static final int PAGES = (0xFFFF >>> PAGE_BITS) + 1;

    private final ConcurrentHashMap<ProtectionDomain, AtomicReferenceArray<AtomicReferenceArray<Entry>>> byPd =
            new ConcurrentHashMap<>();
    /** The PD looked up last, and its pages: most programs use one PD, whose creates and destroys then skip the map. */
    private volatile PdPages last;

    private record PdPages(ProtectionDomain pd, AtomicReferenceArray<AtomicReferenceArray<Entry>> pages) {
    }

    /** Records a LIVE entry; AHs without an AHN (non-EFA devices) are not indexed. */
    void put(Entry e, int ahn) {
        if (ahn == CreatedAh.NO_AHN) {
            return;
        }
        AtomicReferenceArray<AtomicReferenceArray<Entry>> pages = pages(e.pd);
        if (pages == null) {
            pages = byPd.computeIfAbsent(e.pd, p -> new AtomicReferenceArray<>(PAGES));
            last = new PdPages(e.pd, pages);
        }
        int p = ahn >>> PAGE_BITS;
        AtomicReferenceArray<Entry> page = pages.get(p);
        if (page == null) {
            pages.compareAndSet(p, null, new AtomicReferenceArray<>(PAGE_SIZE));
            page = pages.get(p);
        }
        page.set(ahn & (PAGE_SIZE - 1), e);
    }

    /** Forgets a DEAD entry, unless its AHN has been mapped to another entry since. */
    void remove(Entry e, int ahn) {
        AtomicReferenceArray<Entry> page = page(e.pd, ahn);
        if (page != null) {
            page.compareAndSet(ahn & (PAGE_SIZE - 1), e, null);
        }
    }

    /** The entry mapped to (pd, ahn), or null; it may be DEAD by the time the caller looks. */
    Entry get(ProtectionDomain pd, int ahn) {
        AtomicReferenceArray<Entry> page = page(pd, ahn);
        return page == null ? null : page.get(ahn & (PAGE_SIZE - 1));
    }

    private AtomicReferenceArray<Entry> page(ProtectionDomain pd, int ahn) {
        if (ahn < 0 || ahn > 0xFFFF) {
            return null;
        }
        AtomicReferenceArray<AtomicReferenceArray<Entry>> pages = pages(pd);
        return pages == null ? null : pages.get(ahn >>> PAGE_BITS);
    }

    private AtomicReferenceArray<AtomicReferenceArray<Entry>> pages(ProtectionDomain pd) {
        PdPages l = last;
        if (l != null && l.pd == pd) {
            return l.pages;
        }
        AtomicReferenceArray<AtomicReferenceArray<Entry>> pages = byPd.get(pd);
        if (pages != null) {
            last = new PdPages(pd, pages);
        }
        return pages;
    }

    /**
     * Drops the tables of deallocated PDs: a PD is deallocated only once no AH of it exists, so
     * whatever its table still names is DEAD.
     */
    void forgetClosedPds() {
        last = null;
        byPd.keySet().removeIf(ProtectionDomain::isClosed);
    }

    /** Drops the tables of a device being closed, whose AHs are all gone with it. */
    void forget(org.efaah.verbs.Device device) {
        last = null;
        byPd.keySet().removeIf(pd -> pd.device() == device);
    }

    void clear() {
        last = null;
        byPd.clear();
    }
}
