package org.efaah.verbs;

import org.efaah.internal.Ranges;
import org.efaah.verbs.spi.EfaVerbs;

/**
 * A datagram queue pair ({@code struct ibv_qp}): Unreliable Datagram ({@code IBV_QPT_UD}) or, on
 * EFA, Scalable Reliable Datagram ({@code efadv_create_qp_ex}), made by {@link ProtectionDomain}.
 * Sends name their destination with an AH of the same PD.
 * Thread-safe: posts may run concurrently (the provider serialises them as libibverbs does);
 * {@link #close()} waits for posts in progress and is idempotent.
 */
public final class UdQueuePair implements AutoCloseable {
    /** Largest Q_Key a sender may name; keys with the top bit set are privileged. */
    public static final long MAX_QKEY = 0x7FFFFFFFL;

    private final ProtectionDomain pd;
    private final long handle;
    private final int qpn;
    private final QueuePairType type;
    private final Guard guard;

    UdQueuePair(ProtectionDomain pd, long handle, int qpn, QueuePairType type) {
        this.pd = pd;
        this.handle = handle;
        this.qpn = qpn;
        this.type = type;
        this.guard = new Guard("queue pair");
    }

    /** {@return UD or SRD} */
    public QueuePairType type() {
        return type;
    }

    /**
     * {@return the PD the QP was created in}
     */
    public ProtectionDomain pd() {
        return pd;
    }

    /** {@return the 24-bit QP number} */
    public int qpn() {
        return qpn;
    }

    /**
     * Takes the QP from RESET through INIT, RTR to RTS ({@code ibv_modify_qp(3)} three times).
     *
     * @param portNum   1-based port
     * @param pkeyIndex index in the port's P_Key table (0 on EFA and RoCE)
     * @param qkey      Q_Key, 0..0x7FFFFFFF; receives carrying another Q_Key are dropped
     * @throws IllegalArgumentException if a number is out of range (named, with the range)
     * @throws VerbsException           with the errno of {@code ibv_modify_qp}; on EFA EOPNOTSUPP for a
     *                                  port other than 1 or a pkey_index other than 0
     */
    public void activate(int portNum, int pkeyIndex, long qkey) {
        activate(portNum, pkeyIndex, qkey, EfaVerbs.RNR_RETRY_DEVICE_DEFAULT);
    }

    /**
     * {@link #activate(int, int, long)}, and for SRD sets {@code rnr_retry} at RTR to RTS
     * ({@link EfaVerbs#activateSrdQp}).
     *
     * @param portNum   1-based port
     * @param pkeyIndex index in the port's P_Key table (0 on EFA and RoCE)
     * @param qkey      Q_Key, 0..0x7FFFFFFF
     * @param rnrRetry  SRD only: 0..7 (7 retries without end), or
     *                  {@link EfaVerbs#RNR_RETRY_DEVICE_DEFAULT} to leave the device's default
     * @throws IllegalArgumentException if a number is out of range, or {@code rnrRetry} is set on a UD QP
     * @throws VerbsException           with the errno of {@code ibv_modify_qp}; EOPNOTSUPP where the
     *                                  device cannot set {@code rnr_retry}
     */
    public void activate(int portNum, int pkeyIndex, long qkey, int rnrRetry) {
        Ranges.check("port_num", portNum, 1, pd.device().attributes().portCount());
        Ranges.check("pkey_index", pkeyIndex, 0, 0xFFFF);
        Ranges.check("qkey", qkey, 0, MAX_QKEY);
        if (rnrRetry != EfaVerbs.RNR_RETRY_DEVICE_DEFAULT) {
            Ranges.check("rnr_retry", rnrRetry, 0, 7);
        }
        if (type == QueuePairType.SRD) {
            guard.run(() -> pd.device().provider().efa().activateSrdQp(handle, portNum, (int) qkey, rnrRetry));
        } else if (rnrRetry != EfaVerbs.RNR_RETRY_DEVICE_DEFAULT) {
            throw new IllegalArgumentException("rnr_retry: " + rnrRetry + " applies to SRD QPs only; this QP is UD");
        } else {
            guard.run(() -> pd.device().provider().datagrams().activateUdQp(handle, portNum, pkeyIndex, (int) qkey));
        }
    }

