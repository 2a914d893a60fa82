package org.efaah.verbs.ibverbs;

import java.nio.ByteBuffer;
import java.util.Objects;
import org.efaah.verbs.EfaVerbs;
import org.efaah.verbs.QueuePairNumbers;
import org.efaah.verbs.Ranges;
import org.efaah.verbs.WorkCompletion;

/**
 * {@link EfaVerbs} over libefa through the stub's {@code efa_ah_efadv_*} functions
 * ({@code efa_ah_efadv.c}). Arguments are range-checked before any native call; failures are
 * {@link org.efaah.verbs.VerbsException}s naming the efadv or verbs call. Thread-safe: polls use
 * the polling thread's own scratch memory.
 */
final class NativeEfaVerbs implements EfaVerbs {
    private static final int MAX_CQE = 65536;
    private static final int MAX_QP_WR = 8192;

    @Override
    public long createCqWithSourceGid(long context, int entries) {
        Ranges.check("cqe", entries, 1, MAX_CQE);
        long[] cq = new long[1];
        int rc = NativeVerbs.efa_ah_efadv_create_cq(context, entries, cq);
        if (rc != 0) {
            throw NativeVerbsProvider.error("efadv_create_cq", rc, "cqe " + entries + " with EFADV_WC_EX_WITH_SGID");
        }
        return cq[0];
    }

    @Override
    public int pollCqWithSourceGid(long cq, WorkCompletion[] into) {
        Objects.requireNonNull(into, "into");
        int capacity = Math.min(into.length, NativeVerbsProvider.Scratch.CAPACITY);
        for (int i = 0; i < capacity; i++) {
            if (into[i] == null) {
                throw new NullPointerException("into[" + i + "]");
            }
        }
        if (capacity == 0) {
            return 0;
        }
        NativeVerbsProvider.Scratch scratch = NativeVerbsProvider.Scratch.get();
        int rc = NativeVerbs.efa_ah_efadv_poll_cq(cq, scratch.wc, capacity, scratch.sgids, scratch.sgidValid,
                scratch.count);
        if (rc != 0) {
            throw NativeVerbsProvider.error("ibv_start_poll", rc, null);
        }
        int n = scratch.count.get();
        long valid = scratch.sgidValid.get();
        ByteBuffer view = scratch.view;
        for (int i = 0; i < n; i++) {
            WorkCompletion wc = into[i];
            NativeVerbsProvider.readCompletion(view, i, wc);
            wc.hasSourceGid = (valid & (1L << i)) != 0;
            if (wc.hasSourceGid) {
                scratch.sgids.position(i * 16L).get(wc.sourceGid, 0, 16);
                scratch.sgids.position(0);
            }
        }
        return n;
    }

    @Override
    public QueuePairNumbers createSrdQp(long pd, long sendCq, long recvCq, int maxSendWr, int maxRecvWr) {
        Ranges.check("max_send_wr", maxSendWr, 1, MAX_QP_WR);
        Ranges.check("max_recv_wr", maxRecvWr, 1, MAX_QP_WR);
        long[] qp = new long[1];
        int[] qpn = new int[1];
        int rc = NativeVerbs.efa_ah_efadv_create_srd_qp(pd, sendCq, recvCq, maxSendWr, maxRecvWr, qp, qpn);
        if (rc != 0) {
            throw NativeVerbsProvider.error("efadv_create_qp_ex", rc, "EFADV_QP_DRIVER_TYPE_SRD, max_send_wr "
                    + maxSendWr + ", max_recv_wr " + maxRecvWr);
        }
        return new QueuePairNumbers(qp[0], qpn[0]);
    }

    @Override
    public org.efaah.verbs.EfaDeviceAttributes queryDevice(long context) {
        // Placeholder: the stub's efadv_query_device fields are not bound yet.
        throw NativeVerbsProvider.error("efadv_query_device", -95, "not bound yet");
    }

    @Override
    public void activateSrdQp(long qp, int portNum, int qkey, int rnrRetry) {
        if (rnrRetry != RNR_RETRY_DEVICE_DEFAULT) {
            throw NativeVerbsProvider.error("ibv_modify_qp", -95, "rnr_retry is not bound yet");
        }
        int rc = NativeVerbs.efa_ah_activate_ud_qp(qp, portNum, 0, qkey);
        if (rc != 0) {
            throw NativeVerbsProvider.error("ibv_modify_qp", rc, "SRD QP to RTS, port " + portNum);
        }
    }
}
