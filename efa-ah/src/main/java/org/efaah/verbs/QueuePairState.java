package org.efaah.verbs;

/** {@code enum ibv_qp_state} values, as {@link VerbsProvider#queryQpState} returns them. */
public final class QueuePairState {
    public static final int RESET = 0;
    public static final int INIT = 1;
    public static final int RTR = 2;
    public static final int RTS = 3;
    public static final int SQD = 4;
    /** Send queue error: the send side stopped after an error; receives still work. */
    public static final int SQE = 5;
    /** Error: every posted and later work request completes with {@code IBV_WC_WR_FLUSH_ERR}. */
    public static final int ERR = 6;

    private static final String[] NAMES = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};

    private QueuePairState() {
    }

    /** {@code IBV_QPS_} name of {@code state}. */
    public static String name(int state) {
        return state >= 0 && state < NAMES.length ? "IBV_QPS_" + NAMES[state] : "IBV_QPS_" + state;
    }

    /** Whether a QP in {@code state} needs RESET, INIT, RTR, RTS to work again. */
    public static boolean isError(int state) {
        return state == ERR || state == SQE;
    }
}
