package org.efaah.verbs;

import java.util.ArrayList;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A protection domain ({@code struct ibv_pd}), allocated by {@link Device#allocatePd()}.
 *
 * <p>Identity matters: two PDs are never equal, even when a provider reuses a native address
 * after {@code ibv_dealloc_pd}, so objects of this class are safe cache keys.
 *
 * <p>{@link #close()} behaves like {@code ibv_dealloc_pd(3)} on a kernel: while any AH made in
 * this PD exists it refuses with EBUSY and the PD stays usable. Thread-safe.
 */
public final class ProtectionDomain implements AutoCloseable {
    private final Device device;
    private final long handle;
    private final Guard guard = new Guard("protection domain");
    private final Set<HardwareAddressHandle> liveAhs = ConcurrentHashMap.newKeySet();

    ProtectionDomain(Device device, long handle) {
        this.device = device;
        this.handle = handle;
    }

    /** The device this PD belongs to. */
    public Device device() {
        return device;
    }

    /**
     * Creates a hardware AH ({@code ibv_create_ah(3)}, plus {@code efadv_query_ah} on EFA). Every
     * call reaches the provider: deduplication is the job of
     * {@code org.efaah.cache.AddressHandleCache}, which applications should use instead.
     *
     * @throws NullPointerException     if {@code attributes} is null
     * @throws IllegalArgumentException if a device-dependent field is out of range
     * @throws IllegalStateException    if this PD is closed
     * @throws VerbsException           if the provider refuses (ENOMEM at max_ah, EINVAL on a
     *                                  duplicate on strict EFA hardware, ...)
     */
    public HardwareAddressHandle createAh(AddressHandleAttributes attributes) {
        java.util.Objects.requireNonNull(attributes, "attributes");
        device.validate(attributes);
        return guard.get(() -> {
            CreatedAh created = device.provider().createAh(handle, attributes);
            HardwareAddressHandle ah = new HardwareAddressHandle(this, created.handle(), created.ahn(), attributes);
            liveAhs.add(ah);
            return ah;
        });
    }

    /**
     * Registers a direct buffer's whole capacity for local access ({@code ibv_reg_mr(3)}).
     *
     * @throws IllegalArgumentException if the buffer is not direct or is empty
     */
    public MemoryRegion registerMemory(java.nio.ByteBuffer buffer) {
        java.util.Objects.requireNonNull(buffer, "buffer");
        if (!buffer.isDirect() || buffer.capacity() == 0) {
            throw new IllegalArgumentException("buffer: must be a non-empty direct ByteBuffer");
        }
        return guard.get(() -> new MemoryRegion(this, device.provider().registerMemory(handle, buffer), buffer));
    }

    /**
     * Creates an Unreliable Datagram QP ({@code ibv_create_qp(3)}, {@code IBV_QPT_UD}) in RESET.
     *
     * @param maxSendWr most sends outstanding, 1..8192
     * @param maxRecvWr most receives posted, 1..8192
     */
    public UdQueuePair createUdQp(CompletionQueue sendCq, CompletionQueue recvCq, int maxSendWr, int maxRecvWr) {
        java.util.Objects.requireNonNull(sendCq, "sendCq");
        java.util.Objects.requireNonNull(recvCq, "recvCq");
        Ranges.check("max_send_wr", maxSendWr, 1, 8192);
        Ranges.check("max_recv_wr", maxRecvWr, 1, 8192);
        if (sendCq.device() != device || recvCq.device() != device) {
            throw new IllegalArgumentException("cq: belongs to another device than this PD");
        }
        return guard.get(() -> sendCq.guard().get(() -> recvCq.guard().get(() -> {
            QueuePairNumbers created = device.provider().createUdQp(handle, sendCq.handle, recvCq.handle, maxSendWr,
                    maxRecvWr);
            return new UdQueuePair(this, created.handle(), created.qpn());
        })));
    }

    /** Called by {@link HardwareAddressHandle#destroy()} with the AH's own lock held. */
    void destroyAh(HardwareAddressHandle ah) {
        device.provider().destroyAh(ah.handleForProvider());
        liveAhs.remove(ah);
    }

    Guard guard() {
        return guard;
    }

    /** How many AHs made in this PD still exist. */
    public int liveAhCount() {
        return liveAhs.size();
    }

    public boolean isClosed() {
        return guard.isClosed();
    }

    /**
     * Deallocates the PD ({@code ibv_dealloc_pd(3)}). Idempotent.
     *
     * @throws VerbsException EBUSY while AHs of this PD exist (the PD stays open), or the
     *                        provider's error
     */
    @Override
    public void close() {
        guard.close(() -> {
            if (!liveAhs.isEmpty()) {
                throw new VerbsException("ibv_dealloc_pd", Errno.EBUSY,
                        liveAhs.size() + " AH(s) of this PD still exist; close them (or the cache holding them) first");
            }
            device.provider().deallocatePd(handle);
            device.forget(this);
        });
    }

    /** For {@link Device#close()}: destroys the remaining AHs, then deallocates. */
    void closeForcibly() {
        guard.close(() -> {
            RuntimeException failure = null;
            for (HardwareAddressHandle ah : new ArrayList<>(liveAhs)) {
                try {
                    ah.destroyIfLive();
                } catch (RuntimeException e) {
                    failure = Device.chain(failure, e);
                }
            }
            if (failure != null) {
                // The PD cannot go while an AH in it is still held by the device.
                throw failure;
            }
            device.provider().deallocatePd(handle);
            device.forget(this);
        });
    }

    @Override
    public String toString() {
        return "ProtectionDomain@" + Integer.toHexString(System.identityHashCode(this)) + "[" + device.name() + "]";
    }
}
