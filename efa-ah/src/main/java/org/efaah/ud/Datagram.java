package org.efaah.ud;

import org.efaah.verbs.Gid;
import org.efaah.verbs.WorkCompletion;

/**
 * A received UD datagram: its payload (the GRH stripped) and where it came from. Immutable
 * once built; the payload array belongs to the receiver.
 */
public final class Datagram {
    private final byte[] payload;
    private final int sourceQpn;
    private final Gid sourceGid;
    private final byte[] grh;
    private final WorkCompletion completion;

    Datagram(byte[] payload, int sourceQpn, Gid sourceGid, byte[] grh, WorkCompletion completion) {
        this.payload = payload;
        this.sourceQpn = sourceQpn;
        this.sourceGid = sourceGid;
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
     * The sender's GID, from the 40 bytes in front of the payload: the GRH's source GID, or on
     * RoCE v2 over IPv4 the IPv4-mapped GID of the IPv4 header's source address.
     */
    public Gid sourceGid() {
        return sourceGid;
    }

    byte[] grh() {
        return grh;
    }

    WorkCompletion completion() {
        return completion;
    }

    @Override
    public String toString() {
        return "Datagram[" + payload.length + " bytes from " + sourceGid + " qpn 0x" + Integer.toHexString(sourceQpn) + "]";
    }
}
