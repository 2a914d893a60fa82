package org.efaah.verbs;

import java.util.List;

/**
 * The provider boundary: exactly the verbs the library needs from a device, as flat calls over
 * opaque {@code long} handles. Two implementations exist: the native one over libibverbs and
 * libefa, and a mock that behaves like new-generation EFA hardware.
 *
 * <p>This is a service-provider interface. Applications use {@link Device} and
 * {@link ProtectionDomain}, which own the life cycle of every handle (children destroyed before
 * parents, no handle used after it is freed); implementations may therefore assume that every
 * handle they receive is live and was returned by them. Implementations must be thread-safe.
 *
 * <p>Every method reports failure with {@link VerbsException} carrying the errno. A capability the
 * provider lacks answers {@link VerbsException} with {@link Errno#EOPNOTSUPP} and nothing else (as
 * rdma-core's {@code libibverbs/dummy_ops.c} does for every op a provider leaves out).
 */
public interface VerbsProvider extends AutoCloseable {

    /**
     * A short name: {@code native}, {@code mock}.
     *
     * @return the name that selects this provider ({@code efaah.provider})
     */
    String name();

    /**
     * {@code ibv_get_device_list(3)}: the names of the devices present; empty where there are
     * none (including where the kernel has no RDMA support at all).
     *
     * @return the device names (e.g. {@code efa_0}, {@code rxe0}), in the kernel's order
     */
    List<String> deviceNames();

    /**
     * {@code ibv_open_device(3)}.
     *
     * @param name a name from {@link #deviceNames()}
     * @return a context handle, freed with {@link #closeDevice}
     * @throws VerbsException ENODEV if there is no such device; natively also EACCES or ENOMEM
     *                        when the kernel refuses to open {@code /dev/infiniband/uverbsN}
     */
    long openDevice(String name);

    /**
     * {@code ibv_close_device(3)}. The owner destroys the context's children first.
     *
     * @param context a handle {@link #openDevice} returned; invalid afterwards
     * @throws VerbsException natively, the errno {@code ibv_close_device} reports (rare)
     */
    void closeDevice(long context);

    /**
     * {@code ibv_query_device(3)}, plus {@code efadv_query_device} on EFA.
     *
     * @param context a handle {@link #openDevice} returned
     * @return the device's limits and identity ({@code max_ah}, vendor id, ...)
     * @throws VerbsException with the errno of the failing query (e.g. EIO after a device fatal)
     */
    DeviceAttributes queryDevice(long context);

    /**
     * {@code ibv_query_port(3)}.
     *
     * @param context a handle {@link #openDevice} returned
     * @param portNum the port, 1-based (EFA has one port)
     * @return the port's state, link layer and GID table length
     * @throws VerbsException EINVAL for a port the device does not have
     */
    PortAttributes queryPort(long context, int portNum);

    /**
     * {@code ibv_query_gid(3)}: the GID at {@code index} of port {@code portNum}'s table.
     *
     * @param context a handle {@link #openDevice} returned
     * @param portNum the port, 1-based
     * @param index   the GID table index (sgid_index), 0 .. {@code gid_tbl_len - 1}
     * @return the GID (16 bytes, network order); the zero GID for an empty slot
     * @throws VerbsException EINVAL for a port or index out of range
     */
    Gid queryGid(long context, int portNum, int index);

    /**
     * {@code ibv_alloc_pd(3)}.
     *
     * @param context a handle {@link #openDevice} returned
     * @return a PD handle, freed with {@link #deallocatePd}
     * @throws VerbsException ENOMEM when the device's {@code max_pd} is reached or memory is short
     */
    long allocatePd(long context);

    /**
     * {@code ibv_dealloc_pd(3)}.
     *
     * @param pd a handle {@link #allocatePd} returned; invalid after success
     * @throws VerbsException EBUSY while AHs, MRs or QPs of the PD exist (the PD is kept)
     */
    void deallocatePd(long pd);

