package org.efaah.ud;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import org.efaah.cache.AddressHandle;
import org.efaah.verbs.CompletionQueue;
import org.efaah.verbs.MemoryRegion;
import org.efaah.verbs.UdQueuePair;
import org.efaah.verbs.WorkCompletion;

/**
 * An endpoint's send side: the registered send slots, the AH reference held for each send in
 * flight until it completes, the send CQ's completions, and the error of a failed send kept for
 * the next caller.
 *
 * <p>Locks: {@link #lock} (the endpoint's send lock; taken before the receive lock when both are
 * needed) guards everything here. Every method does one step and returns; none waits. The
 * endpoint's loops wait between steps with no lock held.
 */
final class SendSlots {
    final ReentrantLock lock = new ReentrantLock();
    private final UdEndpoint endpoint;
    private final QpRecovery recovery;
    private final UdQueuePair qp;
    private final CompletionQueue sendCq;
    private final MemoryRegion sendMemory;
    private final int maxMessageSize;
    private final boolean efa;
    private final AddressHandle[] inFlight;
    private final int[] freeSlots;
    private int freeCount;
    private final WorkCompletion[] completions;
    private WorkCompletionException sendError;
    /** Sends posted; written under the lock, read without it. */
    private final AtomicLong sent = new AtomicLong();

    SendSlots(UdEndpoint endpoint, QpRecovery recovery, UdQueuePair qp, CompletionQueue sendCq,
              MemoryRegion sendMemory, int depth, int maxMessageSize, boolean efa) {
        this.endpoint = endpoint;
        this.recovery = recovery;
        this.qp = qp;
        this.sendCq = sendCq;
        this.sendMemory = sendMemory;
        this.maxMessageSize = maxMessageSize;
        this.efa = efa;
        this.inFlight = new AddressHandle[depth];
        this.freeSlots = new int[depth];
        for (int i = 0; i < freeSlots.length; i++) {
            freeSlots[i] = i;
        }
        this.freeCount = freeSlots.length;
        this.completions = new WorkCompletion[Math.min(16, depth)];
        for (int i = 0; i < completions.length; i++) {
            completions[i] = new WorkCompletion();
        }
    }

    long sent() {
        return sent.getOpaque();
    }

    /**
     * One attempt to post: throws a pending send error, reaps completions when no slot is free,
     * and posts into a free slot. Returns false, having waited for nothing, when none is free.
     */
    boolean tryPost(AddressHandle ah, int remoteQpn, long remoteQkey, ByteBuffer payload, int length) {
        lock.lock();
        try {
            endpoint.checkOpen();
            throwSendError();
            if (freeCount == 0) {
                pollSends();
                throwSendError();
            }
            if (freeCount > 0) {
                post(ah, remoteQpn, remoteQkey, payload, length);
                return true;
            }
            return false;
        } finally {
            lock.unlock();
        }
    }

    /** Posts into a free slot; the caller holds the lock and has checked there is one. */
    private void post(AddressHandle ah, int remoteQpn, long remoteQkey, ByteBuffer payload, int length) {
        int slot = freeSlots[--freeCount];
        AddressHandle held;
        try {
            held = ah.duplicate();
        } catch (RuntimeException e) {
            freeSlots[freeCount++] = slot;
            throw e;
        }
        int offset = slot * maxMessageSize;
        sendMemory.buffer().put(offset, payload, payload.position(), length);
        try {
            qp.postSend(held.hardware(), remoteQpn, remoteQkey, sendMemory, offset, length,
                    UdEndpoint.wrId(recovery.generation(), slot));
        } catch (RuntimeException e) {
            held.close();
            freeSlots[freeCount++] = slot;
            throw e;
        }
        inFlight[slot] = held;
        payload.position(payload.position() + length);
        sent.setOpaque(sent.getOpaque() + 1);
    }

    /**
     * Reaps send completions (lock held): frees their slots and drops the endpoint's AH
     * references. Completions of the QP's life before a recovery are ignored: their slots were
     * freed then.
     */
    private int pollSends() {
        int n = sendCq.poll(completions);
        for (int i = 0; i < n; i++) {
            WorkCompletion wc = completions[i];
            if ((int) (wc.wrId >>> 32) != recovery.generation()) {
                continue;
            }
            int slot = (int) wc.wrId;
            AddressHandle held = inFlight[slot];
            inFlight[slot] = null;
            if (held != null) {
                held.close();
            }
            freeSlots[freeCount++] = slot;
            if (wc.status != WorkCompletion.SUCCESS) {
                recovery.checkQpState();
                if (wc.status != WorkCompletion.WR_FLUSH_ERR && sendError == null) {
                    sendError = new WorkCompletionException("send", wc.status, wc.vendorError, efa);
                }
            }
        }
        return n;
    }

    private void throwSendError() {
        WorkCompletionException e = sendError;
        if (e != null) {
            sendError = null;
            throw e;
        }
    }

    /**
     * One step of a flush: reaps completions; returns true (after throwing a pending send error)
     * when no send is in flight.
     */
    boolean flushStep() {
        lock.lock();
        try {
            endpoint.checkOpen();
            pollSends();
            if (freeCount == freeSlots.length) {
                throwSendError();
                return true;
            }
            return false;
        } finally {
            lock.unlock();
        }
    }

    /**
     * One step of the drain at close: true when there is nothing (more) to wait for, because
     * every send completed, the QP needs recovery (the device dropped them) or the CQ went with
     * its device's context.
     */
    boolean drainStep(boolean needsRecovery) {
        lock.lock();
        try {
            if (needsRecovery || sendCq.isClosed()) {
                return true;
            }
            pollSends();
            return freeCount == freeSlots.length;
        } finally {
            lock.unlock();
        }
    }

    int inFlightCount() {
        lock.lock();
        try {
            return freeSlots.length - freeCount;
        } finally {
            lock.unlock();
        }
    }

    /**
     * At recovery, lock held: the device dropped the sends in flight, so their slots are free
     * and their AH references go (no send can use an AH after the reset).
     */
    void dropInFlightLocked() {
        for (int slot = 0; slot < inFlight.length; slot++) {
            if (inFlight[slot] != null) {
                inFlight[slot].close();
                inFlight[slot] = null;
                freeSlots[freeCount++] = slot;
            }
        }
    }

    /** At close, lock held, once the QP is destroyed: drops every AH reference still held. */
    void releaseAllLocked() {
        for (int i = 0; i < inFlight.length; i++) {
            if (inFlight[i] != null) {
                inFlight[i].close();
                inFlight[i] = null;
            }
        }
    }
}
