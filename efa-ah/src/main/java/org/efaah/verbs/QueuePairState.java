package org.efaah.verbs;


/** {@code enum ibv_qp_state} values, as {@link org.efaah.verbs.spi.DatagramVerbs#queryQpState} returns them. */
public final class QueuePairState {
    /** Reset: just created or reset; no work requests are taken. */
    public static final int RESET = 0;
    /** Initialised: receives may be posted; nothing is sent or received yet. */
    public static final int INIT = 1;
    /** Ready to receive. */
    public static final int RTR = 2;
    /** Ready to send (and receive): the working state. */
    public static final int RTS = 3;
    /** Send queue drain: sends in progress finish, new ones wait. */
    public static final int SQD = 4;
    /** Send queue error: the send side stopped after an error; receives still work. */
    public static final int SQE = 5;
    /** Error: every posted and later work request completes with {@code IBV_WC_WR_FLUSH_ERR}. */
    public static final int ERR = 6;

    private static final String[] NAMES = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};

    private QueuePairState() {
    }

    /**
     * The {@code IBV_QPS_} name of {@code state}.
     *
     * @param state an {@code ibv_qp_state} number
     * @return e.g. {@code IBV_QPS_RTS}; {@code IBV_QPS_<number>} for an unknown state
     */
    public static String name(int state) {
        return state >= 0 && state < NAMES.length ? "IBV_QPS_" + NAMES[state] : "IBV_QPS_" + state;
    }

    /**
     * Whether a QP in {@code state} needs RESET, INIT, RTR, RTS to work again.
     *
     * @param state an {@code ibv_qp_state} number
     * @return true for ERR and SQE
     */
    public static boolean isError(int state) {
        return state == ERR || state == SQE;
    }
}