    /**
     * {@code ibv_create_ah(3)}, plus {@code efadv_query_ah} for the AHN on EFA.
     *
     * @param pd         a handle {@link #allocatePd} returned
     * @param attributes the {@code ibv_ah_attr} fields (checked by the record)
     * @return the AH handle, freed with {@link #destroyAh}, and its AHN (-1 where the device has none)
     * @throws VerbsException EINVAL for attributes the device refuses (on EFA: no GRH, or a
     *                        duplicate (PD, GID) on hardware that keeps one AH per destination),
     *                        ENODATA for an empty sgid_index slot, ENOMEM when {@code max_ah} is
     *                        reached, EIO/ENODEV after a device fatal
     */
    CreatedAh createAh(long pd, AddressHandleAttributes attributes);

    /**
     * {@code ibv_destroy_ah(3)}. On failure the AH still exists (rdma-core frees it only on
     * success) and the handle stays valid for a retry.
     *
     * @param ah a handle {@link #createAh} returned; invalid after success
     * @throws VerbsException with the kernel's errno (e.g. EINVAL, EIO) when the destroy fails
     */
    void destroyAh(long ah);

    // The datagram path below is what a UD endpoint needs; a provider without one keeps these defaults.

    /**
     * {@code ibv_create_cq(3)}, with no completion channel.
     *
     * @param context a handle {@link #openDevice} returned
     * @param entries the minimum number of CQEs, 1 .. the device's {@code max_cqe}
     * @return a CQ handle, freed with {@link #destroyCq} after its QPs
     * @throws VerbsException EINVAL for {@code entries} out of range, ENOMEM when the locked-memory
     *                        limit or memory is short; EOPNOTSUPP from a provider with no datagram path
     */
    default long createCq(long context, int entries) {
        throw noDatagramPath();
    }

    /**
     * {@code ibv_destroy_cq(3)}.
     *
     * @param cq a handle {@link #createCq} returned; invalid after success
     * @throws VerbsException EBUSY while a QP still uses the CQ; EOPNOTSUPP with no datagram path
     */
    default void destroyCq(long cq) {
        throw noDatagramPath();
    }

    /**
     * {@code ibv_reg_mr(3)} of a direct buffer's whole capacity, local write access; returns an MR
     * handle. The caller keeps the buffer reachable until {@link #deregisterMemory}.
     *
     * @param pd     a handle {@link #allocatePd} returned
     * @param buffer a direct buffer; its whole capacity is registered whatever its position
     * @return an MR handle, freed with {@link #deregisterMemory}
     * @throws VerbsException ENOMEM or EPERM when the pages cannot be pinned ({@code RLIMIT_MEMLOCK});
     *                        EOPNOTSUPP with no datagram path
     * @throws IllegalArgumentException from the native provider for an empty or non-direct buffer
     */
    default long registerMemory(long pd, java.nio.ByteBuffer buffer) {
        throw noDatagramPath();
    }

    /**
     * {@code ibv_dereg_mr(3)}.
     *
     * @param mr a handle {@link #registerMemory} returned; invalid after success
     * @throws VerbsException with the kernel's errno; EOPNOTSUPP with no datagram path
     */
    default void deregisterMemory(long mr) {
        throw noDatagramPath();
    }

    /**
     * {@code ibv_create_qp(3)} of type {@code IBV_QPT_UD}, one SGE per work request.
     *
     * @param pd        a handle {@link #allocatePd} returned
     * @param sendCq    a handle {@link #createCq} returned, for send completions
     * @param recvCq    a handle {@link #createCq} returned, for receive completions (may equal {@code sendCq})
     * @param maxSendWr send work requests outstanding at once, 1 .. the device's {@code max_qp_wr}
     * @param maxRecvWr receive work requests outstanding at once, likewise
     * @return the QP handle, freed with {@link #destroyQp}, and its QPN
     * @throws VerbsException EINVAL for sizes the device refuses, ENOMEM when short of memory;
     *                        EOPNOTSUPP with no datagram path
     */
    default QueuePairNumbers createUdQp(long pd, long sendCq, long recvCq, int maxSendWr, int maxRecvWr) {
        throw noDatagramPath();
    }

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
    default void activateUdQp(long qp, int portNum, int pkeyIndex, int qkey) {
        throw noDatagramPath();
    }

