package org.efaah.verbs;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An open verbs device context ({@code struct ibv_context}): the owner of its protection
 * domains, which own their AHs.
 *
 * <p>Opened with {@link #open(VerbsProvider, String)}; device and port attributes are read once at
 * open. {@link #close()} destroys children before parents: the AHs of each remaining PD, then the
 * PDs, then the context, and logs what was left open. Closing never passes a freed handle to the
 * provider, and a closed device refuses further use with {@link IllegalStateException}.
 *
 * <p>Thread-safe.
 */
public final class Device implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Device.class);

    private final VerbsProvider provider;
    private final long context;
    private final DeviceAttributes attributes;
    private final int[] gidTableLengths;
    private final Guard guard;
    private final Set<ProtectionDomain> protectionDomains = ConcurrentHashMap.newKeySet();
    private final List<Consumer<? super DeviceEvent>> eventListeners = new CopyOnWriteArrayList<>();

    private Device(VerbsProvider provider, long context, DeviceAttributes attributes, int[] gidTableLengths) {
        this.provider = provider;
        this.context = context;
        this.attributes = attributes;
        this.gidTableLengths = gidTableLengths;
        this.guard = new Guard("device " + attributes.name());
    }

    /**
     * Opens the device called {@code name} ({@code ibv_open_device(3)}) and reads its attributes.
     *
     * @throws NullPointerException     if an argument is null
     * @throws IllegalArgumentException if the provider lists no device of that name
     * @throws VerbsException           if the provider fails to open or query it
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
            for (int port = 1; port <= attributes.portCount(); port++) {
                lengths[port] = provider.queryPort(context, port).gidTableLength();
            }
            return new Device(provider, context, attributes, lengths);
        } catch (RuntimeException e) {
            try {
                provider.closeDevice(context);
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    /** Opens the first device the provider lists. */
    public static Device openFirst(VerbsProvider provider) {
        List<String> names = provider.deviceNames();
        if (names.isEmpty()) {
            throw new VerbsException("ibv_get_device_list", Errno.ENODEV, "no device present");
        }
        return open(provider, names.get(0));
    }

    public String name() {
        return attributes.name();
    }

    /** The attributes read at open. */
    public DeviceAttributes attributes() {
        return attributes;
    }

    /** Whether this is an EFA device, which keys AHs by destination GID alone. */
    public boolean isEfa() {
        return attributes.efa();
    }

    /** The provider serving this device. */
    public VerbsProvider provider() {
        return provider;
    }

    /**
     * Queries port {@code portNum} now ({@code ibv_query_port(3)}).
     *
     * @throws IllegalArgumentException if the port is not 1..port count
     */
    public PortAttributes port(int portNum) {
        checkPort(portNum);
        return guard.get(() -> provider.queryPort(context, portNum));
    }

    /**
     * The GID at {@code index} of port {@code portNum}'s table ({@code ibv_query_gid(3)}).
     *
     * @throws IllegalArgumentException if the port or index is out of range
     */
    public Gid gid(int portNum, int index) {
        checkPort(portNum);
        checkSgidIndex(portNum, index);
        return guard.get(() -> provider.queryGid(context, portNum, index));
    }

    /**
     * Checks the fields of {@code attributes} that depend on this device: {@code port_num} within
     * 1..port count, {@code sgid_index} within the port's GID table, and on EFA a global AH.
     *
     * @throws IllegalArgumentException naming the field, the value and the valid range
     */
    public void validate(AddressHandleAttributes attributes) {
        int port = attributes.portNum();
        checkPort(port);
        if (isEfa() && !attributes.isGlobal()) {
            throw new IllegalArgumentException("is_global: 0; EFA addresses every AH by its dgid, so is_global must be 1");
        }
        if (attributes.isGlobal()) {
            checkSgidIndex(port, attributes.sgidIndex());
        }
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
            throw new IllegalArgumentException("sgid_index: " + index + " is out of range; valid 0.."
                    + (length - 1) + " (gid_tbl_len of " + name() + " port " + portNum + ")");
        }
    }

    /**
     * Allocates a protection domain ({@code ibv_alloc_pd(3)}).
     *
     * @throws IllegalStateException if the device is closed
     * @throws VerbsException        if the provider fails
     */
    public ProtectionDomain allocatePd() {
        return guard.get(() -> {
            ProtectionDomain pd = new ProtectionDomain(this, provider.allocatePd(context));
            protectionDomains.add(pd);
            return pd;
        });
    }

    /**
     * Creates a completion queue ({@code ibv_create_cq(3)}) of {@code entries} CQEs, 1..65536.
     *
     * @throws UnsupportedOperationException if the provider has no datagram path
     */
    public CompletionQueue createCq(int entries) {
        Ranges.check("cqe", entries, 1, 65536);
        return guard.get(() -> new CompletionQueue(this, provider.createCq(context, entries), entries));
    }

    /**
     * The attributes of an AH back to the sender of a received UD completion
     * ({@code ibv_init_ah_from_wc(3)}); the 40-byte GRH is at {@code grhOffset} in {@code mr}.
     */
    public AddressHandleAttributes initAhFromWc(int portNum, WorkCompletion wc, MemoryRegion mr, int grhOffset) {
        checkPort(portNum);
        mr.checkRange(grhOffset, 40);
        return guard.get(() -> mr.guard().get(() -> provider.initAhFromWc(context, portNum, wc, mr.handle, grhOffset)));
    }

    /**
     * Registers {@code listener} for this device's asynchronous events ({@code ibv_get_async_event(3)}).
     * Listeners run on the device's event thread, one event at a time, in registration order; they
     * must not block. A listener that throws is logged and does not stop the others.
     */
    public void addEventListener(Consumer<? super DeviceEvent> listener) {
        eventListeners.add(Objects.requireNonNull(listener, "listener"));
    }

    /** Removes a listener added with {@link #addEventListener}; harmless if it is not there. */
    public void removeEventListener(Consumer<? super DeviceEvent> listener) {
        eventListeners.remove(listener);
    }

    /** Hands {@code event} to every listener; called by the device's event reader. */
    void publish(DeviceEvent event) {
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

    public boolean isClosed() {
        return guard.isClosed();
    }

    /**
     * Closes the context ({@code ibv_close_device(3)}) after destroying what is still open under it,
     * children first, logging a warning for each PD left open. Idempotent.
     *
     * @throws VerbsException if a child or the context could not be freed; the first failure is
     *                        thrown after every other resource was tried, the rest are suppressed
     */
    @Override
    public void close() {
        RuntimeException[] failure = {null};
        // The device counts as closed even when a child could not be freed: the kernel frees what
        // is left when the context goes, and nothing may use it afterwards.
        guard.close(() -> {
            for (ProtectionDomain pd : new ArrayList<>(protectionDomains)) {
                LOG.warn("device {} closed with a PD still allocated ({} AHs in it): destroying them", name(),
                        pd.liveAhCount());
                try {
                    pd.closeForcibly();
                } catch (RuntimeException e) {
                    failure[0] = chain(failure[0], e);
                }
            }
            try {
                provider.closeDevice(context);
            } catch (RuntimeException e) {
                failure[0] = chain(failure[0], e);
            }
        });
        if (failure[0] != null) {
            throw failure[0];
        }
    }

    static RuntimeException chain(RuntimeException first, RuntimeException next) {
        if (first == null) {
            return next;
        }
        first.addSuppressed(next);
        return first;
    }

    @Override
    public String toString() {
        return "Device[" + name() + " via " + provider.name() + "]";
    }
}
