package org.efaah.verbs.ibverbs;

import java.nio.ByteBuffer;
import java.util.Objects;
import java.util.OptionalInt;
import org.efaah.verbs.EfaDeviceAttributes;
import org.efaah.verbs.spi.EfaVerbs;
import org.efaah.verbs.Errno;
import org.efaah.verbs.spi.QueuePairNumbers;
import org.efaah.internal.Ranges;
import org.efaah.verbs.VerbsException;
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
    private static final int EOPNOTSUPP = Errno.EOPNOTSUPP.value();

    /**
     * What an EOPNOTSUPP of a libefa call means on this host: libefa.so.1 absent, too old for
     * that family of entry points, or the device not EFA (libefa's own answer).
     *
     * @param families the stub's {@code efa_ah_efadv_families()}
     * @param family   the {@code NativeVerbs.EFADV_*} bit the call needs
     * @return one clause for the exception's detail
     */
    static String whyUnsupported(int families, int family) {
        if ((families & NativeVerbs.EFADV_LOADED) == 0) {
            return "libefa.so.1 is not installed (rdma-core's EFA provider)";
        }
        if ((families & family) == 0) {
            return "this libefa.so.1 lacks " + switch (family) {
                case NativeVerbs.EFADV_QUERY -> "efadv_query_device/efadv_query_ah (EFA_1.1)";
                case NativeVerbs.EFADV_CQ -> "efadv_create_cq/efadv_cq_from_ibv_cq_ex (EFA_1.2, rdma-core 43 and later)";
                case NativeVerbs.EFADV_SRD -> "efadv_create_qp_ex (EFA_1.1)";
                case NativeVerbs.EFADV_DEPTH -> "efadv_get_max_sq_depth/efadv_get_max_rq_depth (EFA_1.5, rdma-core 63 and later)";
                default -> "family " + family;
            };
        }
        return "the device is not EFA";
    }

    private static VerbsException failure(String operation, int rc, int family, String detail) {
        if (rc == -EOPNOTSUPP) {
            detail = detail + "; " + whyUnsupported(NativeVerbs.efa_ah_efadv_families(), family);
        }
        return NativeVerbsProvider.error(operation, rc, detail);
    }

    @Override
    public long createCqWithSourceGid(long context, int entries) {
        Ranges.check("cqe", entries, 1, MAX_CQE);
        long[] cq = new long[1];
        int rc = NativeVerbs.efa_ah_efadv_create_cq(context, entries, cq);
        if (rc != 0) {
            throw failure("efadv_create_cq", rc, NativeVerbs.EFADV_CQ, "cqe " + entries + " with EFADV_WC_EX_WITH_SGID");
        }
        return cq[0];
    }

    /**
     * {@code efadv_create_cq} with the sender's GID and {@code channel} as its completion channel
     * (libefa's {@code create_cq} passes it to the kernel where the device has CQ notifications).
     */
    @Override
    public long createCqWithSourceGid(long context, int entries, long channel) {
        Ranges.check("cqe", entries, 1, MAX_CQE);
        long[] cq = new long[1];
        int rc = NativeVerbs.efa_ah_efadv_create_cq_on_channel(context, channel, entries, cq);
        if (rc != 0) {
            String detail = "cqe " + entries + " with EFADV_WC_EX_WITH_SGID and a completion channel";
            int families = NativeVerbs.efa_ah_efadv_families();
            if (rc == -EOPNOTSUPP && (families & NativeVerbs.EFADV_LOADED) != 0 && (families & NativeVerbs.EFADV_CQ) != 0) {
                // libefa's create_cq refuses a channel where the device lacks EFA_DEV_CAP(CQ_NOTIFICATIONS).
                throw NativeVerbsProvider.error("efadv_create_cq", rc, detail
                        + "; the device reports no CQ notifications (or is not EFA)");
            }
            throw failure("efadv_create_cq", rc, NativeVerbs.EFADV_CQ, detail);
        }
        return cq[0];
    }

    @Override
    public int pollCqWithSourceGid(long cq, WorkCompletion[] into) {
        Objects.requireNonNull(into, "into");
        int capacity = Math.min(into.length, NativeVerbsProvider.Scratch.CAPACITY);
        if (capacity == 0) {
            return 0;
        }
        if (UnclaimedCompletions.any()) {
            int kept = UnclaimedCompletions.handOut(cq, into, capacity, true);
            if (kept >= 0) {
                return kept;
            }
        }
        NativeVerbsProvider.Scratch scratch = NativeVerbsProvider.Scratch.get();
        int n = NativeVerbs.efa_ah_efadv_poll_cq_records(cq, scratch.recordsAddress, capacity, scratch.sgidsAddress);
        if (n < 0) {
            throw failure("ibv_start_poll", n, NativeVerbs.EFADV_CQ, "CQ with source GID");
        }
        ByteBuffer records = scratch.recordView;
        int hole = UnclaimedCompletions.firstNull(into, n);
        if (hole >= 0) {
            throw UnclaimedCompletions.keep(cq, records, scratch.sgidView, n, hole);
        }
        for (int i = 0; i < n; i++) {
            WorkCompletion wc = into[i];
            wc.hasSourceGid = NativeVerbsProvider.readRecord(records, i, wc);
            if (wc.hasSourceGid) {
                scratch.sgidView.get(i * 16, wc.sourceGid, 0, 16); // a copy in Java, no JNI call
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
            throw failure("efadv_create_qp_ex", rc, NativeVerbs.EFADV_SRD, "EFADV_QP_DRIVER_TYPE_SRD, max_send_wr "
                    + maxSendWr + ", max_recv_wr " + maxRecvWr);
        }
        return new QueuePairNumbers(qp[0], qpn[0]);
    }

    /**
     * {@code efadv_query_device(3)} with the stub's prefix of {@code struct efadv_device_attr}
     * (see {@code efa_ah_efadv.c}): fields a libefa older than the header leaves zero read as 0.
     *
     * @throws VerbsException EOPNOTSUPP (saying whether libefa is absent, too old or the device
     *                        not EFA), or the errno of {@code ibv_query_device}
     */
    @Override
    public EfaDeviceAttributes queryDevice(long context) {
        try (NativeVerbs.DeviceAttr a = new NativeVerbs.DeviceAttr()) {
            int rc = NativeVerbs.efa_ah_query_device(context, a);
            if (rc != 0) {
                throw NativeVerbsProvider.error("ibv_query_device", rc, null);
            }
            if (a.is_efa() != 1) {
                throw failure("efadv_query_device", -EOPNOTSUPP, NativeVerbs.EFADV_QUERY,
                        "device " + a.name().getString(java.nio.charset.StandardCharsets.UTF_8));
            }
            return new EfaDeviceAttributes(a.efa_max_sq_wr(), a.efa_max_rq_wr(), a.efa_max_sq_sge(),
                    a.efa_max_rq_sge(), a.efa_inline_buf_size(), a.efa_device_caps(), a.efa_max_rdma_size(),
                    a.efa_inline_buf_size_ex());
        }
    }

    /**
     * {@inheritDoc}
     *
     * @throws IllegalArgumentException if {@code portNum} is not 1..255, {@code qkey} not
     *                                  0..0x7FFFFFFF or {@code rnrRetry} neither 0..7 nor
     *                                  {@link #RNR_RETRY_DEVICE_DEFAULT}
     */
    @Override
    public void activateSrdQp(long qp, int portNum, int qkey, int rnrRetry) {
        Ranges.check("port_num", portNum, 1, 255);
        Ranges.check("qkey", qkey, 0, Integer.MAX_VALUE);
        if (rnrRetry != RNR_RETRY_DEVICE_DEFAULT) {
            Ranges.check("rnr_retry", rnrRetry, 0, 7);
        }
        int rc = NativeVerbs.efa_ah_activate_srd_qp(qp, portNum, qkey, rnrRetry);
        if (rc != 0) {
            throw NativeVerbsProvider.error("ibv_modify_qp", rc, "SRD QP to RTS, port " + portNum
                    + (rnrRetry == RNR_RETRY_DEVICE_DEFAULT ? ", rnr_retry left at the device's default"
                    : ", rnr_retry " + rnrRetry + " (EFA takes it only with EFADV_DEVICE_ATTR_CAPS_RNR_RETRY)"));
        }
    }

    /**
     * {@code efadv_get_max_sq_depth} through the stub's {@code efa_ah_efadv_max_depths}: empty where
     * it answers EOPNOTSUPP (libefa before rdma-core 63 lacks the call; a libefa that has it says so
     * off EFA).
     */
    @Override
    public OptionalInt maxSqDepth(long context) {
        return depth(context, true);
    }

    /** {@code efadv_get_max_rq_depth}, as {@link #maxSqDepth}. */
    @Override
    public OptionalInt maxRqDepth(long context) {
        return depth(context, false);
    }

    private static OptionalInt depth(long context, boolean send) {
        int[] sq = new int[1];
        int[] rq = new int[1];
        int rc = NativeVerbs.efa_ah_efadv_max_depths(context, sq, rq);
        if (rc != 0) {
            throw NativeVerbsProvider.error("efadv_get_max_" + (send ? "sq" : "rq") + "_depth", rc, null);
        }
        int depth = send ? sq[0] : rq[0];
        if (depth == -EOPNOTSUPP) {
            return OptionalInt.empty();
        }
        if (depth < 0) {
            throw NativeVerbsProvider.error("efadv_get_max_" + (send ? "sq" : "rq") + "_depth", depth, send
                    ? "max_send_sge 1, max_rdma_sge 0, max_inline_data 0" : "max_recv_sge 1");
        }
        return OptionalInt.of(depth);
    }
}
