package org.efaah.ud;

import java.nio.ByteBuffer;
import org.efaah.verbs.Gid;
import org.efaah.verbs.WorkCompletion;

/**
 * A received datagram as the handler of {@link UdEndpoint#receive(java.util.function.Consumer, int, long,
 * java.util.concurrent.TimeUnit)} and {@link UdEndpoint#poll(java.util.function.Consumer, int)} sees it:
 * the payload in place in the endpoint's registered receive slot, and its sender, the shape of Aeron's
 * {@code FragmentHandler} and Netty's pooled {@code ByteBuf} reads. Reading it allocates nothing,
 * except {@link #sourceGid()}, {@link #origin()} and {@link #sourceAhn()} (the sender is named when
 * first asked: on InfiniBand and RoCE a {@link Gid} parsed from the GRH, on EFA a look-up in the
 * cache) and {@link #copy()}.
 *
 * <p><b>Valid only during the handler's call.</b> Afterwards the slot is posted again and the view
 * reused for the next datagram into it: a method called later throws {@link IllegalStateException},
 * or, once the slot holds another datagram, describes that one. A handler that keeps anything copies
 * it ({@link #copy()}, or the payload into its own buffer). Not thread-safe: read it on the handler's
 * thread.
 */
public final class DatagramView {
    /** The slot's payload area: read-only, framed to each datagram's payload in turn. */
    private final ByteBuffer payload;
    /** The endpoint's receive slot, or -1 for a datagram copied out before a QP recovery. */
    final int slot;
    /** The slot's offset in the receive memory (where the 40-byte area of UD starts). */
    final int offset;
    /** The whole registered receive memory, read with absolute gets only; null for a copied datagram. */
    private final ByteBuffer memory;
    /** Bytes in front of the payload: the 40-byte area on UD, 0 on SRD. */
    private final int prefix;
    /** The datagram's completion: the poll's own holder, handed over by {@link #fill} (receive lock held). */
    WorkCompletion completion = new WorkCompletion();
    private final SourceResolver resolver;
    private int length;
    private boolean valid;
    private boolean resolved;
    /** The mark {@link #fill} was given. */
    private long arrivalMark;
    private Gid sourceGid;
    private SourceOrigin origin;
    private int sourceAhn;
    /** A datagram copied out before a QP recovery, shown through this view; else null. */
    private final Datagram copied;
    /** The next view of the batch one poll lent out. */
    DatagramView next;

    DatagramView(ByteBuffer memory, int slot, int offset, int prefix, int maxMessageSize, SourceResolver resolver) {
        this.payload = memory.slice(offset + prefix, maxMessageSize).asReadOnlyBuffer();
        this.memory = memory;
        this.slot = slot;
        this.offset = offset;
        this.prefix = prefix;
        this.resolver = resolver;
        this.copied = null;
    }

    /** A view of a datagram already copied out (rare: one a QP recovery polled before the caller). */
    DatagramView(Datagram d) {
        this.payload = ByteBuffer.wrap(d.payload()).asReadOnlyBuffer();
        this.memory = null;
        this.slot = -1;
        this.offset = -1;
        this.prefix = 0;
        this.resolver = null;
        this.copied = d;
        this.completion.copyFrom(d.completion());
        this.length = d.payload().length;
    }

    /**
     * When its completion leaves the CQ, receive lock held: the view will show {@code wc}'s datagram
     * of {@code payloadLength} bytes, once {@link #lendFilled} lends it out; {@code arrivalMark} as
     * {@link SourceResolver#resolve} takes it. The view keeps {@code wc} itself, no copy, and returns
     * the holder it kept before, for the poller to reuse.
     */
    WorkCompletion fill(WorkCompletion wc, int payloadLength, long arrivalMark) {
        WorkCompletion previous = completion;
        completion = wc;
        length = payloadLength;
        this.arrivalMark = arrivalMark;
        resolved = false;
        sourceGid = null;
        origin = null;
        sourceAhn = Datagram.NO_AHN;
        return previous;
    }

    /** At lending, receive lock held: a view {@link #fill filled} before, or a copied datagram's. */
    void lendFilled() {
        valid = true;
    }

    /** After the handler returned: every later call throws until the slot is lent again. */
    void invalidate() {
        valid = false;
    }

    private void check() {
        if (!valid) {
            throw new IllegalStateException("datagram view: used after its handler returned (copy() what you keep)");
        }
    }

