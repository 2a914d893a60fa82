package org.efaah.verbs;

/**
 * One completion from {@code ibv_poll_cq(3)}: a mutable mirror of {@code struct ibv_wc}, reused
 * across polls so that polling allocates nothing. Not thread-safe; owned by the poller.
 */
public final class WorkCompletion {
    /** {@code IBV_WC_SUCCESS}. */
    public static final int SUCCESS = 0;
    /** {@code IBV_WC_SEND}. */
    public static final int OPCODE_SEND = 0;
    /** {@code IBV_WC_RECV}. */
    public static final int OPCODE_RECV = 128;
    /** {@code IBV_WC_GRH}: the first 40 bytes of the receive buffer hold a GRH. */
    public static final int FLAG_GRH = 1 << 0;
    /** {@code IBV_WC_LOC_LEN_ERR}. */
    public static final int LOC_LEN_ERR = 1;
    /** {@code IBV_WC_LOC_QP_OP_ERR}: rxe's answer to a receive too small for the datagram. */
    public static final int LOC_QP_OP_ERR = 2;
    /** {@code IBV_WC_WR_FLUSH_ERR}: a work request flushed because the QP is in the error state. */
    public static final int WR_FLUSH_ERR = 5;
    /** {@code IBV_WC_RNR_RETRY_EXC_ERR}: on EFA SRD, no receive was posted at the destination. */
    public static final int RNR_RETRY_EXC_ERR = 13;
    /** The {@code slid} of an EFA receive whose receiver holds no AH for the sender. */
    public static final int EFA_UNKNOWN_AHN = 0xFFFF;

    private static final String[] STATUS_NAMES = {"IBV_WC_SUCCESS", "IBV_WC_LOC_LEN_ERR", "IBV_WC_LOC_QP_OP_ERR",
        "IBV_WC_LOC_EEC_OP_ERR", "IBV_WC_LOC_PROT_ERR", "IBV_WC_WR_FLUSH_ERR", "IBV_WC_MW_BIND_ERR",
        "IBV_WC_BAD_RESP_ERR", "IBV_WC_LOC_ACCESS_ERR", "IBV_WC_REM_INV_REQ_ERR", "IBV_WC_REM_ACCESS_ERR",
        "IBV_WC_REM_OP_ERR", "IBV_WC_RETRY_EXC_ERR", "IBV_WC_RNR_RETRY_EXC_ERR", "IBV_WC_LOC_RDD_VIOL_ERR",
        "IBV_WC_REM_INV_RD_REQ_ERR", "IBV_WC_REM_ABORT_ERR", "IBV_WC_INV_EECN_ERR", "IBV_WC_INV_EEC_STATE_ERR",
        "IBV_WC_FATAL_ERR", "IBV_WC_RESP_TIMEOUT_ERR", "IBV_WC_GENERAL_ERR", "IBV_WC_TM_ERR",
        "IBV_WC_TM_RNDV_INCOMPLETE"};

    /** {@code wr_id}: the id the work request was posted with. */
    public long wrId;
    /** {@code enum ibv_wc_status}. */
    public int status;
    /** {@code enum ibv_wc_opcode}. */
    public int opcode;
    /** {@code vendor_err}: on EFA an {@link EfaCompletionStatus} code; 0 on success. */
    public int vendorError;
    /** Bytes received, including the 40-byte GRH on UD. */
    public int byteLength;
    /** {@code qp_num}: the local QPN the completion belongs to. */
    public int qpNum;
    /** Source QPN of a UD receive. */
    public int srcQp;
    /** {@code wc_flags}: {@code IBV_WC_GRH} (1) when a GRH is present in the receive buffer, etc. */
    public int wcFlags;
    /** {@code pkey_index} of a receive (0 on EFA and RoCE). */
    public int pkeyIndex;
    /**
     * {@code slid}: the source LID on InfiniBand; on EFA the sender's AHN as seen by the receiver,
     * {@link #EFA_UNKNOWN_AHN} when the receiver has no AH for the sender.
     */
    public int slid;
    /** {@code sl}: service level of a receive. */
    public int sl;
    /** {@code dlid_path_bits} of a receive (InfiniBand only). */
    public int dlidPathBits;
    /**
     * The sender's GID (16 bytes, network order), filled only by a poll of an EFA CQ made with
     * {@code EFADV_WC_EX_WITH_SGID} and only when {@link #hasSourceGid} ({@code efadv_wc_read_sgid}
     * answers only for a sender the receiver has no AH for: {@code slid == 0xFFFF}).
     */
    public final byte[] sourceGid = new byte[16];
    /** Whether {@link #sourceGid} was read for this completion. */
    public boolean hasSourceGid;

    /**
     * Copies every field of {@code other} into this one.
     *
     * @param other the completion to copy; not changed
     */
    public void copyFrom(WorkCompletion other) {
        wrId = other.wrId;
        status = other.status;
        opcode = other.opcode;
        vendorError = other.vendorError;
        byteLength = other.byteLength;
        qpNum = other.qpNum;
        srcQp = other.srcQp;
        wcFlags = other.wcFlags;
        pkeyIndex = other.pkeyIndex;
        slid = other.slid;
        sl = other.sl;
        dlidPathBits = other.dlidPathBits;
        System.arraycopy(other.sourceGid, 0, sourceGid, 0, sourceGid.length);
        hasSourceGid = other.hasSourceGid;
    }

    /**
     * The {@code IBV_WC_*} name of a status.
     *
     * @param status an {@code enum ibv_wc_status} value
     * @return e.g. {@code IBV_WC_WR_FLUSH_ERR}; {@code IBV_WC_STATUS_<number>} for an unknown value
     */
    public static String statusName(int status) {
        return status >= 0 && status < STATUS_NAMES.length ? STATUS_NAMES[status] : "IBV_WC_STATUS_" + status;
    }

    @Override
    public String toString() {
        return "ibv_wc{wr_id=" + wrId + ", status=" + statusName(status) + ", opcode=" + opcode + ", byte_len="
                + byteLength + ", qp_num=" + qpNum + ", src_qp=" + srcQp + ", wc_flags=" + wcFlags + ", slid=" + slid + "}";
    }
}
