package org.efaah.verbs.spi;

import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.SendRequests;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.WorkCompletion;
import org.efaah.verbs.QueuePairState;

/**
 * The datagram path a UD endpoint needs: CQs, memory regions, UD QPs, posts and polls, with the
 * same handle rules as {@link VerbsProvider}. A provider offers it through
 * {@link VerbsProvider#datagrams()}; a provider without one keeps that method's default, which
 * answers EOPNOTSUPP.
 */
public interface DatagramVerbs {

    /**
     * {@code ibv_create_cq(3)}, with no completion channel.
     *
     * @param context a handle {@link VerbsProvider#openDevice} returned
     * @param entries the minimum number of CQEs, 1 .. the device's {@code max_cqe}
     * @return a CQ handle, freed with {@link #destroyCq} after its QPs
     * @throws VerbsException EINVAL for {@code entries} out of range, ENOMEM when the locked-memory
     *                        limit or memory is short; EOPNOTSUPP from a provider with no datagram path
     */
    long createCq(long context, int entries);

    /**
     * {@code ibv_destroy_cq(3)}.
     *
     * @param cq a handle {@link #createCq} returned; invalid after success
     * @throws VerbsException EBUSY while a QP still uses the CQ; EOPNOTSUPP with no datagram path
     */
    void destroyCq(long cq);

    /**
     * {@code ibv_reg_mr(3)} of a direct buffer's whole capacity, local write access; returns an MR
     * handle. The caller keeps the buffer reachable until {@link #deregisterMemory}.
     *
     * @param pd     a handle {@link VerbsProvider#allocatePd} returned
     * @param buffer a direct buffer; its whole capacity is registered whatever its position
     * @return an MR handle, freed with {@link #deregisterMemory}
     * @throws VerbsException ENOMEM or EPERM when the pages cannot be pinned ({@code RLIMIT_MEMLOCK});
     *                        EOPNOTSUPP with no datagram path
     * @throws IllegalArgumentException from the native provider for an empty or non-direct buffer
     */
    long registerMemory(long pd, java.nio.ByteBuffer buffer);

    /**
     * {@code ibv_dereg_mr(3)}.
     *
     * @param mr a handle {@link #registerMemory} returned; invalid after success
     * @throws VerbsException with the kernel's errno; EOPNOTSUPP with no datagram path
     */
    void deregisterMemory(long mr);

    /**
     * {@code ibv_create_qp(3)} of type {@code IBV_QPT_UD}, one SGE per work request.
     *
     * @param pd        a handle {@link VerbsProvider#allocatePd} returned
     * @param sendCq    a handle {@link #createCq} returned, for send completions
     * @param recvCq    a handle {@link #createCq} returned, for receive completions (may equal {@code sendCq})
     * @param maxSendWr send work requests outstanding at once, 1 .. the device's {@code max_qp_wr}
     * @param maxRecvWr receive work requests outstanding at once, likewise
     * @return the QP handle, freed with {@link #destroyQp}, and its QPN
     * @throws VerbsException EINVAL for sizes the device refuses, ENOMEM when short of memory;
     *                        EOPNOTSUPP with no datagram path
     */
    QueuePairNumbers createUdQp(long pd, long sendCq, long recvCq, int maxSendWr, int maxRecvWr);

    /**
     * {@code ibv_modify_qp(3)} through RESET to INIT (port, P_Key index, Q_Key), RTR, and RTS
     * (send PSN 0): a UD QP ready to send and receive.
     *
     * @param qp        a handle {@link #createUdQp} (or {@link EfaVerbs#createSrdQp}) returned, in RESET
     * @param portNum   the port, 1-based
     * @param pkeyIndex the P_Key table index, normally 0
     * @param qkey      the Q_Key (32 bits) that incoming datagrams must carry
     * @throws VerbsException EINVAL for a port, index or state transition the device refuses;
     *                        EOPNOTSUPP with no datagram path
     */
    void activateUdQp(long qp, int portNum, int pkeyIndex, int qkey);

    /**
     * {@code ibv_destroy_qp(3)}; work requests still posted are dropped.
     *
     * @param qp a handle {@link #createUdQp} or {@link EfaVerbs#createSrdQp} returned; invalid after success
     * @throws VerbsException with the kernel's errno; EOPNOTSUPP with no datagram path
     */
    void destroyQp(long qp);

