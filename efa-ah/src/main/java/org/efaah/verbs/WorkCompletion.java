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

    private static final String[] STATUS_NAMES = {"IBV_WC_SUCCESS", "IBV_WC_LOC_LEN_ERR", "IBV_WC_LOC_QP_OP_ERR",
        "IBV_WC_LOC_EEC_OP_ERR", "IBV_WC_LOC_PROT_ERR", "IBV_WC_WR_FLUSH_ERR", "IBV_WC_MW_BIND_ERR",
        "IBV_WC_BAD_RESP_ERR", "IBV_WC_LOC_ACCESS_ERR", "IBV_WC_REM_INV_REQ_ERR", "IBV_WC_REM_ACCESS_ERR",
        "IBV_WC_REM_OP_ERR", "IBV_WC_RETRY_EXC_ERR", "IBV_WC_RNR_RETRY_EXC_ERR", "IBV_WC_LOC_RDD_VIOL_ERR",
        "IBV_WC_REM_INV_RD_REQ_ERR", "IBV_WC_REM_ABORT_ERR", "IBV_WC_INV_EECN_ERR", "IBV_WC_INV_EEC_STATE_ERR",
        "IBV_WC_FATAL_ERR", "IBV_WC_RESP_TIMEOUT_ERR", "IBV_WC_GENERAL_ERR", "IBV_WC_TM_ERR",
        "IBV_WC_TM_RNDV_INCOMPLETE"};

    public long wrId;
    /** {@code enum ibv_wc_status}. */
    public int status;
    /** {@code enum ibv_wc_opcode}. */
    public int opcode;
    public int vendorError;
    /** Bytes received, including the 40-byte GRH on UD. */
    public int byteLength;
    public int qpNum;
    /** Source QPN of a UD receive. */
    public int srcQp;
    public int wcFlags;
    public int pkeyIndex;
    public int slid;
    public int sl;
    public int dlidPathBits;

    /** The name of an {@code enum ibv_wc_status} value, as {@code ibv_wc_status_str} would give it. */
    public static String statusName(int status) {
        return status >= 0 && status < STATUS_NAMES.length ? STATUS_NAMES[status] : "IBV_WC_STATUS_" + status;
    }

    @Override
    public String toString() {
        return "ibv_wc{wr_id=" + wrId + ", status=" + statusName(status) + ", opcode=" + opcode + ", byte_len="
                + byteLength + ", qp_num=" + qpNum + ", src_qp=" + srcQp + ", wc_flags=" + wcFlags + "}";
    }
}
