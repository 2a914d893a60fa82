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

    /** Releases provider-wide resources; does not close devices (their owners do). */
    @Override
    void close();
}