    /**
     * {@code ibv_post_send(3)}: one signaled {@code IBV_WR_SEND} of {@code length} bytes from
     * {@code mr} at {@code offset}, to ({@code ah}, {@code remoteQpn}, {@code remoteQkey}).
     *
     * @throws IllegalArgumentException if the AH or MR belongs to another PD, or a number is out of range
     * @throws IllegalStateException    if the QP, MR or AH is closed or destroyed
     * @param ah         the destination's AH, created in this QP's PD
     * @param remoteQpn  the destination QPN, 0..0xFFFFFF
     * @param remoteQkey the destination's Q_Key, 0..0x7FFFFFFF
     * @param mr         the region holding the payload, registered in this QP's PD
     * @param offset     byte offset of the payload in {@code mr}
     * @param length     payload bytes, not counting the 40 the receiver sets aside for a GRH
     * @param wrId       the caller's id, returned in the send completion
     * @throws VerbsException           ENOMEM when the send queue is full, EINVAL for a QP not in RTS
     */
    public void postSend(HardwareAddressHandle ah, int remoteQpn, long remoteQkey, MemoryRegion mr, int offset,
                         int length, long wrId) {
        checkDestination(ah, remoteQpn, remoteQkey, mr);
        mr.checkRange(offset, length);
        // Held for the post: the QP, the MR and the AH can none of them be freed under it.
        boolean qpSlot = guard.enterStep();
        try {
            boolean mrSlot = mr.guard().enterStep();
            try {
                ah.guard().enter();
                try {
                    pd.device().provider().datagrams().postSend(handle, ah.handleForProvider(), remoteQpn, (int) remoteQkey,
                            mr.handle, offset, length, wrId);
                } finally {
                    ah.guard().exit();
                }
            } finally {
                mr.guard().exit(mrSlot);
            }
        } finally {
            guard.exit(qpSlot);
        }
    }

    /** The checks every send makes before native code: same PD for the AH and the MR, numbers in range. */
    private void checkDestination(HardwareAddressHandle ah, int remoteQpn, long remoteQkey, MemoryRegion mr) {
        if (ah.pd() != pd) {
            throw new IllegalArgumentException("ah: belongs to another PD than this QP");
        }
        if (mr.pd() != pd) {
            throw new IllegalArgumentException("mr: belongs to another PD than this QP");
        }
        Ranges.check("remote_qpn", remoteQpn, 0, 0xFFFFFF);
        Ranges.check("remote_qkey", remoteQkey, 0, MAX_QKEY);
    }

    /**
     * {@code ibv_post_send(3)} of {@code count} sends chained in one call, all to ({@code ah},
     * {@code remoteQpn}, {@code remoteQkey}): send {@code i} is {@code lengths[i]} bytes from
     * {@code mr} at {@code offsets[i]}, with {@code wrIds[i]}.
     *
     * @param ah         the destination's AH, created in this QP's PD
     * @param remoteQpn  the destination QPN, 0..0xFFFFFF
     * @param remoteQkey the destination's Q_Key, 0..0x7FFFFFFF
     * @param mr         the region holding the payloads, registered in this QP's PD
     * @param offsets    byte offsets of the payloads in {@code mr}
     * @param lengths    payload bytes
     * @param wrIds      ids returned in the completions' {@code wr_id}
     * @param count      sends, 1..the arrays' length
     * @return how many were posted, from the first (fewer than {@code count} when the provider refused one)
     * @throws IllegalArgumentException if the AH or MR belongs to another PD, or a number is out of range
     * @throws IllegalStateException    if the QP, MR or AH is closed or destroyed
     * @throws VerbsException           as {@link #postSend}, when the first is refused
     */
    public int postSends(HardwareAddressHandle ah, int remoteQpn, long remoteQkey, MemoryRegion mr, int[] offsets,
                         int[] lengths, long[] wrIds, int count) {
        checkDestination(ah, remoteQpn, remoteQkey, mr);
        Ranges.check("count", count, 1, Math.min(offsets.length, Math.min(lengths.length, wrIds.length)));
        for (int i = 0; i < count; i++) {
            mr.checkRange(offsets[i], lengths[i]);
        }
        boolean qpSlot = guard.enterStep();
        try {
            boolean mrSlot = mr.guard().enterStep();
            try {
                ah.guard().enter();
                try {
                    return pd.device().provider().datagrams().postSends(handle, ah.handleForProvider(), remoteQpn,
                            (int) remoteQkey, mr.handle, offsets, lengths, wrIds, count);
                } finally {
                    ah.guard().exit();
                }
            } finally {
                mr.guard().exit(mrSlot);
            }
        } finally {
            guard.exit(qpSlot);
        }
    }

