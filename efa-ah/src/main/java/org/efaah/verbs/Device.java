package org.efaah.verbs;

import org.efaah.internal.Ranges;
import org.efaah.verbs.spi.AsyncEvent;
import org.efaah.verbs.spi.EfaVerbs;
import org.efaah.verbs.spi.VerbsProvider;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.efaah.health.HealthCheck;
import org.efaah.health.HealthReport;
import org.efaah.health.HealthStatus;
import org.efaah.health.HealthThresholds;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An open verbs device context ({@code struct ibv_context}): the owner of its protection
 * domains, which own their AHs.
 *
 * <p>Opened with {@link #open(VerbsProvider, String)}; device and port attributes are read once at
 * open. Every child is registered with its parent (PDs and CQs here; AHs, memory regions and QPs
 * with their PD), because {@code ibv_close_device(3)} always succeeds and frees them all: a forced
 * {@link #close()} stops the event reader, then destroys the QPs, then the memory regions and
 * AHs, then the CQs, then the PDs, then the context, logging what was left open. Afterwards every
 * child refuses use with {@link IllegalStateException} in Java; no freed handle ever reaches the
 * provider.
 *
 * <p><b>Events.</b> Where the provider reads asynchronous events, a daemon thread
 * {@code efa-ah-events-<device>} reads them from open to close and hands each, as a
 * {@link DeviceEvent}, to the listeners. After {@code IBV_EVENT_DEVICE_FATAL} the device is
 * {@linkplain #isFatal() fatal}: every new operation fails with {@link IllegalStateException}
 * naming the device and the event, while {@link #close()} still frees everything. With
 * {@link #setCloseOnFatal(boolean) close-on-fatal} the event thread itself closes the device right
 * after the listeners have seen the event, which lets the kernel finish removing the device
 * ({@code rdma link delete} waits for every user to close its context).
 *
 * <p>Thread-safe.
 */
public final class Device implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Device.class);
    /** Numbers the devices opened in this JVM from 1, for {@link #hasValidated}. */
    private static final java.util.concurrent.atomic.AtomicInteger SERIALS = new java.util.concurrent.atomic.AtomicInteger();

    private final int serial = SERIALS.incrementAndGet();
    private final VerbsProvider provider;
    private final long context;
    private final DeviceAttributes attributes;
    /** {@code attributes.efa()}, one load nearer: every cache hit asks. */
    private final boolean efa;
    private final int[] gidTableLengths;
    private final int[] linkLayers;
    /** Per port, the RoCE v2 GIDs {@link #resolve} chooses a source from, in index order; null until read. */
    private final AtomicReferenceArray<SourceGid[]> roceV2Gids;
    private final Guard guard;
    private final Set<ProtectionDomain> protectionDomains = ConcurrentHashMap.newKeySet();
    private final Set<CompletionQueue> completionQueues = ConcurrentHashMap.newKeySet();
    private final List<Consumer<? super DeviceEvent>> eventListeners = new CopyOnWriteArrayList<>();
    /*
     * Guarded by listenerLock, with listenersTaken: the close takes the close listeners and sets
     * the flag in one step under that lock, and every add decides under it too, so that a listener
     * is either added before (and called by the close, once) or refused (never called, not kept).
     * An add that checked the device's state after adding could not tell which (issue 33, 5.4).
     */
    private final Object listenerLock = new Object();
    private final List<Consumer<? super Device>> closeListeners = new ArrayList<>();
    private boolean listenersTaken;
    private volatile DeviceEventReader eventReader;
    /** Why the device has no event reader (the provider's EOPNOTSUPP, or its refusal); null when it has one. */
    private volatile String noEventReader;
    private volatile DeviceEvent fatalEvent;
    private volatile boolean closeOnFatal;
    /** Whether the close has called {@code ibv_close_device}; it may follow the close (see {@link #close()}). */
    private volatile boolean contextFreed;

    private Device(VerbsProvider provider, long context, DeviceAttributes attributes, int[] gidTableLengths,
                   int[] linkLayers) {
        this.provider = provider;
        this.context = context;
        this.attributes = attributes;
        this.efa = this.attributes.efa();
        this.gidTableLengths = gidTableLengths;
        this.linkLayers = linkLayers;
        this.roceV2Gids = new AtomicReferenceArray<>(gidTableLengths.length);
        // Closed by close-on-fatal, the refusal must still say why (the device was removed, say).
        this.guard = new Guard(() -> "device " + attributes.name() + " is closed"
                + (fatalEvent == null ? "" : " after it reported IBV_EVENT_" + fatalEvent.kind()));
    }

    /**
     * Opens the device called {@code name} ({@code ibv_open_device(3)}) and reads its attributes.
     *
     * @throws NullPointerException     if an argument is null
     * @throws IllegalArgumentException if the provider lists no device of that name
     * @throws VerbsException           if the provider fails to open or query it
     * @param provider the provider to open it with
     * @param name     a name from {@link VerbsProvider#deviceNames()}, e.g. {@code efa_0}
     * @return the open device; close it when done
     */
    public static Device open(VerbsProvider provider, String name) {
        Objects.requireNonNull(provider, "provider");
        Objects.requireNonNull(name, "name");
        List<String> names = provider.deviceNames();
        if (!names.contains(name)) {
            throw new IllegalArgumentException("device: '" + name + "' is not present; devices: "
                    + (names.isEmpty() ? "none" : String.join(", ", names)));
        }
        long context = provider.openDevice(name);
        try {
            DeviceAttributes attributes = provider.queryDevice(context);
            int[] lengths = new int[attributes.portCount() + 1];
            int[] linkLayers = new int[attributes.portCount() + 1];
            for (int port = 1; port <= attributes.portCount(); port++) {
                PortAttributes p = provider.queryPort(context, port);
                lengths[port] = p.gidTableLength();
                linkLayers[port] = p.linkLayer();
            }
            Device device = new Device(provider, context, attributes, lengths, linkLayers);
            device.eventReader = DeviceEventReader.start(provider, context, attributes.name(), device::onAsyncEvent,
                    why -> device.noEventReader = why);
            return device;
        } catch (RuntimeException e) {
            try {
                provider.closeDevice(context);
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    /**
     * Opens the first device the provider lists.
     *
     * @param provider the provider to open it with
     * @return the open device; close it when done
     * @throws VerbsException ENODEV if the provider lists no device, or if opening fails
     */
    public static Device openFirst(VerbsProvider provider) {
        List<String> names = provider.deviceNames();
        if (names.isEmpty()) {
            throw new VerbsException("ibv_get_device_list", Errno.ENODEV, "no device present");
        }
        return open(provider, names.get(0));
    }

    /**
     * The kernel's name of the device, as {@code ibv_get_device_name(3)} gives it.
     *
     * @return e.g. {@code efa_0} or {@code rxe0}
     */
    public String name() {
        return attributes.name();
    }

    /**
     * The attributes read at open.
     *
     * @return the attributes, immutable
     */
    public DeviceAttributes attributes() {
        return attributes;
    }

    /**
     * Whether this is an EFA device, which keys AHs by destination GID alone.
     *
     * @return {@link DeviceAttributes#efa()}
     */
    public boolean isEfa() {
        return efa;
    }

    /**
     * {@code efadv_query_device(3)}: the EFA device's queue limits and capabilities.
     *
     * @return the attributes, read anew at each call
     * @throws VerbsException         EOPNOTSUPP, naming the device, if it is not EFA; EOPNOTSUPP where
     *                                the provider has no EFA extensions ({@code efa()})
     * @throws IllegalStateException  if the device is closed
     */
    public EfaDeviceAttributes efaAttributes() {
        if (!isEfa()) {
            throw new VerbsException("efadv_query_device", Errno.EOPNOTSUPP, name() + " is not an EFA device");
        }
        return guard.get(() -> provider.efa().queryDevice(context));
    }

    /**
     * {@code efadv_get_max_sq_depth(3)}: the deepest send queue this EFA device takes for an
     * endpoint's QP, where libefa reports it (rdma-core 63 and later).
     *
     * @return the depth; empty on a device that is not EFA, or where libefa or the provider does
     *         not report it (then {@link EfaDeviceAttributes#maxSqWr()} is the limit)
     * @throws VerbsException with the errno where the call exists and fails
     */
    public OptionalInt efaMaxSqDepth() {
        return efaDepth(true);
    }

    /**
     * {@code efadv_get_max_rq_depth(3)}: the deepest receive queue this EFA device takes for an
     * endpoint's QP (one SGE), where libefa reports it, as {@link #efaMaxSqDepth()}.
     *
     * @return the depth, or empty (then {@link EfaDeviceAttributes#maxRqWr()} is the limit)
     * @throws VerbsException with the errno where the call exists and fails
     */
    public OptionalInt efaMaxRqDepth() {
        return efaDepth(false);
    }

    private OptionalInt efaDepth(boolean send) {
        if (!isEfa()) {
            return OptionalInt.empty();
        }
        return guard.get(() -> {
            EfaVerbs facet;
            try {
                facet = provider.efa();
            } catch (VerbsException e) {
                if (e.errno() != Errno.EOPNOTSUPP) {
                    throw e;
                }
                return OptionalInt.empty(); // a provider without EFA extensions reports no depth
            }
            return send ? facet.maxSqDepth(context) : facet.maxRqDepth(context);
        });
    }

    /**
     * The provider serving this device.
     *
     * @return the provider given to {@link #open}
     */
    public VerbsProvider provider() {
        return provider;
    }

    /**
     * Queries port {@code portNum} now ({@code ibv_query_port(3)}).
     *
     * @throws IllegalArgumentException if the port is not 1..port count
     * @param portNum the port, 1-based
     * @return the port's state, link layer and GID table length
     * @throws IllegalStateException    if the device is closed
     * @throws VerbsException           if the query fails
     */
    public PortAttributes port(int portNum) {
        checkPort(portNum);
        return guard.get(() -> provider.queryPort(context, portNum));
    }

    /**
     * The GID at {@code index} of port {@code portNum}'s table ({@code ibv_query_gid(3)}).
     *
     * @throws IllegalArgumentException if the port or index is out of range
     * @param portNum the port, 1-based
     * @param index   the GID table index (sgid_index), 0 .. gid_tbl_len - 1
     * @return the GID, 16 bytes in network order; the zero GID for an empty slot
     * @throws IllegalStateException    if the device is closed
     * @throws VerbsException           if the query fails
     */
    public Gid gid(int portNum, int index) {
        checkPort(portNum);
        checkSgidIndex(portNum, index);
        return guard.get(() -> provider.queryGid(context, portNum, index));
    }

    /**
     * The type of the GID at {@code index} of port {@code portNum}'s table, as
     * {@code ibv_query_gid_type} reports it ({@code ibv_devinfo -v} prints it after each GID).
     *
     * @param portNum the port, 1-based
     * @param index   the GID table index, 0 .. gid_tbl_len - 1
     * @return the type; {@link GidType#IB} on InfiniBand and EFA
     * @throws IllegalArgumentException if the port or index is out of range
     * @throws IllegalStateException    if the device is closed
     * @throws VerbsException           if the query fails (an empty slot on newer kernels); EOPNOTSUPP
     *                                  where the provider cannot tell GID types
     */
    public GidType gidType(int portNum, int index) {
        checkPort(portNum);
        checkSgidIndex(portNum, index);
        return guard.get(() -> provider.queryGidType(context, portNum, index));
    }

    /**
     * The netdev of the GID at {@code index} of port {@code portNum}'s table: the
     * {@code ndev_ifindex} of {@code ibv_query_gid_ex(3)}, the interface a RoCE GID's address
     * belongs to.
     *
     * @param portNum the port, 1-based
     * @param index   the GID table index (sgid_index), 0 .. gid_tbl_len - 1
     * @return the netdev's index ({@code ifindex}); 0 where the GID has none (InfiniBand)
     * @throws IllegalArgumentException if the port or index is out of range
     * @throws IllegalStateException    if the device is closed
     * @throws VerbsException           ENODATA for an empty slot; EOPNOTSUPP where the provider
     *                                  cannot tell
     */
    public int queryGidNetdev(int portNum, int index) {
        checkPort(portNum);
        checkSgidIndex(portNum, index);
        return guard.get(() -> provider.networkChanges().queryGidNetdev(context, portNum, index));
    }

    /**
     * Checks the fields of {@code attributes} that depend on this device: {@code port_num} within
     * 1..port count, {@code sgid_index} within the port's GID table, and a global AH on EFA and on
     * RoCE (whose frames are built from the GRH; the kernel refuses a RoCE AH without one).
     *
     * @throws IllegalArgumentException naming the field, the value and the valid range
     * @param attributes the attributes to check; not changed
     */
    public void validate(AddressHandleAttributes attributes) {
        int port = attributes.portNum();
        checkPort(port);
        if (isEfa() && !attributes.isGlobal()) {
            throw new IllegalArgumentException("is_global: 0; EFA addresses every AH by its dgid, so is_global must be 1");
        }
        if (isRoce(port) && !attributes.isGlobal()) {
            throw new IllegalArgumentException("is_global: 0; " + name() + " port " + port
                    + " is RoCE (link layer Ethernet), which needs a GRH, so is_global must be 1 with a dgid");
        }
        if (attributes.isGlobal()) {
            checkSgidIndex(port, attributes.sgidIndex());
        }
        // What was checked (port count, link layers, GID table sizes) is fixed while the device
        // is open, so the verdict holds for this object for good.
        attributes.validatedOn = serial;
    }

    /**
     * Whether {@link #validate} has passed for this very object on this device: a cache's hit
     * then needs no second check. Thread-safe (the mark is one int, written after the checks;
     * a thread that does not see it yet only checks again).
     *
     * @param attributes the attributes
     * @return true if {@code validate(attributes)} returned normally on this device before
     */
    public boolean hasValidated(AddressHandleAttributes attributes) {
        return attributes.validatedOn == serial;
    }

    private boolean isRoce(int port) {
        return linkLayers[port] == PortAttributes.LINK_LAYER_ETHERNET;
    }

    /**
     * The attributes with sgid_index filled in when the caller gave none
     * ({@link AddressHandleAttributes#hasSgidIndex()} false): 0 on EFA and InfiniBand. On a RoCE
     * port, a RoCE v2 GID of the destination's family (IPv4-mapped for an IPv4-mapped dgid, else
     * IPv6) and scope, as a host chooses an IP source address (RFC 6724, section 5): a link-local
     * dgid ({@code fe80::/10}; for IPv4 {@code 169.254.0.0/16}) gets a link-local GID, any other
     * dgid a GID that is not link-local, since routers forward no datagram with a link-local
     * source; among those the one sharing the longest prefix with the dgid (for IPv6 up to its
     * 64-bit subnet prefix), the lowest index on a tie. Where the port has no GID of the dgid's
     * scope, one of the other scope, chosen the same way: that reaches a peer on the same link.
     * The GIDs are read from the port's table with their types ({@code ibv_query_gid_ex(3)}), and
     * read again after a GID_CHANGE or PORT_ACTIVE event. Attributes that need nothing (not
     * global, or sgid_index given) are returned as they are, so that call is cheap.
     *
     * @throws IllegalArgumentException if the port is out of range, or on RoCE no RoCE v2 GID of
     *                                  the destination's family is in the table (the message
     *                                  names the device, port and dgid) or the provider cannot
     *                                  tell GID types
     * @throws IllegalStateException    if the device is closed
     * @param attributes the attributes, with or without sgid_index
     * @return attributes with sgid_index set where the AH is global, else {@code attributes} itself
     */
    public AddressHandleAttributes resolve(AddressHandleAttributes attributes) {
        if (!attributes.isGlobal() || attributes.hasSgidIndex()) {
            return attributes;
        }
        int port = attributes.portNum();
        checkPort(port);
        if (!isRoce(port)) {
            return attributes.withSgidIndex(0);
        }
        SourceGid[] gids = roceV2Gids.get(port);
        if (gids == null) {
            gids = guard.get(() -> scanRoceV2Gids(port));
            roceV2Gids.set(port, gids);
        }
        Gid dgid = attributes.dgid();
        int index = sourceGidIndex(gids, dgid);
        if (index < 0) {
            boolean ipv4 = dgid.isIpv4Mapped();
            throw new IllegalArgumentException("sgid_index: not given, and " + name() + " port " + port
                    + " has no RoCE v2 " + (ipv4 ? "IPv4" : "IPv6") + " GID for dgid " + dgid
                    + "; give sgid_index, or add an " + (ipv4 ? "IPv4" : "IPv6") + " address to the port's netdev");
        }
        return attributes.withSgidIndex(index);
    }

    /** A RoCE v2 GID of a port's table and its index (sgid_index). */
    private record SourceGid(int index, Gid gid) {
        /*
         * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
         * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
         * NoObjectMethodsTest). Same meaning and format as the generated ones.
         */
        @Override
        public boolean equals(Object o) {
            return o == this || o instanceof SourceGid that && that.index == index && Objects.equals(that.gid, gid);
        }

        @Override
        public int hashCode() {
            int h = index;
            h = 31 * h + Objects.hashCode(gid);
            return h;
        }

        @Override
        public String toString() {
            return new StringBuilder("SourceGid[index=").append(index).append(", gid=").append(gid)
                    .append(']').toString();
        }
    }

    /*
     * The source rule of resolve, after RFC 6724's rules 2 (appropriate scope) and 8 (longest
     * matching prefix), with two scopes, link-local and the rest. NCCL (ncclIbGetGidIndex) likewise
     * passes over link-local GIDs and prefers those in a configured address range, and UCX checks
     * that a RoCE peer shares the local GID's family and subnet prefix; both fall back to a default
     * index when nothing better is found, as the other scope is the fallback here. No allocation:
     * a cache acquire without sgid_index runs this on every call.
     */
    private static int sourceGidIndex(SourceGid[] gids, Gid dgid) {
        boolean ipv4 = dgid.isIpv4Mapped();
        boolean linkLocal = isLinkLocal(dgid);
        int best = -1;
        int bestScore = -1;
        for (SourceGid g : gids) {
            if (g.gid().isIpv4Mapped() != ipv4) {
                continue;
            }
            // Scope first (129 exceeds any prefix length), then the shared prefix; > keeps the lowest index.
            int score = (isLinkLocal(g.gid()) == linkLocal ? 129 : 0) + commonPrefixBits(g.gid(), dgid, ipv4 ? 128 : 64);
            if (score > bestScore) {
                best = g.index();
                bestScore = score;
            }
        }
        return best;
    }

    /** Link-local scope: IPv6 {@code fe80::/10} (RFC 4291, 2.5.6); IPv4 {@code 169.254.0.0/16} (RFC 3927). */
    private static boolean isLinkLocal(Gid gid) {
        return gid.isIpv4Mapped() ? (gid.interfaceId() & 0xffff_0000L) == 0xa9fe_0000L
                : (gid.subnetPrefix() >>> 54) == (0xfe80L >>> 6);
    }

    /** How many leading bits {@code a} and {@code b} share, at most {@code limit}. */
    private static int commonPrefixBits(Gid a, Gid b, int limit) {
        long high = a.subnetPrefix() ^ b.subnetPrefix();
        int bits = high != 0 ? Long.numberOfLeadingZeros(high)
                : 64 + Long.numberOfLeadingZeros(a.interfaceId() ^ b.interfaceId());
        return Math.min(bits, limit);
    }

    /** The port's RoCE v2 GIDs (not empty), in index order. */
    private SourceGid[] scanRoceV2Gids(int port) {
        List<SourceGid> found = new ArrayList<>();
        for (int i = 0; i < gidTableLengths[port]; i++) {
            Gid gid;
            GidType type;
            try {
                type = provider.queryGidType(context, port, i);
                gid = provider.queryGid(context, port, i);
            } catch (VerbsException e) {
                if (e.errno() == Errno.EOPNOTSUPP) {
                    throw new IllegalArgumentException("sgid_index: not given, and " + name() + " port " + port
                            + " cannot tell GID types (" + e.getMessage() + "), so no RoCE v2 GID can be chosen;"
                            + " give sgid_index", e);
                }
                continue; // ENODATA: nothing at this index
            }
            if (type == GidType.ROCE_V2 && !gid.isZero()) {
                found.add(new SourceGid(i, gid));
            }
        }
        return found.toArray(SourceGid[]::new);
    }

    private void checkPort(int portNum) {
        if (portNum < 1 || portNum >= gidTableLengths.length) {
            throw new IllegalArgumentException("port_num: " + portNum + " is out of range; valid 1.."
                    + (gidTableLengths.length - 1) + " on " + name());
        }
    }

    private void checkSgidIndex(int portNum, int index) {
        int length = gidTableLengths[portNum];
        if (index < 0 || index >= length) {
            throw new IllegalArgumentException("sgid_index: " + index + " is out of range; "
                    + (length == 0 ? "the GID table of " + name() + " port " + portNum + " is empty (gid_tbl_len 0)"
                    : "valid 0.." + (length - 1) + " (gid_tbl_len of " + name() + " port " + portNum + ")"));
        }
    }

    /**
     * Allocates a protection domain ({@code ibv_alloc_pd(3)}).
     *
     * @throws IllegalStateException if the device is closed
     * @throws VerbsException        if the provider fails
     * @return the new PD, owned by this device; closed with it at the latest
     */
    public ProtectionDomain allocatePd() {
        return creating("ibv_alloc_pd", () -> {
            long handle;
            try {
                handle = provider.allocatePd(context);
            } catch (VerbsException e) {
                throw e.withContext(FailureContext.allocatePd(this, e));
            }
            ProtectionDomain pd = new ProtectionDomain(this, handle);
            protectionDomains.add(pd);
            return pd;
        });
    }

    /**
     * Runs the creation of a child (a PD, CQ, or a PD's AH, MR or QP) while the device is open,
     * so that none is made during a close, and refuses it once the device reported a fatal event.
     */
    <T> T creating(String verb, Supplier<T> create) {
        return guard.get(() -> {
            DeviceEvent fatal = fatalEvent;
            if (fatal != null) {
                throw new IllegalStateException(verb + " refused: device " + name() + " reported IBV_EVENT_"
                        + fatal.kind() + " and can only be closed");
            }
            return create.get();
        });
    }

    /**
     * Creates a completion queue ({@code ibv_create_cq(3)}) of {@code entries} CQEs, 1..65536.
     *
     * @throws VerbsException EOPNOTSUPP if the provider has no datagram path
     * @param entries the minimum number of CQEs, 1..65536
     * @return the new CQ, owned by this device
     * @throws IllegalArgumentException if {@code entries} is outside 1..65536
     * @throws IllegalStateException    if the device is closed or has reported a fatal error
     */
    public CompletionQueue createCq(int entries) {
        Ranges.check("cqe", entries, 1, 65536);
        return creating("ibv_create_cq", () -> {
            long handle;
            try {
                handle = provider.datagrams().createCq(context, entries);
            } catch (VerbsException e) {
                throw e.withContext(FailureContext.resource(this, null));
            }
            CompletionQueue cq = new CompletionQueue(this, handle, entries);
            completionQueues.add(cq);
            return cq;
        });
    }

    /**
     * {@code ibv_create_cq(3)} with a completion channel of its own ({@code ibv_create_comp_channel(3)}):
     * a thread can sleep until a completion arrives ({@link CompletionQueue#awaitEvents}).
     *
     * @param entries the minimum number of CQEs, 1..65536
     * @return the CQ; its close destroys the channel too
     * @throws IllegalArgumentException if {@code entries} is out of range
     * @throws VerbsException           EOPNOTSUPP from a provider without channels, or on EFA where the
     *                                  device lacks CQ notifications; else the errno of the failing call
     */
    public CompletionQueue createCqWithEvents(int entries) {
        Ranges.check("cqe", entries, 1, 65536);
        return createOnChannel("ibv_create_cq", entries, false);
    }

    /**
     * {@link #createCqWithSourceGid(int)} with a completion channel of its own, as {@link #createCqWithEvents}.
     *
     * @param entries the minimum number of CQEs, 1..65536
     * @return the CQ; its close destroys the channel too
     * @throws IllegalArgumentException if {@code entries} is out of range
     * @throws VerbsException           EOPNOTSUPP where the device is not EFA, cannot report the GID, lacks
     *                                  CQ notifications, or the provider has no channels
     */
    public CompletionQueue createCqWithSourceGidAndEvents(int entries) {
        Ranges.check("cqe", entries, 1, 65536);
        if (!isEfa()) {
            throw new VerbsException("efadv_create_cq", Errno.EOPNOTSUPP, name() + " is not an EFA device");
        }
        return createOnChannel("efadv_create_cq", entries, true);
    }

    private CompletionQueue createOnChannel(String operation, int entries, boolean withSourceGid) {
        return creating(operation, () -> {
            long channel;
            long handle;
            try {
                /*
                 * A CQ of another facet is polled and destroyed through the datagram path
                 * (DatagramVerbs.pollCq, destroyCq): without it, make none, rather than one no
                 * close can free.
                 */
                provider.datagrams();
                channel = provider.completionChannels().createCompletionChannel(context);
                try {
                    handle = withSourceGid ? provider.efa().createCqWithSourceGid(context, entries, channel)
                            : provider.completionChannels().createCq(context, entries, channel);
                } catch (RuntimeException e) {
                    try {
                        provider.completionChannels().destroyCompletionChannel(channel);
                    } catch (RuntimeException suppressed) {
                        e.addSuppressed(suppressed);
                    }
                    throw e;
                }
            } catch (VerbsException e) {
                throw e.withContext(FailureContext.resource(this, null));
            }
            CompletionQueue cq = new CompletionQueue(this, handle, entries, withSourceGid, channel);
            completionQueues.add(cq);
            return cq;
        });
    }

    /**
     * Creates an EFA completion queue of {@code entries} CQEs, 1..65536, whose receive completions
     * carry the sender's GID when the receiver holds no AH for it ({@code efadv_create_cq(3)} with
     * {@code EFADV_WC_EX_WITH_SGID}; read by {@link CompletionQueue#poll} into
     * {@link WorkCompletion#sourceGid}).
     *
     * @throws VerbsException EOPNOTSUPP, naming the device, if it is not EFA
     * @param entries the minimum number of CQEs, 1..65536
     * @return the new CQ, owned by this device
     * @throws IllegalArgumentException if {@code entries} is outside 1..65536
     * @throws IllegalStateException    if the device is closed or has reported a fatal error
     */
    public CompletionQueue createCqWithSourceGid(int entries) {
        Ranges.check("cqe", entries, 1, 65536);
        if (!isEfa()) {
            throw new VerbsException("efadv_create_cq", Errno.EOPNOTSUPP, name() + " is not an EFA device");
        }
        return creating("efadv_create_cq", () -> {
            long handle;
            try {
                provider.datagrams(); // destroyed through it, as in createOnChannel
                handle = provider.efa().createCqWithSourceGid(context, entries);
            } catch (VerbsException e) {
                throw e.withContext(FailureContext.resource(this, null));
            }
            CompletionQueue cq = new CompletionQueue(this, handle, entries, true, 0);
            completionQueues.add(cq);
            return cq;
        });
    }

    /**
     * The attributes of an AH back to the sender of a received UD completion
     * ({@code ibv_init_ah_from_wc(3)}); the 40-byte GRH is at {@code grhOffset} in {@code mr}.
     *
     * @param portNum   the port the datagram arrived on, 1-based
     * @param wc        the receive completion
     * @param mr        the memory region holding the received buffer
     * @param grhOffset byte offset of the GRH in {@code mr}
     * @return attributes of an AH that reaches the sender
     * @throws IllegalArgumentException if the port is out of range or the 40 bytes lie outside {@code mr}
     * @throws IllegalStateException    if the device or {@code mr} is closed
     * @throws VerbsException           with the provider's errno (EINVAL for a completion without GRH)
     */
    public AddressHandleAttributes initAhFromWc(int portNum, WorkCompletion wc, MemoryRegion mr, int grhOffset) {
        checkPort(portNum);
        mr.checkRange(grhOffset, 40);
        return guard.get(() -> mr.guard().get(() -> provider.datagrams().initAhFromWc(context, portNum, wc, mr.handle, grhOffset)));
    }

    /**
     * Registers {@code listener} for this device's asynchronous events ({@code ibv_get_async_event(3)}).
     * Listeners run on the device's event thread, one event at a time, in registration order; they
     * must not block. A listener that throws is logged and does not stop the others.
     *
     * @param listener called with each event; not null
     * @throws IllegalStateException if the device's close has begun calling its close listeners
     *                               (its event reader is stopped by then): the listener is not kept
     */
    public void addEventListener(Consumer<? super DeviceEvent> listener) {
        Objects.requireNonNull(listener, "listener");
        synchronized (listenerLock) {
            refuseIfListenersTaken();
            eventListeners.add(listener);
        }
    }

    private void refuseIfListenersTaken() {
        assert Thread.holdsLock(listenerLock);
        if (listenersTaken) {
            // As the guard says it: a device closed on DEVICE_FATAL (removed, say) names the event.
            throw new IllegalStateException("device " + name() + " is closed"
                    + (fatalEvent == null ? "" : " after it reported IBV_EVENT_" + fatalEvent.kind()) + ": it takes no listener");
        }
    }

    /**
     * Removes a listener added with {@link #addEventListener}; harmless if it is not there.
     *
     * @param listener a listener added before
     */
    public void removeEventListener(Consumer<? super DeviceEvent> listener) {
        eventListeners.remove(listener);
    }

    /**
     * The health of this device's background reader of asynchronous events; DEGRADED, with the
     * provider's reason, when it has none (a provider without the asyncEvents facet): nothing then
     * reports a DEVICE_FATAL, a port error or a GID change.
     */
    List<org.efaah.health.HealthCheck> readerHealth() {
        DeviceEventReader reader = eventReader;
        if (reader != null) {
            return List.of(reader.health(name()));
        }
        String why = noEventReader;
        return why == null ? List.of() : List.of(new HealthCheck("event_reader", name(), HealthStatus.DEGRADED, 0, 1,
                "no asynchronous events are read (" + why + "): DEVICE_FATAL, port errors and GID changes go unseen"
                        + " until a call fails, and a default sgid_index is not chosen again after a GID change"));
    }

    /**
     * Registers {@code listener} to be called once when this device is closed, before
     * {@link #close()} frees any child (QP, memory region, AH, CQ, PD): what lets an owner of
     * children, such as an AH cache, stop handing them out. It runs on the closing thread while
     * no child can be created, and must not block (it may destroy children). A listener that
     * throws is logged and does not stop the close. A listener this method accepts is called,
     * once, also when it is added while a close is in progress; once that close has begun calling
     * its listeners, the add is refused and the listener never called.
     *
     * @param listener called with this device; not null
     * @throws IllegalStateException if the device's close has begun calling its close listeners:
     *                               the listener is not kept
     */
    public void addCloseListener(Consumer<? super Device> listener) {
        Objects.requireNonNull(listener, "listener");
        synchronized (listenerLock) {
            refuseIfListenersTaken();
            closeListeners.add(listener);
        }
    }

    /**
     * Removes a listener added with {@link #addCloseListener}; harmless if it is not there.
     *
     * @param listener a listener added before
     */
    public void removeCloseListener(Consumer<? super Device> listener) {
        synchronized (listenerLock) {
            closeListeners.remove(listener);
        }
    }

    /**
     * Whether the device reported {@code IBV_EVENT_DEVICE_FATAL}: it then refuses every new
     * operation and can only be closed.
     *
     * @return true once DEVICE_FATAL was seen; never false again
     */
    public boolean isFatal() {
        return fatalEvent != null;
    }

    /**
     * Whether the event thread closes this device (children first, as {@link #close()}) right
     * after every listener has seen an {@code IBV_EVENT_DEVICE_FATAL}. Off by default. A device
     * being removed from the kernel ({@code rdma link delete}, a hot unplug) reports
     * DEVICE_FATAL, and its removal waits until every process has closed its context: turn this
     * on so the removal completes without waiting for the application. Handles of children stay
     * objects that refuse use.
     *
     * @param closeOnFatal true to close the device on DEVICE_FATAL; may be changed at any time
     */
    public void setCloseOnFatal(boolean closeOnFatal) {
        this.closeOnFatal = closeOnFatal;
    }

    private void onAsyncEvent(AsyncEvent raw) {
        DeviceEvent.Kind kind = DeviceEvent.Kind.of(raw.eventType());
        int port = kind.isPortEvent() ? raw.portNum() & 0xFF : 0;
        DeviceEvent event = new DeviceEvent(this, kind, port);
        if ((kind == DeviceEvent.Kind.GID_CHANGE || kind == DeviceEvent.Kind.PORT_ACTIVE)
                && port > 0 && port < roceV2Gids.length()) {
            roceV2Gids.set(port, null); // the table changed: look again on the next resolve
        }
        if (kind == DeviceEvent.Kind.DEVICE_FATAL) {
            fatalEvent = event;
            LOG.error("device {}: IBV_EVENT_DEVICE_FATAL; the device refuses new work{}", name(),
                    closeOnFatal ? " and is being closed" : " and should be closed");
        } else {
            LOG.info("device {}: {}", name(), event);
        }
        publish(event);
        if (kind == DeviceEvent.Kind.DEVICE_FATAL && closeOnFatal) {
            try {
                close();
            } catch (RuntimeException e) {
                LOG.error("device {}: close after DEVICE_FATAL failed", name(), e);
            }
        }
    }

    /** Hands {@code event} to every listener; called by the device's event reader. */
    void publish(DeviceEvent event) {
        DeviceEventRecord.emit(event);
        for (Consumer<? super DeviceEvent> listener : eventListeners) {
            try {
                listener.accept(event);
            } catch (Throwable t) {
                LOG.error("device {}: a listener failed on {}", name(), event, t);
            }
        }
    }

    void forget(ProtectionDomain pd) {
        protectionDomains.remove(pd);
    }

    /** PDs allocated through this object and not yet deallocated. */
    int livePdCount() {
        return protectionDomains.size();
    }

    /** AHs created through this object's PDs that still exist. */
    int liveAhCount() {
        int n = 0;
        for (ProtectionDomain pd : protectionDomains) {
            n += pd.liveAhCount();
        }
        return n;
    }

    /**
     * The health of this device, asked of it now: open and not fatal; every port active, queried
     * with {@code ibv_query_port(3)} rather than remembered from events (EFA raises no port
     * events); the AHs and PDs made through this object against {@code max_ah} and {@code max_pd};
     * its reader of asynchronous events, DEGRADED with the cause while its reads fail or when there
     * is none (the provider reads no events, or refused the channel) (the RoCE
     * network reader's health is its subscription's, {@code org.efaah.roce}). Checks that cannot be
     * asked of a closed or fatal device are left out. Never throws for a failing device: a failed
     * query is a DOWN check with its errno. Thread-safe.
     *
     * @param thresholds where the figures turn DEGRADED
     * @return the report, one check per figure
     * @throws NullPointerException if {@code thresholds} is null
     */
    public HealthReport health(HealthThresholds thresholds) {
        Objects.requireNonNull(thresholds, "thresholds");
        String name = name();
        List<HealthCheck> checks = new ArrayList<>();
        if (isClosed()) {
            checks.add(new HealthCheck("device_open", name, HealthStatus.DOWN, 0, -1, contextFreed ? "device is closed"
                    : "device is closed; its context is not freed yet: its event reader has not stopped (ibv_close_device "
                    + "runs when it has freed its channel)"));
            return HealthReport.of(checks);
        }
        if (isFatal()) {
            checks.add(new HealthCheck("device_fatal", name, HealthStatus.DOWN, 1, -1,
                    "device reported IBV_EVENT_DEVICE_FATAL: it makes no AH any more; close and reopen it"));
            return HealthReport.of(checks);
        }
        checks.add(new HealthCheck("device_fatal", name, HealthStatus.UP, 0, -1, "no IBV_EVENT_DEVICE_FATAL"));
        for (int port = 1; port <= attributes.portCount(); port++) {
            checks.add(portHealth(port));
        }
        checks.addAll(readerHealth());
        checks.add(HealthThresholds.usage("ah_usage", name, "live AHs", liveAhCount(), attributes.maxAh(), "max_ah",
                thresholds.ahUsage()));
        checks.add(HealthThresholds.usage("pd_usage", name, "PDs", livePdCount(), attributes.maxPd(), "max_pd",
                thresholds.pdUsage()));
        return HealthReport.of(checks);
    }

    private HealthCheck portHealth(int port) {
        String subject = name() + " port " + port;
        try {
            PortAttributes p = port(port);
            boolean active = p.state() == PortAttributes.STATE_ACTIVE;
            return new HealthCheck("port_state", subject, active ? HealthStatus.UP : HealthStatus.DOWN, p.state(),
                    PortAttributes.STATE_ACTIVE, "PORT_" + p.stateName() + " (" + p.state() + ")"
                    + (active ? "" : "; AHs need PORT_ACTIVE (4)"));
        } catch (VerbsException e) {
            return new HealthCheck("port_state", subject, HealthStatus.DOWN, -1, PortAttributes.STATE_ACTIVE,
                    "ibv_query_port failed: " + e.getMessage());
        } catch (IllegalStateException e) {
            return new HealthCheck("port_state", subject, HealthStatus.DOWN, -1, PortAttributes.STATE_ACTIVE,
                    e.getMessage());
        }
    }

    void forget(CompletionQueue cq) {
        completionQueues.remove(cq);
    }

    /**
     * Whether the device is closed: every operation on it and its children is then refused.
     *
     * @return true once {@link #close()} has completed
     */
    public boolean isClosed() {
        return guard.isClosed();
    }

    /**
     * Closes the context ({@code ibv_close_device(3)}) after stopping the event reader, calling
     * the {@linkplain #addCloseListener close listeners}, and destroying what is still open under
     * it, in dependency order: QPs, then memory regions and AHs, then CQs, then PDs. Each child counts as closed even when its destroy fails (the
     * context's close frees it anyway) and refuses use from then on. Logs a warning for each PD
     * and CQ left open. Idempotent; may be called from an event listener. When the event reader
     * cannot be confirmed stopped (this thread was interrupted, or the reader's stop timed out or
     * failed), the context is not freed under it: {@code ibv_close_device} runs on the reader's
     * thread once the reader has freed its channel, and until then {@link #health} says the
     * context is not freed (a reader that never returns leaks it rather than have it freed in use).
     *
     * @throws VerbsException if a child or the context could not be freed; the first failure is
     *                        thrown after every other resource was tried, the rest are suppressed
     */
    @Override
    public void close() {
        /*
         * The event reader stops before the close takes the device's lock: a listener it is
         * running may be inside a call on this device (RoceNetwork re-reading GID netdevs on
         * GID_CHANGE), which needs that lock while the stop waits for the listener.
         */
        DeviceEventReader reader = eventReader;
        boolean stopped = true;
        RuntimeException stopFailure = null;
        if (reader != null) {
            try {
                stopped = reader.stop();
            } catch (RuntimeException e) {
                // Not known to be stopped: the reader may be inside a wait on the channel.
                stopped = false;
                stopFailure = e;
            }
        }
        boolean channelClosed = stopped;
        RuntimeException stopFailed = stopFailure;
        RuntimeException[] failure = {stopFailure};
        boolean closedNow = guard.close(() -> {
            List<Consumer<? super Device>> listeners;
            synchronized (listenerLock) {
                listenersTaken = true;
                listeners = List.copyOf(closeListeners);
                closeListeners.clear();
            }
            for (Consumer<? super Device> listener : listeners) {
                try {
                    listener.accept(this);
                } catch (Throwable t) {
                    LOG.error("device {}: a close listener failed", name(), t);
                }
            }
            List<ProtectionDomain> pds = new ArrayList<>(protectionDomains);
            for (ProtectionDomain pd : pds) {
                LOG.warn("device {} closed with a PD still allocated ({} AHs, {} QPs and memory regions in it): freeing them",
                        name(), pd.liveAhCount(), pd.liveResourceCount());
                failure[0] = pd.closeQueuePairsUnderDevice(failure[0]);
            }
            for (ProtectionDomain pd : pds) {
                failure[0] = pd.closeMemoryAndAhsUnderDevice(failure[0]);
            }
            for (CompletionQueue cq : new ArrayList<>(completionQueues)) {
                LOG.warn("device {} closed with a CQ still open: destroying it", name());
                failure[0] = chain(failure[0], cq.closeUnderDevice());
            }
            completionQueues.clear();
            for (ProtectionDomain pd : pds) {
                failure[0] = pd.deallocateUnderDevice(failure[0]);
            }
            protectionDomains.clear();
            if (channelClosed) {
                try {
                    provider.closeDevice(context);
                } catch (RuntimeException e) {
                    failure[0] = chain(failure[0], e);
                }
                contextFreed = true;
            } else {
                /*
                 * The reader is not known to have freed its channel (the stop was interrupted,
                 * timed out or failed): it may still be waiting on the context's async_fd or
                 * freeing the channel (fcntl on that fd). ibv_close_device frees the context and
                 * closes that fd at once, whoever still uses them, and rdma-core offers no way to
                 * cancel a thread inside a call on them; so the context is left allocated until
                 * the reader's channel free has returned, and freed right after on the reader's
                 * thread. A reader that never returns leaks the context: that is logged here and
                 * shown by health(), never traded for a free under a user.
                 */
                if (Thread.currentThread().isInterrupted() && stopFailed == null) {
                    LOG.info("device {}: closed by an interrupted thread before its event reader stopped; the context "
                            + "is freed (ibv_close_device) when the reader has freed its channel", name());
                } else {
                    LOG.warn("device {}: its event reader is not known to have stopped{}; the context stays allocated "
                            + "and is freed (ibv_close_device) when the reader has freed its channel", name(),
                            stopFailed == null ? "" : " (its stop failed: " + stopFailed + ")");
                }
                reader.runAfterClose(() -> {
                    try {
                        provider.closeDevice(context);
                    } catch (RuntimeException e) {
                        LOG.error("device {}: ibv_close_device failed", name(), e);
                    } finally {
                        contextFreed = true;
                    }
                });
            }
        });
        if (closedNow && failure[0] != null) {
            throw failure[0];
        }
    }

    static RuntimeException chain(RuntimeException first, RuntimeException next) {
        if (first == null) {
            return next;
        }
        if (next != null && next != first) {
            first.addSuppressed(next);
        }
        return first;
    }

    /**
     * Closes {@code guard} with {@code release}, counting it closed even when the release fails:
     * for children freed by a forced device close. Returns the failure, or null.
     */
    static RuntimeException closeAnyway(Guard guard, Runnable release) {
        RuntimeException[] failure = {null};
        guard.close(() -> {
            try {
                release.run();
            } catch (RuntimeException e) {
                failure[0] = e;
            }
        });
        return failure[0];
    }

    @Override
    public String toString() {
        return "Device[" + name() + " via " + provider.name() + "]";
    }
}
