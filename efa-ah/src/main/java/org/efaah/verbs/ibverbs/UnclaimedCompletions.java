package org.efaah.verbs.ibverbs;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.HashMap;
import java.util.Map;
import org.efaah.verbs.WorkCompletion;

/*
 * Completions a poll took off a CQ and could not hand out because a holder they were to fill was
 * null (a caller's bug): kept per CQ handle, and handed out first by the next poll of that CQ, by
 * any thread, so that the NullPointerException loses none of them. The poll stubs take completions
 * before Java sees which holders they fill; checking all 64 holders before every poll instead cost
 * 7 to 8 ns a poll (docs/benchmarks.md, "Own code by profile"), and most polls of a waiting thread
 * find the CQ empty and fill none.
 *
 * Only that bug's path takes the lock; a poll reads one volatile int (keptCqs) to learn that nothing
 * is kept. A CQ's kept completions go with it at ibv_destroy_cq, as the completions still queued in
 * it do. They are taken out before the destroy (and put back if it fails), not after it: once the
 * CQ is freed, the next CQ made may get its handle, and a poll of that one must not get them.
 */
final class UnclaimedCompletions {
    private static final Object LOCK = new Object();
    private static final Map<Long, Kept> KEPT = new HashMap<>();
    /** KEPT's size, written under LOCK. */
    private static volatile int keptCqs;

    private UnclaimedCompletions() {
    }

    /** Completion records (and, from an EFA CQ, the senders' GIDs) in the stub's layout, in CQ order. */
    private static final class Kept {
        ByteBuffer records;
        ByteBuffer sgids;
        int count;
        int next;
    }

    /** {@return whether completions are kept for some CQ} Read by every poll before its native call. */
    static boolean any() {
        return keptCqs != 0;
    }

    /** The index of the first null among {@code into[0..n)}, or -1. */
    static int firstNull(WorkCompletion[] into, int n) {
        for (int i = 0; i < n; i++) {
            if (into[i] == null) {
                return i;
            }
        }
        return -1;
    }

    /**
     * Keeps the {@code n} completions a poll of {@code cq} took ({@code sgids} null for a CQ that
     * reports no GIDs) and returns the exception to throw for the null holder at {@code hole}.
     */
    static NullPointerException keep(long cq, ByteBuffer records, ByteBuffer sgids, int n, int hole) {
        int recordBytes = NativeVerbs.CQE_WORDS * Long.BYTES;
        synchronized (LOCK) {
            Kept k = KEPT.get(cq);
            int before = k == null ? 0 : k.count - k.next;
            Kept grown = new Kept();
            grown.records = ByteBuffer.allocateDirect((before + n) * recordBytes).order(ByteOrder.nativeOrder());
            grown.sgids = ByteBuffer.allocateDirect((before + n) * 16);
            if (k != null) {
                grown.records.put(0, k.records, k.next * recordBytes, before * recordBytes);
                grown.sgids.put(0, k.sgids, k.next * 16, before * 16);
            }
            grown.records.put(before * recordBytes, records, 0, n * recordBytes);
            if (sgids != null) {
                grown.sgids.put(before * 16, sgids, 0, n * 16);
            }
            grown.count = before + n;
            KEPT.put(cq, grown);
            keptCqs = KEPT.size();
        }
        return new NullPointerException("into[" + hole + "]");
    }

    /**
     * Hands out up to {@code capacity} of the completions kept for {@code cq} into the holders,
     * as the poll that took them would have ({@code withSourceGid}: the EFA CQ's, which also says
     * whether each carries the sender's GID); -1 when none is kept for it (then the caller polls).
     *
     * @throws NullPointerException if a holder to be filled is null; the completions stay kept
     */
    static int handOut(long cq, WorkCompletion[] into, int capacity, boolean withSourceGid) {
        synchronized (LOCK) {
            Kept k = KEPT.get(cq);
            if (k == null) {
                return -1;
            }
            int m = Math.min(capacity, k.count - k.next);
            int hole = firstNull(into, m);
            if (hole >= 0) {
                throw new NullPointerException("into[" + hole + "]");
            }
            for (int i = 0; i < m; i++) {
                WorkCompletion wc = into[i];
                boolean sgid = NativeVerbsProvider.readRecord(k.records, k.next + i, wc);
                if (withSourceGid) {
                    wc.hasSourceGid = sgid;
                    if (sgid) {
                        k.sgids.get((k.next + i) * 16, wc.sourceGid, 0, 16);
                    }
                }
            }
            k.next += m;
            if (k.next == k.count) {
                KEPT.remove(cq);
                keptCqs = KEPT.size();
            }
            return m;
        }
    }

    /**
     * Before {@code ibv_destroy_cq}, which no poll of the CQ can overlap (its guard): takes out what
     * was kept for it; {@link #restore} puts that back if the destroy fails.
     *
     * @return what was kept, or null
     */
    static Object detach(long cq) {
        if (keptCqs == 0) {
            return null;
        }
        synchronized (LOCK) {
            Kept k = KEPT.remove(cq);
            keptCqs = KEPT.size();
            return k;
        }
    }

    /** After a failed {@code ibv_destroy_cq}: the CQ lives on, with what {@link #detach} took out. */
    static void restore(long cq, Object kept) {
        if (kept == null) {
            return;
        }
        synchronized (LOCK) {
            KEPT.put(cq, (Kept) kept);
            keptCqs = KEPT.size();
        }
    }

    /** {@return completions kept for {@code cq}} For tests. */
    static int kept(long cq) {
        synchronized (LOCK) {
            Kept k = KEPT.get(cq);
            return k == null ? 0 : k.count - k.next;
        }
    }
}
