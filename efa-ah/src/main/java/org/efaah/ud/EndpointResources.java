package org.efaah.ud;

import java.nio.ByteBuffer;
import org.efaah.verbs.CompletionQueue;
import org.efaah.verbs.Device;
import org.efaah.verbs.Errno;
import org.efaah.verbs.MemoryRegion;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.UdQueuePair;
import org.efaah.verbs.VerbsException;

/**
 * An endpoint's verbs objects: the send and receive CQs, the registered send and receive memory,
 * and the QP; made parents first, destroyed children first. Takes no lock: the endpoint opens
 * them before it is shared, and closes them, or a recovery remakes the QP and its CQs
 * ({@code closeQp}, {@link #closeCqs()}, {@link #remakeQpAndCqs()}), with both its locks held.
 */
final class EndpointResources {
    private final ProtectionDomain pd;
    private final QpSettings options;
    private final int rnrRetry;
    volatile CompletionQueue sendCq;
    volatile CompletionQueue receiveCq;
    final MemoryRegion sendMemory;
    final MemoryRegion receiveMemory;
    volatile UdQueuePair qp;

    private EndpointResources(ProtectionDomain pd, QpSettings options, int rnrRetry, CompletionQueue sendCq,
                              CompletionQueue receiveCq, MemoryRegion sendMemory, MemoryRegion receiveMemory,
                              UdQueuePair qp) {
        this.pd = pd;
        this.options = options;
        this.rnrRetry = rnrRetry;
        this.sendCq = sendCq;
        this.receiveCq = receiveCq;
        this.sendMemory = sendMemory;
        this.receiveMemory = receiveMemory;
        this.qp = qp;
    }

    /**
     * Creates them all, with the QP ready to send and every receive slot posted (generation 0).
     * On a failure, destroys those already made and rethrows.
     */
    static EndpointResources open(ProtectionDomain pd, QpSettings options, int maxMessageSize,
                                  int receiveSlotSize, int rnrRetry) {
        Device device = pd.device();
        CompletionQueue scq = null;
        CompletionQueue rcq = null;
        MemoryRegion smr = null;
        MemoryRegion rmr = null;
        UdQueuePair q = null;
        try {
            scq = cqWithEvents(device, options.sendDepth());
            rcq = receiveCq(device, options.receiveDepth());
            smr = pd.registerMemory(ByteBuffer.allocateDirect(options.sendDepth() * maxMessageSize));
            // One slot more than the receive depth: scratch space for a GRH handed to ibv_init_ah_from_wc.
            rmr = pd.registerMemory(ByteBuffer.allocateDirect((options.receiveDepth() + 1) * receiveSlotSize));
            q = pd.createQp(options.transport(), scq, rcq, options.sendDepth(), options.receiveDepth());
            q.activate(options.portNum(), 0, options.qkey(), rnrRetry);
            for (int i = 0; i < options.receiveDepth(); i++) {
                q.postReceive(rmr, i * receiveSlotSize, receiveSlotSize, i);
            }
        } catch (RuntimeException e) {
            closeAll(e, q, rmr, smr, rcq, scq);
            throw e;
        }
        return new EndpointResources(pd, options, rnrRetry, scq, rcq, smr, rmr, q);
    }

    /**
     * After {@code closeQp} and {@link #closeCqs()}: new CQs of the same kinds and a new QP in RTS,
     * with no receive posted; the memory stays. On a failure those made are destroyed, the old
     * (closed) ones stay in place, and it can be called again.
     */
    void remakeQpAndCqs() {
        Device device = pd.device();
        CompletionQueue scq = null;
        CompletionQueue rcq = null;
        UdQueuePair q = null;
        try {
            scq = cqWithEvents(device, options.sendDepth());
            rcq = receiveCq(device, options.receiveDepth());
            q = pd.createQp(options.transport(), scq, rcq, options.sendDepth(), options.receiveDepth());
            q.activate(options.portNum(), 0, options.qkey(), rnrRetry);
        } catch (RuntimeException e) {
            closeAll(e, q, rcq, scq);
            throw e;
        }
        sendCq = scq;
        receiveCq = rcq;
        qp = q;
    }

    /** Destroys both CQs (after the QP), unless they are already; throws the first failure. */
    void closeCqs() {
        RuntimeException failure = closeAll(null, receiveCq, sendCq);
        if (failure != null) {
            throw failure;
        }
    }

    /**
     * On EFA a CQ whose completions carry the GID of a sender this PD has no AH for; where the
     * device cannot do that, a plain one (such senders then arrive as {@link SourceOrigin#UNKNOWN}).
     * Each with a completion channel where the provider and device allow, else without (polled):
     * the sender's GID matters more than the channel.
     */
    private static CompletionQueue receiveCq(Device device, int entries) {
        if (device.isEfa()) {
            CompletionQueue cq = unlessUnsupported(() -> device.createCqWithSourceGidAndEvents(entries));
            if (cq == null) {
                cq = unlessUnsupported(() -> device.createCqWithSourceGid(entries));
            }
            if (cq != null) {
                return cq;
            }
        }
        return cqWithEvents(device, entries);
    }

    /** A CQ with a completion channel, or a polled one where the provider or device has none. */
    private static CompletionQueue cqWithEvents(Device device, int entries) {
        CompletionQueue cq = unlessUnsupported(() -> device.createCqWithEvents(entries));
        return cq != null ? cq : device.createCq(entries);
    }

    /** The CQ made, or null when the provider or device answers EOPNOTSUPP. */
    private static CompletionQueue unlessUnsupported(java.util.function.Supplier<CompletionQueue> create) {
        try {
            return create.get();
        } catch (VerbsException e) {
            if (e.errno() != Errno.EOPNOTSUPP) {
                throw e;
            }
            return null;
        }
    }

    /** Destroys the QP unless it is already; returns {@code failure} with its failure added. */
    RuntimeException closeQp(RuntimeException failure) {
        return closeAll(failure, qp);
    }

    boolean qpClosed() {
        return qp.isClosed();
    }

    /** Destroys the memory and the CQs (after the QP); returns {@code failure} with theirs added. */
    RuntimeException closeRest(RuntimeException failure) {
        return closeAll(failure, receiveMemory, sendMemory, receiveCq, sendCq);
    }

    private static RuntimeException closeAll(RuntimeException failure, AutoCloseable... resources) {
        for (AutoCloseable r : resources) {
            if (r == null) {
                continue;
            }
            try {
                r.close();
            } catch (RuntimeException e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }
        return failure;
    }
}