    /**
     * {@code ibv_destroy_qp(3)}; work requests still posted are dropped.
     *
     * @param qp a handle {@link #createUdQp} or {@link EfaVerbs#createSrdQp} returned; invalid after success
     * @throws VerbsException with the kernel's errno; EOPNOTSUPP with no datagram path
     */
    default void destroyQp(long qp) {
        throw noDatagramPath();
    }

    /**
     * {@code ibv_post_send(3)}: one signaled {@code IBV_WR_SEND} of {@code length} bytes at
     * {@code offset} in {@code mr}, to ({@code ah}, {@code remoteQpn}, {@code remoteQkey}).
     *
     * @param qp         a QP handle in RTS
     * @param ah         a handle {@link #createAh} returned, on the QP's PD
     * @param remoteQpn  the destination QPN (24 bits)
     * @param remoteQkey the destination's Q_Key (32 bits)
     * @param mr         a handle {@link #registerMemory} returned
     * @param offset     byte offset of the payload in the registered buffer
     * @param length     payload bytes, at most the port's MTU (EFA: the device's max message size)
     * @param wrId       the caller's id, returned in the completion's {@code wr_id}
     * @throws VerbsException ENOMEM when the send queue is full, EINVAL for a QP not in RTS or a
     *                        range outside the MR; EOPNOTSUPP with no datagram path
     */
    default void postSend(long qp, long ah, int remoteQpn, int remoteQkey, long mr, int offset, int length, long wrId) {
        throw noDatagramPath();
    }

    /**
     * {@code ibv_post_send(3)} of {@code count} signaled {@code IBV_WR_SEND}s chained in one call, all
     * to ({@code ah}, {@code remoteQpn}, {@code remoteQkey}): send {@code i} is {@code lengths[i]}
     * bytes at {@code offsets[i]} in {@code mr}, with {@code wrIds[i]}.
     *
     * @param qp         a QP handle in RTS
     * @param ah         a handle {@link #createAh} returned, on the QP's PD
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
    default void postReceive(long qp, long mr, int offset, int length, long wrId) {
        throw noDatagramPath();
    }

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
     * @throws VerbsException with the errno when polling fails (a CQ in error); EOPNOTSUPP with no datagram path
     */
    default int pollCq(long cq, WorkCompletion[] into) {
        throw noDatagramPath();
    }

    /**
     * {@code ibv_init_ah_from_wc(3)}: the attributes of an AH back to the sender of a received
     * completion, whose GRH (40 bytes) is at {@code grhOffset} in {@code mr}.
     *
     * @param context   a handle {@link #openDevice} returned
     * @param portNum   the port the datagram arrived on, 1-based
     * @param wc        the receive completion
     * @param mr        a handle {@link #registerMemory} returned, holding the received buffer
     * @param grhOffset byte offset of the GRH in the registered memory
     * @return attributes of an AH that reaches the sender
     * @throws VerbsException EINVAL when the completion carries no GRH or the GRH's destination GID
     *                        is not one of the port's; EOPNOTSUPP with no datagram path
     */
    default AddressHandleAttributes initAhFromWc(long context, int portNum, WorkCompletion wc, long mr, int grhOffset) {
        throw noDatagramPath();
    }

    /**
     * {@code ibv_query_qp(3)}: the QP's current state, an {@code enum ibv_qp_state} value
     * ({@link QueuePairState}).
     *
     * @param qp a QP handle
     * @return the {@code ibv_qp_state} number, 0 (RESET) .. 6 (ERR)
     * @throws VerbsException with the kernel's errno; EOPNOTSUPP with no datagram path
     */
    default int queryQpState(long qp) {
        throw noDatagramPath();
    }

    /**
     * {@code ibv_modify_qp(3)} to RESET from any state: every posted work request is dropped
     * without a completion; {@link #activateUdQp} takes the QP back to RTS.
     *
     * @param qp a QP handle
     * @throws VerbsException with the kernel's errno; EOPNOTSUPP with no datagram path
     */
    default void resetQp(long qp) {
        throw noDatagramPath();
    }

