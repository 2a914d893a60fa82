package org.efaah.ud;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import org.efaah.verbs.CompletionQueue;
import org.efaah.verbs.MemoryRegion;
import org.efaah.verbs.UdQueuePair;
import org.efaah.verbs.WorkCompletion;

/**
 * An endpoint's receive side: the registered receive slots, the receive CQ's completions, copying
 * a datagram out and reposting its slot, and the receive counters.
 *
 * <p>A slot is {@code prefix} bytes plus the largest message: on UD {@code prefix} is the 40-byte
 * area in front of every payload (a GRH, or on EFA undefined bytes); on SRD it is 0, as an SRD
 * payload starts at offset 0 and {@code byte_len} counts the payload alone (rdma-core's EFA tests
 * read UD at the GRH size and SRD at 0). A slot is reposted only once its completion has been polled,
 * so a receive CQ of {@code depth} entries cannot overrun.
 *
 * <p>Locks: {@link #lock} (the endpoint's receive lock; taken after the send lock when both are
 * needed) guards the CQ poll, the reposts and the datagrams a recovery polled before the caller did.
 * Every method does one step and returns; none waits. The endpoint's {@code receive} waits between
 * polls with no lock held.
 */
final class ReceiveSlots {
    final ReentrantLock lock = new ReentrantLock();
    private final UdEndpoint endpoint;
    private final QpRecovery recovery;
    private final UdQueuePair qp;
    private final CompletionQueue receiveCq;
    private final MemoryRegion receiveMemory;
    private final int depth;
    private final int prefix;
    private final int slotSize;
    private final SourceResolver resolver;
    private final boolean efa;
    /** One poll's completions; those from {@link #next} to {@link #filled} are still to be taken. */
    private final WorkCompletion[] completions;
    private int next;
    private int filled;
    /** Slots copied out and not yet reposted; reposted {@link #repostBatch} at a time, in one call. */
    private final int[] repostOffsets;
    private final long[] repostSlots;
    private final int repostBatch;
    private int reposts;
    /** Receives posted whose completion has not been polled yet. */
    private int posted;
    /** Datagrams a recovery's drain polled; handed out before the CQ is polled again. */
    private final ArrayDeque<Datagram> drained = new ArrayDeque<>();
    // Written under the lock, read without it.
    private final AtomicLong received = new AtomicLong();
    private final AtomicLong receiveErrors = new AtomicLong();

    ReceiveSlots(UdEndpoint endpoint, QpRecovery recovery, UdQueuePair qp, CompletionQueue receiveCq,
                 MemoryRegion receiveMemory, int depth, int prefix, int slotSize, SourceResolver resolver,
                 boolean efa) {
        this.endpoint = endpoint;
        this.recovery = recovery;
        this.qp = qp;
        this.receiveCq = receiveCq;
        this.receiveMemory = receiveMemory;
        this.depth = depth;
        this.prefix = prefix;
        this.slotSize = slotSize;
        this.resolver = resolver;
        this.efa = efa;
        this.posted = depth; // EndpointResources posted every slot
        this.completions = new WorkCompletion[Math.min(16, depth)];
        for (int i = 0; i < completions.length; i++) {
            completions[i] = new WorkCompletion();
        }
        // At most a quarter of the ring waits for its repost, so three quarters stay posted.
        this.repostBatch = Math.max(1, Math.min(16, depth / 4));
        this.repostOffsets = new int[repostBatch];
        this.repostSlots = new long[repostBatch];
    }

    long received() {
        return received.getOpaque();
    }

    long receiveErrors() {
        return receiveErrors.getOpaque();
    }

    /** One poll under the lock; null when no datagram was there. */
    Datagram poll() {
        lock.lock();
        try {
            endpoint.checkOpen();
            Datagram d = drained.poll();
            return d != null ? d : pollLocked();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Polls until a datagram or an error turns up, or the CQ is empty. A flush of a QP in the error
     * state is consumed quietly: it only returns the slot, which recovery reposts.
     */
    private Datagram pollLocked() {
        for (;;) {
            if (next == filled) {
                next = 0;
                filled = 0; // first: a poll that throws leaves nothing stale behind
                filled = receiveCq.poll(completions);
                if (filled == 0) {
                    return null;
                }
            }
            WorkCompletion wc = completions[next++];
            posted--;
            Datagram d = take(wc);
            if (d != null) {
                return d;
            }
        }
    }

    private Datagram take(WorkCompletion wc) {
        int slot = (int) wc.wrId;
        int offset = slot * slotSize;
        if (wc.status != WorkCompletion.SUCCESS) {
            boolean inError = recovery.checkQpState();
            if (wc.status == WorkCompletion.WR_FLUSH_ERR && inError) {
                return null;
            }
            receiveErrors.setOpaque(receiveErrors.getOpaque() + 1);
            if (!inError) {
                repost(slot);
            }
            throw new WorkCompletionException("receive", wc.status, wc.vendorError, efa);
        }
        try {
            ByteBuffer buffer = receiveMemory.buffer();
            byte[] area = new byte[prefix];
            buffer.get(offset, area);
            byte[] payload = new byte[Math.max(0, wc.byteLength - prefix)];
            buffer.get(offset + prefix, payload);
            WorkCompletion copy = new WorkCompletion();
            copy.copyFrom(wc);
            received.setOpaque(received.getOpaque() + 1);
            return resolver.resolve(payload, area, copy);
        } finally {
            // A QP in the error state would only flush the slot: recovery reposts every slot.
            if (!recovery.needsRecovery()) {
                repost(slot);
            }
        }
    }

    /** Queues the slot for a repost; posts the queue in one call once a batch is full. */
    private void repost(int slot) {
        repostOffsets[reposts] = slot * slotSize;
        repostSlots[reposts] = slot;
        if (++reposts == repostBatch) {
            postQueued();
        }
    }

    private void postQueued() {
        int n = reposts;
        reposts = 0;
        int done = qp.postReceives(receiveMemory, repostOffsets, slotSize, repostSlots, n);
        posted += done;
        // A refused one alone says why (it throws); those after it are dropped with it, as a failed
        // single repost dropped its slot.
        for (int i = done; i < n; i++) {
            qp.postReceive(receiveMemory, repostOffsets[i], slotSize, repostSlots[i]);
            posted++;
        }
    }

    /**
     * At recovery, lock held: polls what the QP in error flushed, keeping datagrams that completed
     * before the error for the caller; true once no receive is outstanding, so that none can
     * complete after the reset.
     */
    boolean drainedLocked() {
        for (;;) {
            Datagram d;
            try {
                d = pollLocked();
            } catch (WorkCompletionException e) {
                continue; // counted; the caller of receive already heard of the error that stopped the QP
            }
            if (d == null) {
                return posted == 0;
            }
            drained.add(d);
        }
    }

    /** At recovery, lock held, the QP back in RTS: posts every receive slot again. */
    void repostAllLocked() {
        reposts = 0; // every slot, the queued ones among them
        for (int i = 0; i < depth; i++) {
            repost(i);
        }
        if (reposts > 0) {
            postQueued();
        }
    }
}