    /**
     * {@link #postSends(HardwareAddressHandle, int, long, MemoryRegion, int[], int[], long[], int)}
     * with the work requests in native memory: send {@code i} is {@code requests.length(i)} bytes
     * from {@code mr} at {@code requests.offset(i)}, with {@code requests.wrId(i)}. Copies no arrays
     * across to the provider: the form for a datapath that posts in a loop.
     *
     * @param ah         the destination's AH, created in this QP's PD
     * @param remoteQpn  the destination QPN, 0..0xFFFFFF
     * @param remoteQkey the destination's Q_Key, 0..0x7FFFFFFF
     * @param mr         the region holding the payloads, registered in this QP's PD
     * @param requests   the work requests
     * @param count      sends, 1..{@code requests.capacity()}
     * @return how many were posted, from the first (fewer than {@code count} when the provider refused one)
     * @throws IllegalArgumentException if the AH or MR belongs to another PD, or a number is out of range
     * @throws IllegalStateException    if the QP, MR or AH is closed or destroyed
     * @throws VerbsException           as {@link #postSend}, when the first is refused
     */
    public int postSends(HardwareAddressHandle ah, int remoteQpn, long remoteQkey, MemoryRegion mr,
                         SendRequests requests, int count) {
        checkDestination(ah, remoteQpn, remoteQkey, mr);
        Ranges.check("count", count, 1, requests.capacity());
        for (int i = 0; i < count; i++) {
            mr.checkRange(requests.offset(i), requests.length(i));
        }
        boolean qpSlot = guard.enterStep();
        try {
            boolean mrSlot = mr.guard().enterStep();
            try {
                ah.guard().enter();
                try {
                    return pd.device().provider().datagrams().postSends(handle, ah.handleForProvider(), remoteQpn,
                            (int) remoteQkey, mr.handle, requests, count);
                } finally {
                    ah.guard().exit();
                }
            } finally {
                mr.guard().exit(mrSlot);
            }
        } finally {
            guard.exit(qpSlot);
        }
    }

    /**
     * {@code ibv_post_recv(3)}: one receive buffer; on UD its first 40 bytes receive the GRH.
     *
     * @param mr     the region holding the buffer, registered in this QP's PD
     * @param offset byte offset of the buffer in {@code mr}
     * @param length bytes: at least 1, and on UD at least the 40 of the GRH area, which every UD
     *               datagram fills, so a shorter receive could take none. An empty receive is refused:
     *               posted without an SGE, libefa takes a slot for it that never completes
     *               ({@code efa_post_recv} writes no descriptor)
     * @param wrId   the caller's id, returned in the receive completion
     * @throws IllegalArgumentException if {@code mr} belongs to another PD, the range is outside it, or
     *                                  {@code length} is 0 or, on UD, shorter than 40 bytes
     * @throws IllegalStateException    if the QP or MR is closed
     * @throws VerbsException           ENOMEM when the receive queue is full
     */
    public void postReceive(MemoryRegion mr, int offset, int length, long wrId) {
        if (mr.pd() != pd) {
            throw new IllegalArgumentException("mr: belongs to another PD than this QP");
        }
        checkReceiveLength(length);
        mr.checkRange(offset, length);
        boolean qpSlot = guard.enterStep();
        try {
            boolean mrSlot = mr.guard().enterStep();
            try {
                pd.device().provider().datagrams().postReceive(handle, mr.handle, offset, length, wrId);
            } finally {
                mr.guard().exit(mrSlot);
            }
        } finally {
            guard.exit(qpSlot);
        }
    }

