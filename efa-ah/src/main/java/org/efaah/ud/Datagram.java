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

    /** The bytes sent. */
    public byte[] payload() {
        return payload;
    }

    /** The sender's QP number ({@code wc.src_qp}). */
    public int sourceQpn() {
        return sourceQpn;
    }

    /**
     * The sender's GID (null when {@link #origin()} is {@link SourceOrigin#UNKNOWN}): from the
     * GRH (its source GID, or on RoCE v2 over IPv4 the IPv4-mapped source address), or on EFA
     * from the cached AH the completion's AHN names, or from the completion itself.
     */
    public Gid sourceGid() {
        return sourceGid;
    }

    /** Which path gave {@link #sourceGid()}. */
    public SourceOrigin origin() {
        return origin;
    }

    /** On EFA, the AHN of the receiver's AH for the sender ({@code wc.slid}); else {@link #NO_AHN}. */
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