    /**
     * {@code ibv_post_send(3)}: one signaled {@code IBV_WR_SEND} of {@code length} bytes at
     * {@code offset} in {@code mr}, to ({@code ah}, {@code remoteQpn}, {@code remoteQkey}).
     *
     * @param qp         a QP handle in RTS
     * @param ah         a handle {@link VerbsProvider#createAh} returned, on the QP's PD
     * @param remoteQpn  the destination QPN (24 bits)
     * @param remoteQkey the destination's Q_Key (32 bits)
     * @param mr         a handle {@link #registerMemory} returned
     * @param offset     byte offset of the payload in the registered buffer
     * @param length     payload bytes, at most the port's MTU (EFA: the device's max message size)
     * @param wrId       the caller's id, returned in the completion's {@code wr_id}
     * @throws VerbsException ENOMEM when the send queue is full, EINVAL for a QP not in RTS or a
     *                        range outside the MR; EOPNOTSUPP with no datagram path
     */
    void postSend(long qp, long ah, int remoteQpn, int remoteQkey, long mr, int offset, int length, long wrId);

    /**
     * {@code ibv_post_send(3)} of {@code count} signaled {@code IBV_WR_SEND}s chained in one call, all
     * to ({@code ah}, {@code remoteQpn}, {@code remoteQkey}): send {@code i} is {@code lengths[i]}
     * bytes at {@code offsets[i]} in {@code mr}, with {@code wrIds[i]}.
     *
     * @param qp         a QP handle in RTS
     * @param ah         a handle {@link VerbsProvider#createAh} returned, on the QP's PD
     * @param remoteQpn  the destination QPN (24 bits)
     * @param remoteQkey the destination's Q_Key (32 bits)
     * @param mr         a handle {@link #registerMemory} returned
     * @param offsets    byte offsets of the payloads, at least {@code count}
     * @param lengths    payload bytes, at least {@code count}
     * @param wrIds      the caller's ids, at least {@code count}
     * @param count      sends to post, 1..the arrays' length
     * @return how many were posted, from the first: {@code count}, or fewer when the provider refused
     *         one (it and those after it are not posted; post it alone to learn why)
     * @throws VerbsException as {@link #postSend} when the first is refused
     */
    default int postSends(long qp, long ah, int remoteQpn, int remoteQkey, long mr, int[] offsets, int[] lengths,
                          long[] wrIds, int count) {
        for (int i = 0; i < count; i++) {
            try {
                postSend(qp, ah, remoteQpn, remoteQkey, mr, offsets[i], lengths[i], wrIds[i]);
            } catch (VerbsException e) {
                if (i == 0) {
                    throw e;
                }
                return i;
            }
        }
        return count;
    }

    /**
     * {@link #postSends(long, long, int, int, long, int[], int[], long[], int)} with the requests in
     * native memory: send {@code i} is {@code requests.length(i)} bytes at {@code requests.offset(i)}
     * in {@code mr}, with {@code requests.wrId(i)}. The endpoint posts this way, as a provider that
     * crosses into native code can hand {@link SendRequests#buffer()} over without copying arrays.
     * By default one {@link #postSend} each, stopping at the first refused.
     *
     * @param qp         a QP handle in RTS
     * @param ah         a handle {@link VerbsProvider#createAh} returned, on the QP's PD
     * @param remoteQpn  the destination QPN (24 bits)
     * @param remoteQkey the destination's Q_Key (32 bits)
     * @param mr         a handle {@link #registerMemory} returned
     * @param requests   the work requests, at least {@code count}
     * @param count      sends to post, 1..{@code requests.capacity()}
     * @return how many were posted, from the first, as the arrays' form returns
     * @throws VerbsException as {@link #postSend} when the first is refused
     */
    default int postSends(long qp, long ah, int remoteQpn, int remoteQkey, long mr, SendRequests requests, int count) {
        for (int i = 0; i < count; i++) {
            try {
                postSend(qp, ah, remoteQpn, remoteQkey, mr, requests.offset(i), requests.length(i), requests.wrId(i));
            } catch (VerbsException e) {
                if (i == 0) {
                    throw e;
                }
                return i;
            }
        }
        return count;
    }