    /** The length every receive needs, single or batched: refused before the provider. */
    private void checkReceiveLength(int length) {
        if (length < 1) {
            throw new IllegalArgumentException("length: " + length + "; valid 1.. (an empty receive never completes on EFA)");
        }
        if (type == QueuePairType.UD && length < Grh.LENGTH) {
            throw new IllegalArgumentException("length: " + length + "; a UD receive needs at least " + Grh.LENGTH
                    + " bytes (the GRH area in front of every datagram)");
        }
    }

    /**
     * {@code ibv_post_recv(3)} of {@code count} receives in one call: receive {@code i} is
     * {@code length} bytes at {@code offsets[i]} in {@code mr}, with {@code wrIds[i]}.
     *
     * @param mr      the region holding the buffers, registered in this QP's PD
     * @param offsets byte offsets of the buffers
     * @param length  bytes of each: as {@link #postReceive}
     * @param wrIds   the caller's ids, returned in the receive completions
     * @param count   receives to post, 1..the arrays' length
     * @return how many were posted, from the first; fewer than {@code count} when the provider
     *         refused one (it and those after it are not posted)
     * @throws IllegalArgumentException as {@link #postReceive}, or for a {@code count} out of range
     * @throws IllegalStateException    if the QP or MR is closed
     * @throws VerbsException           as {@link #postReceive}, when the first is refused
     */
    public int postReceives(MemoryRegion mr, int[] offsets, int length, long[] wrIds, int count) {
        if (mr.pd() != pd) {
            throw new IllegalArgumentException("mr: belongs to another PD than this QP");
        }
        Ranges.check("count", count, 1, Math.min(offsets.length, wrIds.length));
        checkReceiveLength(length);
        for (int i = 0; i < count; i++) {
            mr.checkRange(offsets[i], length);
        }
        boolean qpSlot = guard.enterStep();
        try {
            boolean mrSlot = mr.guard().enterStep();
            try {
                return pd.device().provider().datagrams().postReceives(handle, mr.handle, offsets, length, wrIds, count);
            } finally {
                mr.guard().exit(mrSlot);
            }
        } finally {
            guard.exit(qpSlot);
        }
    }

    /**
     * Whether the QP is destroyed: posting to it is then refused.
     *
     * @return true once destroyed (or freed with its PD or device)
     */
    public boolean isClosed() {
        return guard.isClosed();
    }

    /** {@return {@code ibv_query_qp(3)}: the current {@link QueuePairState}} */
    public int state() {
        return guard.get(() -> pd.device().provider().datagrams().queryQpState(handle));
    }

    /**
     * {@code ibv_modify_qp(3)} to RESET: posted work requests are dropped without completions.
     * Follow with {@link #activate} and fresh receives: how a QP in the error state is recovered.
     */
    public void reset() {
        guard.run(() -> pd.device().provider().datagrams().resetQp(handle));
    }

    /**
     * {@code ibv_modify_qp(3)} to ERR: what is posted completes with {@code IBV_WC_WR_FLUSH_ERR}.
     * libefa then refuses posts with EINVAL until {@link #reset}; a QP the device put in error accepts
     * them and flushes them.
     *
     * @throws VerbsException with the errno of {@code ibv_modify_qp}
     */
    public void moveToError() {
        guard.run(() -> pd.device().provider().datagrams().moveQpToError(handle));
    }

    /** {@code ibv_destroy_qp(3)}. */
    @Override
    public void close() {
        guard.close(() -> {
            pd.device().provider().datagrams().destroyQp(handle);
            pd.forget(this);
        });
    }

    /** For a forced close of the device: destroys the QP, counting it closed whatever the provider says. */
    RuntimeException closeUnderDevice() {
        return Device.closeAnyway(guard, () -> pd.device().provider().datagrams().destroyQp(handle));
    }
}
