package org.efaah.ud;

/** Which path named the sender of a {@link Datagram}: the device's own way, chosen at open. */
public enum SourceOrigin {
    /** The GRH in front of the payload ({@code IBV_WC_GRH} set): InfiniBand, RoCE, rxe. */
    GRH,
    /**
     * EFA: {@code wc.slid} held the AHN of the receiver's AH for the sender, found in the
     * cache's (PD, AHN) index without a device call.
     */
    AHN,
    /**
     * EFA: {@code wc.slid} was 0xFFFF (the receiver has no AH for the sender), and the GID was
     * read from the completion ({@code efadv_wc_read_sgid} on a CQ made with the source GID).
     */
    COMPLETION_GID,
    /**
     * Not known: on EFA an AHN the cache does not hold (an AH made outside it), or an unknown
     * sender on a device whose CQ cannot report the GID; elsewhere a completion without a GRH.
     */
    UNKNOWN
}
