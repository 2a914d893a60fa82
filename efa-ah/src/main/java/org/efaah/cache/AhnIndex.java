package org.efaah.cache;

import java.util.Objects;
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
 * 768 KiB for a PD using every AHN): a put or remove is an array store, with no boxed key and no
 * map node, on every miss and every last release.
 */
/*
 * AHN reuse. The device writes wc.slid when the datagram arrives, and the endpoint reads it
 * later: an AHN found mapped at the read may belong to a newer AH than the one the device named
 * (the older destroyed, its number given again in between, by this cache or by anyone else
 * creating in the PD). The PD stamps each AHN when a create in it returns that number
 * (ProtectionDomain.ahnUnchangedSince), before the AH is returned, so before it is put here; a
 * caller holding a mark (ProtectionDomain.ahnMark, read at a moment before its AHN was written)
 * gets the entry only if the PD's stamp is not above the mark, read after the entry. Why that is
 * exact: a wrong answer needs an AH X of the PD with that AHN alive when the datagram arrived
 * (after the mark) and a newer Y found at the read; Y's create followed X's destroy, so Y's
 * stamp came after the mark: above it. An entry found with its stamp not above the mark was put
 * after the last create of its AHN before the mark, and that AH still holds it (an entry is
 * removed when its AH dies, under its lock, which a look-up of it waits for): it held the AHN
 * when the datagram arrived. An AH made outside the cache has no entry: its datagrams are
 * UNKNOWN. Nothing here is on the acquire hit path.
 */
final class AhnIndex {
    private static final int PAGE_BITS = 8;
    private static final int PAGE_SIZE = 1 << PAGE_BITS;
    private static final int PAGES = (0xFFFF >>> PAGE_BITS) + 1;

    private final ConcurrentHashMap<ProtectionDomain, AtomicReferenceArray<Page>> byPd = new ConcurrentHashMap<>();
    /** The PD looked up last, and its pages: most programs use one PD, whose creates and destroys then skip the map. */
    private volatile PdPages last;

    private record PdPages(ProtectionDomain pd, AtomicReferenceArray<Page> pages) {
        /*
         * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
         * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
         * NoObjectMethodsTest). Same meaning and format as the generated ones.
         */
        @Override
        public boolean equals(Object o) {
            return o == this || o instanceof PdPages that && Objects.equals(that.pd, pd)
                    && Objects.equals(that.pages, pages);
        }

        @Override
        public int hashCode() {
            int h = Objects.hashCode(pd);
            h = 31 * h + Objects.hashCode(pages);
            return h;
        }

        @Override
        public String toString() {
            return new StringBuilder("PdPages[pd=").append(pd).append(", pages=").append(pages)
                    .append(']').toString();
        }
    }

    /** 256 slots: the entry each AHN maps to. */
    private static final class Page {
        final AtomicReferenceArray<Entry> entries = new AtomicReferenceArray<>(PAGE_SIZE);
    }

    /** Records a LIVE entry; AHs without an AHN (non-EFA devices) are not indexed. */
    void put(Entry e, int ahn) {
        if (ahn == CreatedAh.NO_AHN) {
            return;
        }
        AtomicReferenceArray<Page> pages = pages(e.pd);
        if (pages == null) {
            pages = byPd.computeIfAbsent(e.pd, p -> new AtomicReferenceArray<>(PAGES));
            last = new PdPages(e.pd, pages);
        }
        int p = ahn >>> PAGE_BITS;
        Page page = pages.get(p);
        if (page == null) {
            pages.compareAndSet(p, null, new Page());
            page = pages.get(p);
        }
        page.entries.set(ahn & (PAGE_SIZE - 1), e);
    }

    /** Forgets a DEAD entry, unless its AHN has been mapped to another entry since. */
    void remove(Entry e, int ahn) {
        Page page = page(e.pd, ahn);
        if (page != null) {
            page.entries.compareAndSet(ahn & (PAGE_SIZE - 1), e, null);
        }
    }

    /** A mark for {@link #get}: {@link ProtectionDomain#ahnMark()}. */
    long reuseMark() {
        return ProtectionDomain.ahnMark();
    }

    /**
     * The entry mapped to (pd, ahn), or null, also when a create in the PD returned that AHN
     * after {@code mark} was read; it may be DEAD by the time the caller looks.
     */
    Entry get(ProtectionDomain pd, int ahn, long mark) {
        Page page = page(pd, ahn);
        if (page == null) {
            return null;
        }
        Entry e = page.entries.get(ahn & (PAGE_SIZE - 1));
        return e != null && pd.ahnUnchangedSince(ahn, mark) ? e : null; // the stamp after the entry: see the note
    }

    private Page page(ProtectionDomain pd, int ahn) {
        if (ahn < 0 || ahn > 0xFFFF) {
            return null;
        }
        AtomicReferenceArray<Page> pages = pages(pd);
        return pages == null ? null : pages.get(ahn >>> PAGE_BITS);
    }

    private AtomicReferenceArray<Page> pages(ProtectionDomain pd) {
        PdPages l = last;
        if (l != null && l.pd == pd) {
            return l.pages;
        }
        AtomicReferenceArray<Page> pages = byPd.get(pd);
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
