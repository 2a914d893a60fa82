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
 * <p>Every method reports failure with {@link VerbsException} carrying the errno.
 */
public interface VerbsProvider extends AutoCloseable {

    /** A short name: {@code native}, {@code mock}. */
    String name();

    /**
     * {@code ibv_get_device_list(3)}: the names of the devices present; empty where there are
     * none (including where the kernel has no RDMA support at all).
     */
    List<String> deviceNames();

    /** {@code ibv_open_device(3)}; returns a context handle. */
    long openDevice(String name);

    /** {@code ibv_close_device(3)}. */
    void closeDevice(long context);

    /** {@code ibv_query_device(3)}, plus {@code efadv_query_device} on EFA. */
    DeviceAttributes queryDevice(long context);

    /** {@code ibv_query_port(3)} for port {@code portNum} (1-based). */
    PortAttributes queryPort(long context, int portNum);

    /** {@code ibv_query_gid(3)}: the GID at {@code index} of port {@code portNum}'s table. */
    Gid queryGid(long context, int portNum, int index);

    /** {@code ibv_alloc_pd(3)}; returns a PD handle. */
    long allocatePd(long context);

    /** {@code ibv_dealloc_pd(3)}; fails with EBUSY while AHs of the PD exist. */
    void deallocatePd(long pd);

    /** {@code ibv_create_ah(3)}, plus {@code efadv_query_ah} for the AHN on EFA. */
    CreatedAh createAh(long pd, AddressHandleAttributes attributes);

    /**
     * {@code ibv_destroy_ah(3)}. On failure the AH still exists (rdma-core frees it only on
     * success) and the handle stays valid for a retry.
     */
    void destroyAh(long ah);

    // The datagram path below is what a UD endpoint needs; a provider without one keeps these defaults.

    /** {@code ibv_create_cq(3)} with {@code entries} CQEs; returns a CQ handle. */
    default long createCq(long context, int entries) {
        throw noDatagramPath();
    }

    /** {@code ibv_destroy_cq(3)}. */
    default void destroyCq(long cq) {
        throw noDatagramPath();
    }

    /**
     * {@code ibv_reg_mr(3)} of a direct buffer's whole capacity, local write access; returns an MR
     * handle. The caller keeps the buffer reachable until {@link #deregisterMemory}.
     */
    default long registerMemory(long pd, java.nio.ByteBuffer buffer) {
        throw noDatagramPath();
    }

    /** {@code ibv_dereg_mr(3)}. */
    default void deregisterMemory(long mr) {
        throw noDatagramPath();
    }

    /** {@code ibv_create_qp(3)} of type {@code IBV_QPT_UD}. */
    default QueuePairNumbers createUdQp(long pd, long sendCq, long recvCq, int maxSendWr, int maxRecvWr) {
        throw noDatagramPath();
    }

    /**
     * {@code ibv_modify_qp(3)} through RESET to INIT (port, P_Key index, Q_Key), RTR, and RTS
     * (send PSN 0): a UD QP ready to send and receive.
     */
    default void activateUdQp(long qp, int portNum, int pkeyIndex, int qkey) {
        throw noDatagramPath();
    }

    /** {@code ibv_destroy_qp(3)}. */
    default void destroyQp(long qp) {
        throw noDatagramPath();
    }

    /**
     * {@code ibv_post_send(3)}: one signaled {@code IBV_WR_SEND} of {@code length} bytes at
     * {@code offset} in {@code mr}, to ({@code ah}, {@code remoteQpn}, {@code remoteQkey}).
     */
    default void postSend(long qp, long ah, int remoteQpn, int remoteQkey, long mr, int offset, int length, long wrId) {
        throw noDatagramPath();
    }

    /** {@code ibv_post_recv(3)}: one receive buffer of {@code length} bytes at {@code offset} in {@code mr}. */
    default void postReceive(long qp, long mr, int offset, int length, long wrId) {
        throw noDatagramPath();
    }

    /** {@code ibv_poll_cq(3)} into the given holders; returns how many were filled (0 when none). */
    default int pollCq(long cq, WorkCompletion[] into) {
        throw noDatagramPath();
    }

    /**
     * {@code ibv_init_ah_from_wc(3)}: the attributes of an AH back to the sender of a received
     * completion, whose GRH (40 bytes) is at {@code grhOffset} in {@code mr}.
     */
    default AddressHandleAttributes initAhFromWc(long context, int portNum, WorkCompletion wc, long mr, int grhOffset) {
        throw noDatagramPath();
    }

    /**
     * {@code ibv_query_qp(3)}: the QP's current state, an {@code enum ibv_qp_state} value
     * ({@link QueuePairState}).
     */
    default int queryQpState(long qp) {
        throw noDatagramPath();
    }

    /**
     * {@code ibv_modify_qp(3)} to RESET from any state: every posted work request is dropped
     * without a completion; {@link #activateUdQp} takes the QP back to RTS.
     */
    default void resetQp(long qp) {
        throw noDatagramPath();
    }

    /**
     * The EFA extensions ({@code efadv.h}).
     *
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
     * @return a channel handle, closed with {@link #closeAsyncEvents} before the context
     * @throws UnsupportedOperationException if the provider reads no events
     */
    default long openAsyncEvents(long context) {
        throw noAsyncEvents();
    }

    /**
     * Waits up to {@code timeoutMillis} for events of the channel, then returns every event
     * pending (each acknowledged at once), in order; empty on timeout or when
     * {@link #wakeAsyncEvents} was called. One thread at a time per channel.
     */
    default List<AsyncEvent> awaitAsyncEvents(long channel, int timeoutMillis) {
        throw noAsyncEvents();
    }

    /** Makes a wait on the channel, in progress or next, return promptly. Any thread, any time before close. */
    default void wakeAsyncEvents(long channel) {
        throw noAsyncEvents();
    }

    /** Frees the channel; no wait may be in progress. */
    default void closeAsyncEvents(long channel) {
        throw noAsyncEvents();
    }

    private UnsupportedOperationException noAsyncEvents() {
        return new UnsupportedOperationException("the " + name() + " provider reads no asynchronous events");
    }

    /**
     * {@code ibv_query_gid_ex(3)}: the type of the GID at {@code index} of port
     * {@code portNum}'s table.
     *
     * @throws VerbsException ENODATA when the slot is empty
     * @throws UnsupportedOperationException if the provider cannot tell GID types
     */
    default GidType queryGidType(long context, int portNum, int index) {
        throw new UnsupportedOperationException("the " + name() + " provider cannot tell GID types");
    }

    /** Releases provider-wide resources; does not close devices (their owners do). */
    @Override
    void close();
}
