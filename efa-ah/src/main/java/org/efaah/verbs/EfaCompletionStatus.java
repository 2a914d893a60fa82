package org.efaah.verbs;

/**
 * The status an EFA device writes into a completion ({@code enum efa_io_comp_status} of the EFA
 * kernel and rdma-core headers), which libibverbs reports as {@code wc.vendor_err} beside the
 * coarser {@code ibv_wc_status} it maps it to (rdma-core's {@code to_ibv_status} in
 * {@code providers/efa/verbs.c}). Several EFA statuses share one {@code ibv_wc_status}, so the
 * vendor error is the one that says what happened. The codes are not contiguous (16 and 17 are
 * unused).
 */
public enum EfaCompletionStatus {
    /** Success. */
    OK(0, WorkCompletion.SUCCESS, "success"),
    /** Flushed: the QP left RTS (error state or destroy). */
    FLUSHED(1, WorkCompletion.WR_FLUSH_ERR, "flushed: the QP left RTS (error state or destroy)"),
    /** Internal QP error. */
    LOCAL_ERROR_QP_INTERNAL_ERROR(2, WorkCompletion.LOC_QP_OP_ERR, "internal QP error"),
    /** Operation type not supported. */
    LOCAL_ERROR_UNSUPPORTED_OP(3, WorkCompletion.LOC_QP_OP_ERR, "operation type not supported"),
    /** The AH is not valid on this device. */
    LOCAL_ERROR_INVALID_AH(4, WorkCompletion.LOC_QP_OP_ERR, "the AH is not valid on this device"),
    /** Lkey not registered or not matching the address. */
    LOCAL_ERROR_INVALID_LKEY(5, 4 /* IBV_WC_LOC_PROT_ERR */, "lkey not registered or not matching the address"),
    /** Message longer than allowed. */
    LOCAL_ERROR_BAD_LENGTH(6, WorkCompletion.LOC_LEN_ERR, "message longer than allowed"),
    /** Destination interface is down or runs no EFA. */
    REMOTE_ERROR_BAD_ADDRESS(7, 10 /* IBV_WC_REM_ACCESS_ERR */,
            "destination interface is down or runs no EFA (for RDMA: rkey not registered or not matching the address)"),
    /** Connection reset by the remote side. */
    REMOTE_ERROR_ABORT(8, 16 /* IBV_WC_REM_ABORT_ERR */, "connection reset by the remote side"),
    /** No such destination QP, or it is in error. */
    REMOTE_ERROR_BAD_DEST_QPN(9, 15 /* IBV_WC_REM_INV_RD_REQ_ERR */, "no such destination QP, or it is in error"),
    /** Receiver not ready: no receive posted at the destination. */
    REMOTE_ERROR_RNR(10, WorkCompletion.RNR_RETRY_EXC_ERR, "receiver not ready: no receive posted at the destination"),
    /** The destination's receive buffer is too short. */
    REMOTE_ERROR_BAD_LENGTH(11, 9 /* IBV_WC_REM_INV_REQ_ERR */, "the destination's receive buffer is too short"),
    /** Unexpected status from the responder. */
    REMOTE_ERROR_BAD_STATUS(12, 7 /* IBV_WC_BAD_RESP_ERR */, "unexpected status from the responder"),
    /** The remote side did not answer. */
    LOCAL_ERROR_UNRESP_REMOTE(13, 20 /* IBV_WC_RESP_TIMEOUT_ERR */, "the remote side did not answer"),
    /** The remote side holds no valid AH for this sender. */
    REMOTE_ERROR_UNKNOWN_PEER(14, 11 /* IBV_WC_REM_OP_ERR */, "the remote side holds no valid AH for this sender"),
    /** The remote side is unreachable. */
    LOCAL_ERROR_UNREACH_REMOTE(15, 20 /* IBV_WC_RESP_TIMEOUT_ERR */, "the remote side is unreachable"),
    /** The two sides' devices disagree on a feature the operation needs (rdma-core 61 and later). */
    REMOTE_ERROR_FEATURE_MISMATCH(18, 9 /* IBV_WC_REM_INV_REQ_ERR */,
            "the remote device lacks a feature this operation needs");

    private static final EfaCompletionStatus[] BY_CODE = byCode();

    private static EfaCompletionStatus[] byCode() {
        EfaCompletionStatus[] all = values();
        EfaCompletionStatus[] table = new EfaCompletionStatus[all[all.length - 1].code + 1];
        for (EfaCompletionStatus s : all) {
            table[s.code] = s;
        }
        return table;
    }

    private final int code;
    private final int ibvStatus;
    private final String meaning;

    EfaCompletionStatus(int code, int ibvStatus, String meaning) {
        this.code = code;
        this.ibvStatus = ibvStatus;
        this.meaning = meaning;
    }

    /** {@return the {@code efa_io_comp_status} value, as found in {@code wc.vendor_err}} */
    public int code() {
        return code;
    }

    /** {@return the {@code enum ibv_wc_status} value rdma-core's EFA provider reports for it} */
    public int ibvStatus() {
        return ibvStatus;
    }

    /** {@return one line saying what happened} */
    public String meaning() {
        return meaning;
    }

    /**
     * The status an EFA completion's {@code vendor_err} names.
     *
     * @param code an {@code efa_io_comp_status} value
     * @return the status with {@code code}, or null for a code this table does not know
     */
    public static EfaCompletionStatus of(int code) {
        return code >= 0 && code < BY_CODE.length ? BY_CODE[code] : null;
    }

    /** {@return {@code EFA_IO_COMP_STATUS_} + the name, as the headers spell it} */
    public String headerName() {
        return "EFA_IO_COMP_STATUS_" + name();
    }
}
