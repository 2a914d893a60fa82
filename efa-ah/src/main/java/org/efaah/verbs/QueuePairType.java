package org.efaah.verbs;

/**
 * The datagram transport of a QP. Both address peers the same way (AH, remote QPN, Q_Key) and
 * carry messages up to the path MTU; they differ only in how the QP is created.
 */
public enum QueuePairType {
    /** Unreliable Datagram ({@code IBV_QPT_UD}): every device; a datagram may be dropped silently. */
    UD,
    /**
     * Scalable Reliable Datagram (EFA only: {@code efadv_create_qp_ex} with
     * {@code EFADV_QP_DRIVER_TYPE_SRD}): every datagram delivered exactly once, in no particular
     * order; a send to a QP with no receive posted ends in an error completion.
     */
    SRD
}
