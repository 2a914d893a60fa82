package org.efaah.verbs;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReferenceArray;

/*
 * One PD's AHN generations: for each AHN, when a create in this PD last returned it. Kept by the
 * PD because every AH made in it is made by ProtectionDomain.createAh, whoever asks (a cache, a
 * second cache, a caller of createAh), so a reader of wc.slid (the AHN of the receiver PD's AH
 * for the sender, written by the device at arrival: efa_io_rx_cdesc.ah, copied by libefa's
 * efa_process_cqe) can tell whether the AH holding an AHN now held it when a mark was read.
 *
 * A slot is NEVER until a create returns its AHN, then ONCE (trusted for every mark: no AH of
 * this PD had that number before), then, at each later create returning it, GIVEN incremented:
 * a reuse after a destroy, or a kernel-cached duplicate of the live AH (the same hardware AH,
 * efa_create_ah's cache in Linux 7.3; stamped all the same, since the PD cannot tell the two
 * apart without serialising creates). Written before createAh returns the AH, so before any
 * cache indexes it, and before it can be destroyed and its number given again. A create that
 * fails may have made an AH the PD never saw (the stub destroys one whose efadv_query_ah
 * failed, reporting the failure as ibv_create_ah's): from then on no first create is trusted.
 * GIVEN is process-wide so that one mark serves every PD. Pages of 256 made on first use.
 */
final class AhnGenerations {
    /** Creates of an AHN stamped so far, in every PD: the marks readers compare with. */
    static final AtomicLong GIVEN = new AtomicLong();
    private static final long NEVER = 0;
    private static final long ONCE = -1;
    private static final int PAGE_BITS = 8;
    private static final int PAGE_SIZE = 1 << PAGE_BITS;

    private final AtomicReferenceArray<AtomicLongArray> pages = new AtomicReferenceArray<>((0xFFFF >>> PAGE_BITS) + 1);
    private volatile boolean blind;

    /** A create in this PD returned {@code ahn} (0..0xFFFE). */
    void given(int ahn) {
        int p = ahn >>> PAGE_BITS;
        AtomicLongArray page = pages.get(p);
        if (page == null) {
            pages.compareAndSet(p, null, new AtomicLongArray(PAGE_SIZE));
            page = pages.get(p);
        }
        int i = ahn & (PAGE_SIZE - 1);
        page.set(i, page.get(i) == NEVER && !blind ? ONCE : GIVEN.incrementAndGet());
    }

    /** A create in this PD failed: it may have made (and unmade) an AH with an AHN never reported. */
    void createFailed() {
        blind = true;
    }

    /** Whether no create in this PD returned {@code ahn} after {@code mark} was read (a first one excepted, see above). */
    boolean unchangedSince(int ahn, long mark) {
        if (ahn < 0 || ahn > 0xFFFF) {
            return false;
        }
        AtomicLongArray page = pages.get(ahn >>> PAGE_BITS);
        return page == null || page.get(ahn & (PAGE_SIZE - 1)) <= mark;
    }
}
