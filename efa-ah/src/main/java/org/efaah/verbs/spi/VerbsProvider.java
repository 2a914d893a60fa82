package org.efaah.verbs.spi;

import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.DeviceAttributes;
import org.efaah.verbs.Errno;
import org.efaah.verbs.Gid;
import org.efaah.verbs.GidType;
import org.efaah.verbs.PortAttributes;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.VerbsException;
import java.util.List;

/**
 * The provider boundary: exactly the verbs the library needs from a device, as flat calls over
 * opaque {@code long} handles. The core below opens devices, reads their attributes and GID
 * tables, and creates PDs and AHs; everything else is a facet a provider may offer:
 * {@link #datagrams()}, {@link #completionChannels()}, {@link #asyncEvents()}, {@link #networkChanges()}
 * and {@link #efa()}. A provider that implements a facet's interface offers it by default; one that neither
 * implements it nor overrides its accessor answers EOPNOTSUPP, and the library then does without it (a
 * device with no event reader, RoCE AHs that follow no network change, polled CQs; each said in the
 * health report). Two implementations exist: the native one over libibverbs and
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

    /**
     * The datagram path (CQs, memory regions, UD QPs, posts, polls).
     *
     * @return the provider's datagram verbs
     * @throws VerbsException EOPNOTSUPP where the provider has no datagram (UD) path
     */
    default DatagramVerbs datagrams() {
        return facet(DatagramVerbs.class, "ibv_create_qp", "datagram (UD) path");
    }

    /**
     * Completion channels, for a thread that sleeps until its CQ has a completion.
     *
     * @return the provider's completion channel verbs
     * @throws VerbsException EOPNOTSUPP where the provider has none (its CQs are polled)
     */
    default CompletionChannelVerbs completionChannels() {
        return facet(CompletionChannelVerbs.class, "ibv_create_comp_channel", "completion channels");
    }

    /**
     * Asynchronous device events ({@code ibv_get_async_event(3)}).
     *
     * @return the provider's event verbs
     * @throws VerbsException EOPNOTSUPP where the provider reads no events
     */
    default AsyncEventVerbs asyncEvents() {
        return facet(AsyncEventVerbs.class, "ibv_get_async_event", "asynchronous events");
    }

    /**
     * Network changes under RoCE ports (rtnetlink) and the netdev of each GID.
     *
     * @return the provider's network verbs
     * @throws VerbsException EOPNOTSUPP where the provider reads no network changes
     */
    default NetworkVerbs networkChanges() {
        return facet(NetworkVerbs.class, "rtnetlink", "network changes");
    }

    /**
     * The EFA extensions ({@code efadv.h}).
     *
     * @return the provider's EFA verbs
     * @throws VerbsException EOPNOTSUPP where the provider has none (libefa absent, or no EFA model)
     */
    default EfaVerbs efa() {
        throw absent("efadv", "EFA extensions");
    }

    /** The facet {@code type} when this provider implements it, else EOPNOTSUPP (the one "unsupported" signal). */
    private <F> F facet(Class<F> type, String operation, String what) {
        if (type.isInstance(this)) {
            return type.cast(this);
        }
        throw absent(operation, what);
    }

    private VerbsException absent(String operation, String what) {
        return new VerbsException(operation, Errno.EOPNOTSUPP, "the " + name() + " provider has no " + what);
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

    /** Releases provider-wide resources; does not close devices (their owners do). */
    @Override
    void close();
}
