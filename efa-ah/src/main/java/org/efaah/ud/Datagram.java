package org.efaah.ud;

import org.efaah.verbs.Gid;
import org.efaah.verbs.WorkCompletion;

/**
 * A received datagram: its payload (the 40-byte area in front stripped) and where it came from.
 * Immutable once built; the payload array belongs to the receiver.
 */
public final class Datagram {
    /** {@link #sourceAhn()} when the device named no AH. */
    public static final int NO_AHN = -1;

    private final byte[] payload;
    private final int sourceQpn;
    private final Gid sourceGid;
    private final SourceOrigin origin;
    private final int sourceAhn;
    private final byte[] grh;
    private final WorkCompletion completion;

    Datagram(byte[] payload, Gid sourceGid, SourceOrigin origin, int sourceAhn, byte[] grh, WorkCompletion completion) {
        this.payload = payload;
        this.sourceQpn = completion.srcQp;
        this.sourceGid = sourceGid;
        this.origin = origin;
        this.sourceAhn = sourceAhn;
        this.grh = grh;
        this.completion = completion;
    }

    /**
     * The bytes sent. The array is this datagram's own (not the receive buffer); not copied.
     *
     * @return the payload, 0..{@link UdEndpoint#maxMessageSize()} bytes
     */
    public byte[] payload() {
        return payload;
    }

    /**
     * The sender's QP number ({@code wc.src_qp}), to reply to.
     *
     * @return the 24-bit QPN
     */
    public int sourceQpn() {
        return sourceQpn;
    }

    /**
     * The sender's GID (null when {@link #origin()} is {@link SourceOrigin#UNKNOWN}): from the
     * GRH (its source GID, or on RoCE v2 over IPv4 the IPv4-mapped source address), or on EFA
     * from the cached AH the completion's AHN named when the datagram arrived (looked up when it
     * was polled; null if that AHN went to a new AH in between), or from the completion itself.
     *
     * @return the sender's GID (16 bytes, network order), or null when unknown
     */
    public Gid sourceGid() {
        return sourceGid;
    }

    /**
     * Which path gave {@link #sourceGid()}.
     *
     * @return the origin, not null; {@link SourceOrigin#UNKNOWN} when there is no GID
     */
    public SourceOrigin origin() {
        return origin;
    }

    /**
     * On EFA, the AHN of the receiver's AH for the sender when the datagram arrived
     * ({@code wc.slid}, efadv.h AH numbers); by now it may number another AH.
     *
     * @return the AHN, 0..0xFFFE; {@link #NO_AHN} when the device named none or is not EFA
     */
    public int sourceAhn() {
        return sourceAhn;
    }

    /** The 40 bytes that were in front of the payload (a GRH, or on EFA undefined content). */
    byte[] grh() {
        return grh;
    }

    WorkCompletion completion() {
        return completion;
    }

    @Override
    public String toString() {
        return "Datagram[" + payload.length + " bytes from " + sourceGid + " qpn 0x" + Integer.toHexString(sourceQpn)
                + " by " + origin + "]";
    }
}
