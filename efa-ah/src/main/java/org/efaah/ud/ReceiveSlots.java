package org.efaah.ud;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import org.efaah.verbs.CompletionQueue;
import org.efaah.verbs.MemoryRegion;
import org.efaah.verbs.UdQueuePair;
import org.efaah.verbs.WorkCompletion;

/**
 * An endpoint's receive side: the registered receive slots (a GRH area plus the largest message
 * each), the receive CQ's completions, copying a datagram out and reposting its slot, and the
 * receive counters.
 *
 * <p>Locks: {@link #lock} (the endpoint's receive lock; taken after the send lock when both are
 * needed) guards the CQ poll and the reposts. Every method does one step and returns; none
 * waits. The endpoint's {@code receive} waits between polls with no lock held.
 */
final class ReceiveSlots {
    final ReentrantLock lock = new ReentrantLock();
    private final UdEndpoint endpoint;
    private final QpRecovery recovery;
    private final UdQueuePair qp;
    private final CompletionQueue receiveCq;
    private final MemoryRegion receiveMemory;
    private final int depth;
    private final int slotSize;
    private final SourceResolver resolver;
    private final boolean efa;
    private final WorkCompletion[] completion = {new WorkCompletion()};
    // Written under the lock, read without it.
    private final AtomicLong received = new AtomicLong();
    private final AtomicLong receiveErrors = new AtomicLong();

    ReceiveSlots(UdEndpoint endpoint, QpRecovery recovery, UdQueuePair qp, CompletionQueue receiveCq,
                 MemoryRegion receiveMemory, int depth, int slotSize, SourceResolver resolver, boolean efa) {
        this.endpoint = endpoint;
        this.recovery = recovery;
        this.qp = qp;
        this.receiveCq = receiveCq;
        this.receiveMemory = receiveMemory;
        this.depth = depth;
        this.slotSize = slotSize;
        this.resolver = resolver;
        this.efa = efa;
    }

    long received() {
        return received.getOpaque();
    }

    long receiveErrors() {
        return receiveErrors.getOpaque();
    }

    /** One poll of the receive CQ under the lock; null when nothing (current) was there. */
    Datagram poll() {
        lock.lock();
        try {
            endpoint.checkOpen();
            while (receiveCq.poll(completion) == 1) {
                WorkCompletion wc = completion[0];
                if ((int) (wc.wrId >>> 32) != recovery.generation()) {
                    continue; // flushed by the QP's earlier life: its slot was reposted at recovery
                }
                return take(wc);
            }
            return null;
        } finally {
            lock.unlock();
        }
    }

    private Datagram take(WorkCompletion wc) {
        int slot = (int) wc.wrId;
        int offset = slot * slotSize;
        boolean repost = true;
        try {
            if (wc.status != WorkCompletion.SUCCESS) {
                repost = !recovery.checkQpState();
                if (wc.status != WorkCompletion.WR_FLUSH_ERR || !repost) {
                    receiveErrors.setOpaque(receiveErrors.getOpaque() + 1);
                }
                throw new WorkCompletionException("receive", wc.status, wc.vendorError, efa);
            }
            ByteBuffer buffer = receiveMemory.buffer();
            byte[] area = new byte[UdEndpoint.GRH_BYTES];
            buffer.get(offset, area);
            byte[] payload = new byte[Math.max(0, wc.byteLength - UdEndpoint.GRH_BYTES)];
            buffer.get(offset + UdEndpoint.GRH_BYTES, payload);
            WorkCompletion copy = new WorkCompletion();
            copy.copyFrom(wc);
            received.setOpaque(received.getOpaque() + 1);
            return resolver.resolve(payload, area, copy);
        } finally {
            // A QP in the error state would only flush the slot: recovery reposts every slot.
            if (repost) {
                qp.postReceive(receiveMemory, offset, slotSize, wc.wrId);
            }
        }
    }

    /** At recovery, lock held: posts every receive slot again, under the QP's new generation. */
    void repostAllLocked(int generation) {
        for (int i = 0; i < depth; i++) {
            qp.postReceive(receiveMemory, i * slotSize, slotSize, UdEndpoint.wrId(generation, i));
        }
    }
}