    /**
     * {@code ibv_modify_qp(3)} to ERR: every posted work request completes with
     * {@code IBV_WC_WR_FLUSH_ERR}; {@link #resetQp} then {@link #activateUdQp} bring the QP back.
     *
     * @param qp a QP handle
     * @throws VerbsException with the kernel's errno; EOPNOTSUPP with no datagram path
     */
    default void moveQpToError(long qp) {
        throw noDatagramPath();
    }

    // Completion channels: a thread sleeps until its CQ has a completion. A provider without them
    // keeps these defaults, and its CQs are polled.

    /**
     * {@code ibv_create_comp_channel(3)}: a channel for one CQ ({@link #createCq(long, int, long)}),
     * with a stop signal ({@link #stopCompletionChannel}) beside it.
     *
     * @param context a handle {@link #openDevice} returned
     * @return a channel handle, destroyed with {@link #destroyCompletionChannel} after its CQ
     * @throws VerbsException with the errno of the failing call; EOPNOTSUPP from a provider without channels
     */
    default long createCompletionChannel(long context) {
        throw noCompletionChannels();
    }

    /**
     * {@code ibv_create_cq(3)} whose completions are announced on {@code channel}; a channel takes one CQ.
     * {@link #destroyCq} acknowledges the events still unacknowledged before it destroys the CQ
     * ({@code ibv_destroy_cq} waits for every event it reported to be acknowledged).
     *
     * @param context a handle {@link #openDevice} returned
     * @param entries the minimum number of CQEs, 1 .. the device's {@code max_cqe}
     * @param channel a handle {@link #createCompletionChannel} returned, with no CQ yet
     * @return a CQ handle, freed with {@link #destroyCq}
     * @throws VerbsException EBUSY when the channel has a CQ; on EFA EOPNOTSUPP where the device lacks
     *                        CQ notifications ({@code efa_create_cq_ex}: {@code EFA_DEV_CAP(CQ_NOTIFICATIONS)})
     */
    default long createCq(long context, int entries, long channel) {
        throw noCompletionChannels();
    }

    /**
     * {@code ibv_req_notify_cq(3)} with {@code solicited_only} 0: the next completion added to the CQ
     * puts one event on its channel. Completions already in the CQ give none: poll once more after it.
     *
     * @param cq a handle {@link #createCq(long, int, long)} returned
     * @throws VerbsException with the provider's errno
     */
    default void requestCqNotification(long cq) {
        throw noCompletionChannels();
    }

    /**
     * Waits up to {@code timeoutMillis} for the channel's events ({@code ibv_get_cq_event(3)}), and
     * takes every one pending; acknowledges them in batches. One waiter per channel at a time.
     *
     * @param channel       a handle {@link #createCompletionChannel} returned
     * @param timeoutMillis the longest wait, ms; 0 does not wait
     * @return the events taken, 0 on timeout or {@link #wakeCompletionChannel}; {@link #CHANNEL_STOPPED}
     *         once {@link #stopCompletionChannel}
     *         was called
     * @throws VerbsException with the errno of the failing call
     */
    default int awaitCqEvents(long channel, int timeoutMillis) {
        throw noCompletionChannels();
    }

    /** What {@link #awaitCqEvents} returns once its channel is stopped. */
    int CHANNEL_STOPPED = -1;

    /**
     * Makes every wait on the channel, in progress or later, return {@link #CHANNEL_STOPPED} at once.
     * Any thread, any time before the channel is destroyed.
     *
     * @param channel a handle {@link #createCompletionChannel} returned
     */
    default void stopCompletionChannel(long channel) {
        throw noCompletionChannels();
    }

    /**
     * Ends the wait on the channel in progress, or the next one, with 0 events: how a waiting
     * thread's interrupt reaches a wait in {@code poll(2)}. Any thread, any time before the channel
     * is destroyed.
     *
     * @param channel a handle {@link #createCompletionChannel} returned
     */
    default void wakeCompletionChannel(long channel) {
        throw noCompletionChannels();
    }

    /**
     * The channel's file descriptor, readable when an event is pending, for callers that wait on
     * many channels with {@code poll(2)} or {@code epoll(7)}.
     *
     * @param channel a handle {@link #createCompletionChannel} returned
     * @return the fd; -1 where the provider has none (the mock)
     */
    default int completionChannelFd(long channel) {
        throw noCompletionChannels();
    }

