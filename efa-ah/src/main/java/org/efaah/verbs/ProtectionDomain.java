package org.efaah.verbs;

import org.efaah.internal.Ranges;
import org.efaah.verbs.spi.CreatedAh;
import org.efaah.verbs.spi.QueuePairNumbers;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * A protection domain ({@code struct ibv_pd}), allocated by {@link Device#allocatePd()}.
 *
 * <p>Identity matters: two PDs are never equal, even when a provider reuses a native address
 * after {@code ibv_dealloc_pd}, so objects of this class are safe cache keys.
 *
 * <p>{@link #close()} behaves like {@code ibv_dealloc_pd(3)} on a kernel: while any AH made in
 * this PD exists it refuses with EBUSY and the PD stays usable. Its AHs, memory regions and QPs
 * are registered here, so that a forced {@link Device#close()} frees them before the PD and none
 * is used afterwards. Thread-safe.
 */
public final class ProtectionDomain implements AutoCloseable {
    private final Device device;
    private final long handle;
    private final Guard guard;
    // The AHs that exist, as a list through the AHs themselves (HardwareAddressHandle's links,
    // guarded by ahLock): a million peers cost no map node each. Adding and removing are O(1),
    // once per create and destroy; only a forced device close walks it.
    private final Object ahLock = new Object();
    private HardwareAddressHandle firstAh; // guarded by ahLock
    private int liveAhs;                   // guarded by ahLock
    private final Set<MemoryRegion> memoryRegions = ConcurrentHashMap.newKeySet();
    private final Set<UdQueuePair> queuePairs = ConcurrentHashMap.newKeySet();
    private final AhnGenerations ahns = new AhnGenerations();

    ProtectionDomain(Device device, long handle) {
        this.device = device;
        this.handle = handle;
        this.guard = new Guard("protection domain");
    }

    /** "PD 0x..." with the provider's handle, for failure messages. */
    String describe() {
        return "PD 0x" + Long.toHexString(handle);
    }

    /**
     * Runs the creation of a child under this PD's guard and the device's, so that no child is
     * made while either is being closed, nor on a device that reported a fatal event.
     */
    private <T> T creating(String verb, Supplier<T> create) {
        return device.creating(verb, () -> guard.get(create));
    }

    /** {@return the device this PD belongs to} */
    public Device device() {
        return device;
    }

    /**
     * Creates a hardware AH ({@code ibv_create_ah(3)}, plus {@code efadv_query_ah} on EFA). Every
     * call reaches the provider: deduplication is the job of
     * {@code org.efaah.cache.AddressHandleCache}, which applications should use instead.
     *
     * <p>On EFA, what an AH made here outside the cache costs a {@code UdEndpoint} of this PD: the
     * device names a sender by the AHN of this PD's AH for it, whoever made that AH, and the cache
     * names only its own, so a datagram that arrives while this AH is the PD's AH for its sender
     * is delivered with its sender UNKNOWN (the completion carries no GID then). And every create
     * in the PD that returns an AHN already given in it (a number freed by a destroy and given
     * again, or the kernel's cached AH for a GID the cache also holds) makes the datagrams already
     * received under that AHN UNKNOWN until the receiver's next call, as does every first create
     * of an AHN once a create in this PD has failed (it may have made an AH with a number never
     * reported). No datagram is ever credited to the wrong peer ({@link #ahnUnchangedSince}).
     *
     * @throws NullPointerException     if {@code attributes} is null
     * @throws IllegalArgumentException if a device-dependent field is out of range
     * @throws IllegalStateException    if this PD is closed
     * @throws VerbsException           if the provider refuses (ENOMEM at max_ah, EINVAL on a
     *                                  duplicate on strict EFA hardware, ...)
     * @param attributes the {@code ibv_ah_attr} fields; sgid_index is resolved for the device when not given
     * @return the new AH, owned by this PD; destroy it (or close the PD) when done
     */
    public HardwareAddressHandle createAh(AddressHandleAttributes attributes) {
        java.util.Objects.requireNonNull(attributes, "attributes");
        AddressHandleAttributes resolved = device.resolve(attributes);
        device.validate(resolved);
        return creating("ibv_create_ah", () -> {
            CreatedAh created;
            try {
                created = device.provider().createAh(handle, resolved);
            } catch (VerbsException e) {
                ahns.createFailed();
                throw e.withContext(FailureContext.createAh(this, resolved, e));
            } catch (RuntimeException | Error e) {
                ahns.createFailed();
                throw e;
            }
            if (created.ahn() != CreatedAh.NO_AHN) {
                ahns.given(created.ahn()); // before anyone can index the AH, or destroy it
            }
            HardwareAddressHandle ah = new HardwareAddressHandle(this, created.handle(), created.ahn(), resolved);
            link(ah);
            return ah;
        });
    }

    /**
     * Registers a direct buffer's whole capacity for local access ({@code ibv_reg_mr(3)}).
     *
     * @throws IllegalArgumentException if the buffer is not direct or is empty
     * @param buffer a direct, non-empty buffer; kept reachable by the region until it is deregistered
     * @return the new region, owned by this PD
     * @throws NullPointerException     if {@code buffer} is null
     * @throws IllegalStateException    if this PD is closed
     * @throws VerbsException           ENOMEM or EPERM past {@code RLIMIT_MEMLOCK}, or another provider errno
     */
    public MemoryRegion registerMemory(java.nio.ByteBuffer buffer) {
        java.util.Objects.requireNonNull(buffer, "buffer");
        if (!buffer.isDirect() || buffer.capacity() == 0) {
            throw new IllegalArgumentException("buffer: must be a non-empty direct ByteBuffer");
        }
        return creating("ibv_reg_mr", () -> {
            long mrHandle;
            try {
                mrHandle = device.provider().datagrams().registerMemory(handle, buffer);
            } catch (VerbsException e) {
                throw e.withContext(FailureContext.resource(device, this));
            }
            MemoryRegion mr = new MemoryRegion(this, mrHandle, buffer);
            memoryRegions.add(mr);
            return mr;
        });
    }

    /**
     * Creates an Unreliable Datagram QP ({@code ibv_create_qp(3)}, {@code IBV_QPT_UD}) in RESET.
     *
     * @param maxSendWr most sends outstanding, 1..8192
     * @param maxRecvWr most receives posted, 1..8192
     * @param sendCq    the CQ for send completions, on this PD's device
     * @param recvCq    the CQ for receive completions, on this PD's device (may be {@code sendCq})
     * @return the new QP in RESET; {@link UdQueuePair#activate} makes it usable
     * @throws IllegalArgumentException if a size is out of range or a CQ is on another device
     * @throws IllegalStateException    if this PD or a CQ is closed
     * @throws VerbsException           if the provider refuses (EOPNOTSUPP without a datagram path)
     */
    public UdQueuePair createUdQp(CompletionQueue sendCq, CompletionQueue recvCq, int maxSendWr, int maxRecvWr) {
        return createQp(QueuePairType.UD, sendCq, recvCq, maxSendWr, maxRecvWr);
    }

    /**
     * Creates a QP of {@code type} in RESET: UD through {@code ibv_create_qp(3)}, SRD through
     * {@code efadv_create_qp_ex(3)}. Activation, posting and destroying are the same for both.
     *
     * @param maxSendWr most sends outstanding, 1..8192
     * @param maxRecvWr most receives posted, 1..8192
     * @throws VerbsException EOPNOTSUPP, naming the device, for SRD on a device that is not EFA
     * @param type      UD or SRD
     * @param sendCq    the CQ for send completions, on this PD's device
     * @param recvCq    the CQ for receive completions, on this PD's device (may be {@code sendCq})
     * @return the new QP in RESET
     * @throws NullPointerException     if an argument is null
     * @throws IllegalArgumentException if a size is out of range or a CQ is on another device
     * @throws IllegalStateException    if this PD or a CQ is closed
     */
    public UdQueuePair createQp(QueuePairType type, CompletionQueue sendCq, CompletionQueue recvCq, int maxSendWr,
                                int maxRecvWr) {
        java.util.Objects.requireNonNull(type, "type");
        java.util.Objects.requireNonNull(sendCq, "sendCq");
        java.util.Objects.requireNonNull(recvCq, "recvCq");
        Ranges.check("max_send_wr", maxSendWr, 1, 8192);
        Ranges.check("max_recv_wr", maxRecvWr, 1, 8192);
        boolean srd = type == QueuePairType.SRD;
        String verb = srd ? "efadv_create_qp_ex" : "ibv_create_qp";
        if (srd && !device.isEfa()) {
            throw new VerbsException(verb, Errno.EOPNOTSUPP,
                    "SRD needs an EFA device; " + device.name() + " is not one (use UD)");
        }
        if (sendCq.device() != device || recvCq.device() != device) {
            throw new IllegalArgumentException("cq: belongs to another device than this PD");
        }
        return creating(verb, () -> sendCq.guard().get(() -> recvCq.guard().get(() -> {
            QueuePairNumbers created;
            try {
                if (srd) {
                    device.provider().datagrams(); // an SRD QP is posted to and destroyed through it: without it, none
                }
                created = srd
                        ? device.provider().efa().createSrdQp(handle, sendCq.handle, recvCq.handle, maxSendWr, maxRecvWr)
                        : device.provider().datagrams().createUdQp(handle, sendCq.handle, recvCq.handle, maxSendWr, maxRecvWr);
            } catch (VerbsException e) {
                throw e.withContext(FailureContext.resource(device, this));
            }
            UdQueuePair qp = new UdQueuePair(this, created.handle(), created.qpn(),
                    srd ? QueuePairType.SRD : QueuePairType.UD);
            queuePairs.add(qp);
            return qp;
        })));
    }

    /**
     * A mark for {@link #ahnUnchangedSince}: a count, over every PD of this process, of the
     * creates that returned an AHN already given in their PD. It only grows, from 0. One volatile
     * read, no lock. Thread-safe.
     *
     * @return the count now, 0 or more
     */
    public static long ahnMark() {
        return AhnGenerations.GIVEN.get();
    }

    /**
     * On EFA, whether the AH of this PD that has AHN {@code ahn} now is the one that had it when
     * {@code mark} was read: true if no create in this PD returned that AHN after the mark, or
     * only its first create in this PD did and no create in it had failed. Exact for every AH
     * made in this PD (all are made by {@link #createAh}, whoever calls it): with a mark read
     * before the device wrote {@code wc.slid}, true means the AH holding that AHN now (if any)
     * is the one the device named. Lock-free. Thread-safe.
     *
     * @param ahn  the AH number, 0..0xFFFE; another value answers false
     * @param mark a value {@link #ahnMark()} returned
     * @return whether the AHN has named one AH of this PD since the mark
     */
    public boolean ahnUnchangedSince(int ahn, long mark) {
        return ahns.unchangedSince(ahn, mark);
    }

    /** Called by {@link HardwareAddressHandle#destroy()} with the AH's own lock held. */
    void destroyAh(HardwareAddressHandle ah) {
        device.provider().destroyAh(ah.handleForProvider());
        unlink(ah);
    }

    private void link(HardwareAddressHandle ah) {
        synchronized (ahLock) {
            ah.nextInPd = firstAh;
            if (firstAh != null) {
                firstAh.prevInPd = ah;
            }
            firstAh = ah;
            liveAhs++;
        }
    }

    private void unlink(HardwareAddressHandle ah) {
        synchronized (ahLock) {
            if (ah.prevInPd == null && firstAh != ah) {
                return; // not listed (any more)
            }
            if (ah.prevInPd == null) {
                firstAh = ah.nextInPd;
            } else {
                ah.prevInPd.nextInPd = ah.nextInPd;
            }
            if (ah.nextInPd != null) {
                ah.nextInPd.prevInPd = ah.prevInPd;
            }
            ah.prevInPd = null;
            ah.nextInPd = null;
            liveAhs--;
        }
    }

    /** The AHs that exist now, a copy. */
    private List<HardwareAddressHandle> liveAhList() {
        synchronized (ahLock) {
            List<HardwareAddressHandle> all = new ArrayList<>(liveAhs);
            for (HardwareAddressHandle ah = firstAh; ah != null; ah = ah.nextInPd) {
                all.add(ah);
            }
            return all;
        }
    }

    Guard guard() {
        return guard;
    }

    /** {@return how many AHs made in this PD still exist} */
    public int liveAhCount() {
        synchronized (ahLock) {
            return liveAhs;
        }
    }

    /**
     * Whether the PD is closed: creating in it is then refused.
     *
     * @return true once deallocated (or freed with its device)
     */
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
            int ahs = liveAhCount();
            if (ahs != 0) {
                throw new VerbsException("ibv_dealloc_pd", Errno.EBUSY,
                        ahs + " AH(s) of this PD still exist; close them (or the cache holding them) first");
            }
            device.provider().deallocatePd(handle);
            device.forget(this);
        });
    }

    void forget(MemoryRegion mr) {
        memoryRegions.remove(mr);
    }

    void forget(UdQueuePair qp) {
        queuePairs.remove(qp);
    }

    /** How many memory regions and QPs of this PD are still open. */
    int liveResourceCount() {
        return memoryRegions.size() + queuePairs.size();
    }

    /** First step of a forced device close: the QPs, which use the MRs, AHs and CQs. */
    RuntimeException closeQueuePairsUnderDevice(RuntimeException failure) {
        for (UdQueuePair qp : new ArrayList<>(queuePairs)) {
            failure = Device.chain(failure, qp.closeUnderDevice());
        }
        queuePairs.clear();
        return failure;
    }

    /** Second step of a forced device close, once no QP can use them: the MRs and the AHs. */
    RuntimeException closeMemoryAndAhsUnderDevice(RuntimeException failure) {
        for (MemoryRegion mr : new ArrayList<>(memoryRegions)) {
            failure = Device.chain(failure, mr.closeUnderDevice());
        }
        memoryRegions.clear();
        for (HardwareAddressHandle ah : liveAhList()) {
            failure = Device.chain(failure, ah.destroyUnderDevice());
            unlink(ah); // freed with the context, whatever the provider said
        }
        return failure;
    }

    /**
     * Last step of a forced device close, after its CQs: deallocates the PD (and, should a child
     * have escaped the earlier steps, that child first), counting it closed whatever the provider
     * says, since the context's close frees it anyway.
     */
    RuntimeException deallocateUnderDevice(RuntimeException failure) {
        RuntimeException[] result = {failure};
        Device.closeAnyway(guard, () -> {
            result[0] = closeMemoryAndAhsUnderDevice(closeQueuePairsUnderDevice(result[0]));
            try {
                device.provider().deallocatePd(handle);
            } catch (RuntimeException e) {
                result[0] = Device.chain(result[0], e);
            }
        });
        return result[0];
    }

    @Override
    public String toString() {
        return "ProtectionDomain@" + Integer.toHexString(System.identityHashCode(this)) + "[" + device.name() + "]";
    }
}
