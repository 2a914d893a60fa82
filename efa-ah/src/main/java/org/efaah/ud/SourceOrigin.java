package org.efaah.ud;

/** Which path named the sender of a {@link Datagram}: the device's own way, chosen at open. */
public enum SourceOrigin {
    /** The GRH in front of the payload ({@code IBV_WC_GRH} set): InfiniBand, RoCE, rxe. */
    GRH,
    /**
     * EFA: {@code wc.slid} held the AHN of the receiver's AH for the sender when the datagram
     * arrived, found in the cache's (PD, AHN) index without a device call when first asked; the
     * cache vouched that no new AH got that AHN between the arrival and the question.
     */
    AHN,
    /**
     * EFA: {@code wc.slid} was 0xFFFF (the receiver has no AH for the sender), and the GID was
     * read from the completion ({@code efadv_wc_read_sgid} on a CQ made with the source GID).
     */
    COMPLETION_GID,
    /**
     * Not known: on EFA an AHN the cache does not hold (an AH made outside it, or destroyed before
     * the question), an AHN a create in the PD returned between the datagram's arrival and the question (the
     * sender was the old AH's peer or the new one's: {@link Datagram#sourceAhn()} still tells the
     * number), or an unknown sender on a device whose CQ cannot report the GID; elsewhere a
     * completion without a GRH.
     */
    UNKNOWN
}