    /**
     * {@code ibv_destroy_comp_channel(3)}.
     *
     * @param channel a handle {@link #createCompletionChannel} returned; invalid after success
     * @throws VerbsException EBUSY while its CQ exists
     */
    default void destroyCompletionChannel(long channel) {
        throw noCompletionChannels();
    }

    private VerbsException noCompletionChannels() {
        return new VerbsException("ibv_create_comp_channel", Errno.EOPNOTSUPP, "the " + name()
                + " provider has no completion channels");
    }

    /**
     * The EFA extensions ({@code efadv.h}).
     *
     * @return the provider's EFA verbs
     * @throws VerbsException EOPNOTSUPP where the provider has none (libefa absent, or no EFA model)
     */
    default EfaVerbs efa() {
        throw new VerbsException("efadv", Errno.EOPNOTSUPP, "the " + name() + " provider has no EFA extensions");
    }

    /** The one "unsupported" signal: {@link VerbsException} with EOPNOTSUPP. */
    private VerbsException noDatagramPath() {
        return new VerbsException("ibv_create_qp", Errno.EOPNOTSUPP, "the " + name() + " provider has no datagram (UD) path");
    }

    // Asynchronous events (ibv_get_async_event(3)), read by one thread per device; a provider
    // without them keeps these defaults and its devices have no event reader.

    /**
     * Opens the event channel of {@code context}: from now on its events are read with
     * {@link #awaitAsyncEvents}. Natively the context's {@code async_fd} is made non-blocking and
     * paired with an eventfd for {@link #wakeAsyncEvents}.
     *
     * @param context a handle {@link #openDevice} returned
     * @return a channel handle, closed with {@link #closeAsyncEvents} before the context
     * @throws VerbsException with the errno of the system call that failed to set the channel up
     * @throws VerbsException EOPNOTSUPP if the provider reads no events
     */
    default long openAsyncEvents(long context) {
        throw noAsyncEvents();
    }

    /**
     * Waits up to {@code timeoutMillis} for events of the channel, then returns every event
     * pending (each acknowledged at once), in order; empty on timeout or when
     * {@link #wakeAsyncEvents} was called. One thread at a time per channel.
     *
     * @param channel       a handle {@link #openAsyncEvents} returned
     * @param timeoutMillis the longest wait, ms; 0 polls
     * @return the pending events, oldest first; empty on timeout or wake
     * @throws VerbsException EOPNOTSUPP if the provider reads no events
     */
    default List<AsyncEvent> awaitAsyncEvents(long channel, int timeoutMillis) {
        throw noAsyncEvents();
    }

    /**
     * Makes a wait on the channel, in progress or next, return promptly. Any thread, any time before close.
     *
     * @param channel a handle {@link #openAsyncEvents} returned
     * @throws VerbsException EOPNOTSUPP if the provider reads no events
     */
    default void wakeAsyncEvents(long channel) {
        throw noAsyncEvents();
    }

    /**
     * Frees the channel; no wait may be in progress.
     *
     * @param channel a handle {@link #openAsyncEvents} returned; invalid afterwards
     * @throws VerbsException EOPNOTSUPP if the provider reads no events
     */
    default void closeAsyncEvents(long channel) {
        throw noAsyncEvents();
    }

    private VerbsException noAsyncEvents() {
        return new VerbsException("ibv_get_async_event", Errno.EOPNOTSUPP, "the " + name()
                + " provider reads no asynchronous events");
    }

    /**
     * {@code ibv_query_gid_ex(3)}: the type of the GID at {@code index} of port
     * {@code portNum}'s table.
     *
     * @param context a handle {@link #openDevice} returned
     * @param portNum the port, 1-based
     * @param index   the GID table index (sgid_index)
     * @return the slot's type (IB/RoCE v1 or RoCE v2)
     * @throws VerbsException ENODATA when the slot is empty, EINVAL for a port or index out of range
     * @throws VerbsException EOPNOTSUPP if the provider cannot tell GID types
     */
    default GidType queryGidType(long context, int portNum, int index) {
        throw new VerbsException("ibv_query_gid_ex", Errno.EOPNOTSUPP, "the " + name() + " provider cannot tell GID types");
    }