    /**
     * The payload in place: a read-only buffer whose position is 0 and limit the payload's length
     * (the 40-byte area of UD not included). The handler may move its position and limit.
     *
     * @return the same buffer object for every datagram into this slot, framed anew each time
     * @throws IllegalStateException if called after the handler returned
     */
    public ByteBuffer payload() {
        check();
        payload.limit(length).position(0);
        return payload;
    }

    /**
     * The payload's length.
     *
     * @return bytes, 0..{@link UdEndpoint#maxMessageSize()}
     * @throws IllegalStateException if called after the handler returned
     */
    public int length() {
        check();
        return length;
    }

    /**
     * Copies the payload into {@code dst} at {@code offset}.
     *
     * @param dst    the array to copy into
     * @param offset where in {@code dst}
     * @return the bytes copied, {@link #length()}
     * @throws IndexOutOfBoundsException if {@code dst} has less than {@link #length()} bytes from {@code offset}
     * @throws IllegalStateException     if called after the handler returned
     */
    public int copyPayload(byte[] dst, int offset) {
        check();
        payload.limit(length).position(0);
        payload.get(dst, offset, length);
        return length;
    }

    /**
     * The sender's QP number ({@code wc.src_qp}), to reply to.
     *
     * @return the 24-bit QPN
     * @throws IllegalStateException if called after the handler returned
     */
    public int sourceQpn() {
        check();
        return completion.srcQp;
    }

    /**
     * The sender's GID, as {@link Datagram#sourceGid()}, found when first asked: on EFA a look-up
     * of the AHN in the cache (no device call), naming the sender as it was when the datagram
     * arrived, or none if that AH is gone or its AHN was given to a new AH since; elsewhere parsed
     * from the GRH (a new {@link Gid}).
     *
     * @return the GID, or null when {@link #origin()} is {@link SourceOrigin#UNKNOWN}
     * @throws IllegalStateException if called after the handler returned
     */
    public Gid sourceGid() {
        resolve();
        return sourceGid;
    }

    /**
     * Which path gave {@link #sourceGid()}, as {@link Datagram#origin()}.
     *
     * @return the origin, not null
     * @throws IllegalStateException if called after the handler returned
     */
    public SourceOrigin origin() {
        resolve();
        return origin;
    }

    /**
     * On EFA, the AHN of the receiver's AH for the sender, as {@link Datagram#sourceAhn()}.
     *
     * @return the AHN, or {@link Datagram#NO_AHN}
     * @throws IllegalStateException if called after the handler returned
     */
    public int sourceAhn() {
        resolve();
        return sourceAhn;
    }

    /*
     * Resolve when asked (Netty's DatagramPacket.sender()): fill kept the completion and the mark
     * read before the datagram arrived, and nothing is looked up, or allocated, for a datagram
     * whose sender nobody reads. On EFA the look-up with that mark is as exact as one at poll: an
     * AH found holds the AHN since before the mark, so it held it at arrival; an AHN given to a
     * new AH between the arrival and the question reads UNKNOWN (AhnIndex's note), as does one
     * whose AH is gone by then.
     */
    private void resolve() {
        check();
        if (!resolved) {
            if (copied != null) {
                source(copied.sourceGid(), copied.origin(), copied.sourceAhn());
            } else {
                resolver.resolve(this, arrivalMark);
            }
            resolved = true;
        }
    }

    /** A copy of the bytes in front of the payload: the 40-byte area on UD (a GRH, or undefined on EFA), none on SRD. */
    byte[] area() {
        byte[] area = new byte[prefix];
        memory.get(offset, area);
        return area;
    }

    /** Set by the resolver, once per datagram. */
    void source(Gid gid, SourceOrigin how, int ahn) {
        sourceGid = gid;
        origin = how;
        sourceAhn = ahn;
    }

    /**
     * A {@link Datagram} of its own (the payload and the 40-byte area copied), to keep after the
     * call. Its sender is named when its user first asks, as here, unless this view's was already.
     *
     * @return a new datagram
     * @throws IllegalStateException if called after the handler returned
     */
    public Datagram copy() {
        check();
        if (copied != null) {
            return copied;
        }
        byte[] bytes = new byte[length];
        copyPayload(bytes, 0);
        byte[] area = area();
        WorkCompletion wc = new WorkCompletion();
        wc.copyFrom(completion);
        return resolved ? new Datagram(bytes, sourceGid, origin, sourceAhn, area, wc)
                : new Datagram(bytes, area, wc, resolver, arrivalMark); // named when its user asks
    }

    @Override
    public String toString() {
        return valid ? "DatagramView[" + length + " bytes, qpn 0x" + Integer.toHexString(completion.srcQp) + "]"
                : "DatagramView[returned]";
    }
}
