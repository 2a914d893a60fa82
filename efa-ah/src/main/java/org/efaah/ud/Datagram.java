package org.efaah.ud;

import java.util.Objects;
import org.efaah.verbs.Gid;
import org.efaah.verbs.WorkCompletion;

/**
 * A received datagram: its payload (the 40-byte area in front stripped) and where it came from.
 * Its sender is named when first asked ({@link #sourceGid()}, {@link #origin()},
 * {@link #sourceAhn()}), once, and every later call answers the same. Thread-safe; the payload
 * array belongs to the receiver.
 */
/*
 * Resolve when asked, as Netty's DatagramPacket.sender(): the completion and the arrival mark are
 * kept, and the resolver reads them at the first question (on EFA the mark check then answers
 * UNKNOWN if the AHN was given to a new AH since the datagram arrived). The first answer is kept
 * (the monitor guards only that store), so that two threads asking see one answer.
 */
public final class Datagram {
    /** {@link #sourceAhn()} when the device named no AH. */
    public static final int NO_AHN = -1;

    private final byte[] payload;
    private final int sourceQpn;
    private final byte[] grh;
    private final WorkCompletion completion;
    /** Until the sender is named: who names it, and the mark it arrived after ({@link SourceResolver#resolve}). */
    private final SourceResolver resolver;
    private final long arrivalMark;
    /** The sender, once named. */
    private volatile Source source;

    private record Source(Gid gid, SourceOrigin origin, int ahn) {
        /*
         * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
         * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
         * NoObjectMethodsTest). Same meaning and format as the generated ones.
         */
        @Override
        public boolean equals(Object o) {
            return o == this || o instanceof Source that && Objects.equals(that.gid, gid)
                    && Objects.equals(that.origin, origin) && that.ahn == ahn;
        }

        @Override
        public int hashCode() {
            int h = Objects.hashCode(gid);
            h = 31 * h + Objects.hashCode(origin);
            h = 31 * h + ahn;
            return h;
        }

        @Override
        public String toString() {
            return new StringBuilder("Source[gid=").append(gid).append(", origin=").append(origin)
                    .append(", ahn=").append(ahn).append(']').toString();
        }
    }

    /** A datagram whose sender is already named. */
    Datagram(byte[] payload, Gid sourceGid, SourceOrigin origin, int sourceAhn, byte[] grh, WorkCompletion completion) {
        this(payload, grh, completion, null, 0);
        this.source = new Source(sourceGid, origin, sourceAhn);
    }

    /** A datagram whose sender {@code resolver} names when first asked. */
    Datagram(byte[] payload, byte[] grh, WorkCompletion completion, SourceResolver resolver, long arrivalMark) {
        this.payload = payload;
        this.sourceQpn = completion.srcQp;
        this.grh = grh;
        this.completion = completion;
        this.resolver = resolver;
        this.arrivalMark = arrivalMark;
    }

    /* No lock is held while the resolver looks up (on EFA it may wait for a destroy of that AH). */
    private Source named() {
        Source s = source;
        if (s == null) {
            resolver.resolve(this, arrivalMark);
            s = source;
        }
        return s;
    }

    /** Set by the resolver; the first answer stays, so that every caller sees one. */
    synchronized void source(Gid gid, SourceOrigin how, int ahn) {
        if (source == null) {
            source = new Source(gid, how, ahn);
        }
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
     * was first asked; null if that AH is gone or its AHN went to a new AH since the arrival), or
     * from the completion itself.
     *
     * @return the sender's GID (16 bytes, network order), or null when unknown
     */
    public Gid sourceGid() {
        return named().gid();
    }

    /**
     * Which path gave {@link #sourceGid()}.
     *
     * @return the origin, not null; {@link SourceOrigin#UNKNOWN} when there is no GID
     */
    public SourceOrigin origin() {
        return named().origin();
    }

    /**
     * On EFA, the AHN of the receiver's AH for the sender when the datagram arrived
     * ({@code wc.slid}, efadv.h AH numbers); by now it may number another AH.
     *
     * @return the AHN, 0..0xFFFE; {@link #NO_AHN} when the device named none or is not EFA
     */
    public int sourceAhn() {
        return named().ahn();
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
        return "Datagram[" + payload.length + " bytes from " + sourceGid() + " qpn 0x" + Integer.toHexString(sourceQpn)
                + " by " + origin() + "]";
    }
}