    // Network changes under RoCE ports (rtnetlink(7)), read by one thread per provider; a provider
    // without them keeps these defaults and its devices' network listeners hear nothing.

    /**
     * {@code ibv_query_gid_ex(3)}: the index of the netdev the GID at {@code index} of port
     * {@code portNum}'s table belongs to ({@code ndev_ifindex}).
     *
     * @param context a handle {@link #openDevice} returned
     * @param portNum the port, 1-based
     * @param index   the GID table index
     * @return the netdev's ifindex; 0 where the GID has none (InfiniBand)
     * @throws VerbsException ENODATA when the slot is empty, EINVAL for a port or index out of range
     * @throws VerbsException EOPNOTSUPP if the provider cannot tell
     */
    default int queryGidNetdev(long context, int portNum, int index) {
        throw new VerbsException("ibv_query_gid_ex", Errno.EOPNOTSUPP, "the " + name() + " provider cannot tell a GID's netdev");
    }

    /**
     * What this provider's network changes come from: providers that answer the same object share
     * one network reader (the native providers of a process all read the one kernel's rtnetlink).
     *
     * @return the source; by default this provider itself
     */
    default Object networkSource() {
        return this;
    }

    /**
     * Opens a channel of the host's link and IP neighbour changes: from now on every change is
     * read with {@link #awaitNetworkChanges}. Natively a {@code NETLINK_ROUTE} socket subscribed to
     * the link and neighbour groups, paired with an eventfd for {@link #wakeNetworkChanges}.
     *
     * @return a channel handle, closed with {@link #closeNetworkChanges}
     * @throws VerbsException with the errno of the system call that failed
     * @throws VerbsException EOPNOTSUPP if the provider reads no network changes
     */
    default long openNetworkChanges() {
        throw noNetworkChanges();
    }

    /**
     * Asks for every link ({@code links} true) or every IP neighbour: they come through
     * {@link #awaitNetworkChanges} marked {@linkplain NetworkChange#fromDump() from a dump}, then
     * one {@link NetworkChange.Type#DUMP_DONE}. One dump at a time per channel.
     *
     * @param channel a handle {@link #openNetworkChanges} returned
     * @param links   true for links ({@code RTM_GETLINK}), false for neighbours ({@code RTM_GETNEIGH})
     * @throws VerbsException with the errno of the request
     * @throws VerbsException EOPNOTSUPP if the provider reads no network changes
     */
    default void requestNetworkDump(long channel, boolean links) {
        throw noNetworkChanges();
    }

    /**
     * Waits up to {@code timeoutMillis} for changes, then returns those pending (more may follow
     * with the next call, at once); empty on timeout or when {@link #wakeNetworkChanges} was
     * called. One thread at a time per channel.
     *
     * @param channel       a handle {@link #openNetworkChanges} returned
     * @param timeoutMillis the longest wait, ms; 0 polls
     * @return the changes, oldest first
     * @throws VerbsException with the errno of a failed read, or of an error answer to a dump request
     * @throws VerbsException EOPNOTSUPP if the provider reads no network changes
     */
    default List<NetworkChange> awaitNetworkChanges(long channel, int timeoutMillis) {
        throw noNetworkChanges();
    }

    /**
     * Makes a wait on the channel, in progress or next, return promptly. Any thread, any time before close.
     *
     * @param channel a handle {@link #openNetworkChanges} returned
     * @throws VerbsException EOPNOTSUPP if the provider reads no network changes
     */
    default void wakeNetworkChanges(long channel) {
        throw noNetworkChanges();
    }

    /**
     * Frees the channel; no wait may be in progress.
     *
     * @param channel a handle {@link #openNetworkChanges} returned; invalid afterwards
     * @throws VerbsException EOPNOTSUPP if the provider reads no network changes
     */
    default void closeNetworkChanges(long channel) {
        throw noNetworkChanges();
    }

    private VerbsException noNetworkChanges() {
        return new VerbsException("rtnetlink", Errno.EOPNOTSUPP, "the " + name() + " provider reads no network changes");
    }

    /** Releases provider-wide resources; does not close devices (their owners do). */
    @Override
    void close();
}