    /**
     * {@code ibv_post_recv(3)}: one receive buffer of {@code length} bytes at {@code offset} in
     * {@code mr}. On UD the first 40 bytes receive the GRH (or are left undefined without one).
     *
     * @param qp     a QP handle (any state from INIT on)
     * @param mr     a handle {@link #registerMemory} returned
     * @param offset byte offset of the buffer in the registered memory
     * @param length bytes, including the 40 of the GRH
     * @param wrId   the caller's id, returned in the completion's {@code wr_id}
     * @throws VerbsException ENOMEM when the receive queue is full, EINVAL for a range outside the
     *                        MR or a QP in RESET; EOPNOTSUPP with no datagram path
     */
    void postReceive(long qp, long mr, int offset, int length, long wrId);

    /**
     * {@code ibv_post_recv(3)} of {@code count} receives chained in one call: receive {@code i} is
     * {@code length} bytes at {@code offsets[i]} in {@code mr}, with {@code wrIds[i]}.
     *
     * @param qp      a QP handle (any state from INIT on)
     * @param mr      a handle {@link #registerMemory} returned
     * @param offsets byte offsets of the buffers, at least {@code count}
     * @param length  bytes of each buffer, including the 40 of the GRH on UD
     * @param wrIds   the caller's ids, at least {@code count}
     * @param count   receives to post, 1..{@code offsets.length}
     * @return how many were posted, from the first: {@code count}, or fewer when the provider refused
     *         one (it and those after it are not posted; post it alone to learn why)
     * @throws VerbsException as {@link #postReceive} when the first is refused
     */
    default int postReceives(long qp, long mr, int[] offsets, int length, long[] wrIds, int count) {
        for (int i = 0; i < count; i++) {
            try {
                postReceive(qp, mr, offsets[i], length, wrIds[i]);
            } catch (VerbsException e) {
                if (i == 0) {
                    throw e;
                }
                return i;
            }
        }
        return count;
    }

    /**
     * {@code ibv_poll_cq(3)} into the given holders; never blocks.
     *
     * @param cq   a handle {@link #createCq} returned
     * @param into holders overwritten in order; at most {@code into.length} completions are taken
     * @return how many holders were filled, 0 when the CQ is empty
     * @throws NullPointerException if {@code into} or a holder to be filled is null; no completion is
     *                              lost by it (the CQ's next poll hands out those this one took)
     * @throws VerbsException with the errno when polling fails (a CQ in error); EOPNOTSUPP with no datagram path
     */
    int pollCq(long cq, WorkCompletion[] into);

    /**
     * {@code ibv_init_ah_from_wc(3)}: the attributes of an AH back to the sender of a received
     * completion, whose GRH (40 bytes) is at {@code grhOffset} in {@code mr}.
     *
     * @param context   a handle {@link VerbsProvider#openDevice} returned
     * @param portNum   the port the datagram arrived on, 1-based
     * @param wc        the receive completion
     * @param mr        a handle {@link #registerMemory} returned, holding the received buffer
     * @param grhOffset byte offset of the GRH in the registered memory
     * @return attributes of an AH that reaches the sender
     * @throws VerbsException EINVAL when the completion carries no GRH or the GRH's destination GID
     *                        is not one of the port's; EOPNOTSUPP with no datagram path
     */
    AddressHandleAttributes initAhFromWc(long context, int portNum, WorkCompletion wc, long mr, int grhOffset);

    /**
     * {@code ibv_query_qp(3)}: the QP's current state, an {@code enum ibv_qp_state} value
     * ({@link QueuePairState}).
     *
     * @param qp a QP handle
     * @return the {@code ibv_qp_state} number, 0 (RESET) .. 6 (ERR)
     * @throws VerbsException with the kernel's errno; EOPNOTSUPP with no datagram path
     */
    int queryQpState(long qp);

    /**
     * {@code ibv_modify_qp(3)} to RESET from any state: every posted work request is dropped
     * without a completion; {@link #activateUdQp} takes the QP back to RTS.
     *
     * @param qp a QP handle
     * @throws VerbsException with the kernel's errno; EOPNOTSUPP with no datagram path
     */
    void resetQp(long qp);

    /**
     * {@code ibv_modify_qp(3)} to ERR: every posted work request completes with
     * {@code IBV_WC_WR_FLUSH_ERR}; {@link #resetQp} then {@link #activateUdQp} bring the QP back.
     *
     * @param qp a QP handle
     * @throws VerbsException with the kernel's errno; EOPNOTSUPP with no datagram path
     */
    void moveQpToError(long qp);
}
