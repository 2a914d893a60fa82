package org.efaah.ud;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import org.efaah.cache.AddressHandle;
import org.efaah.verbs.CompletionQueue;
import org.efaah.verbs.EfaCompletionStatus;
import org.efaah.verbs.HardwareAddressHandle;
import org.efaah.verbs.MemoryRegion;
import org.efaah.verbs.UdQueuePair;
import org.efaah.verbs.WorkCompletion;

/**
 * An endpoint's send side: the registered send slots, the AH reference and destination QPN held
 * for each send in flight until it completes, the send CQ's completions, and the sends that failed,
 * kept until a caller is told.
 *
 * <p>A slot frees only when its completion is polled, so at most {@code depth} completions are
 * ever outstanding and a send CQ of {@code depth} entries cannot overrun.
 *
 * <p>Locks: {@link #lock} (the endpoint's send lock; taken before the receive lock when both are
 * needed) guards everything here. Every method does one step and returns; none waits. The
 * endpoint's loops wait between steps with no lock held.
 */
final class SendSlots {
    final ReentrantLock lock = new ReentrantLock();
    private final UdEndpoint endpoint;
    private final QpRecovery recovery;
    /** The QP and its send CQ; replaced, under the lock, by a recovery that makes them anew. */
    private UdQueuePair qp;
    private CompletionQueue sendCq;
    /** Between a recovery's discard and its new QP: nothing to poll. */
    private boolean detached;
    private final MemoryRegion sendMemory;
    private final int maxMessageSize;
    private final boolean efa;
    private final int rnrRetry;
    /** Per slot in flight, the reference that keeps its AH alive; shared by the sends through one AH. */
    private final HeldAh[] inFlight;
    /** The references held now, by AH: one per AH with sends in flight, not one per send. */
    private final IdentityHashMap<HardwareAddressHandle, HeldAh> held = new IdentityHashMap<>();
    /** One batched post's work requests: offsets and lengths in the send memory, slots as wr_ids. */
    private final int[] batchOffsets;
    private final int[] batchLengths;
    private final long[] batchSlots;
    /** Spare holders, so that a send allocates nothing once running. */
    private final ArrayDeque<HeldAh> spareHolders = new ArrayDeque<>();
    private final int[] remoteQpns;
    private final int[] freeSlots;
    private int freeCount;
    /**
     * Send completions one poll takes at most: 16, not more, as reaping frees the AH references
     * of the sends reaped. On EFA a datagram names its sender by the AHN of the receiver's AH at
     * arrival; a reply path whose last send was reaped, before the datagram is read, is destroyed
     * (without retention) and the sender is no longer known.
     */
    private final WorkCompletion[] completions;
    /** Failed sends not yet reported; at most {@code depth}, as each held a slot. */
    private final List<SendFailure> failures = new ArrayList<>();
    // Written under the lock, read without it.
    private final AtomicLong sent = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();

    SendSlots(UdEndpoint endpoint, QpRecovery recovery, UdQueuePair qp, CompletionQueue sendCq,
              MemoryRegion sendMemory, int depth, int maxMessageSize, boolean efa, int rnrRetry) {
        this.endpoint = endpoint;
        this.recovery = recovery;
        this.qp = qp;
        this.sendCq = sendCq;
        this.sendMemory = sendMemory;
        this.maxMessageSize = maxMessageSize;
        this.efa = efa;
        this.rnrRetry = rnrRetry;
        this.inFlight = new HeldAh[depth];
        this.batchOffsets = new int[depth];
        this.batchLengths = new int[depth];
        this.batchSlots = new long[depth];
        this.remoteQpns = new int[depth];
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

    long failed() {
        return failed.getOpaque();
    }

    /**
     * One attempt to post: reports failed sends, reaps completions when no slot is free, and posts
     * into a free slot. Returns false, having waited for nothing, when none is free or the QP is
     * being recovered (a post would only be flushed).
     */
    boolean tryPost(AddressHandle ah, int remoteQpn, long remoteQkey, ByteBuffer payload, int length) {
        lock.lock();
        try {
            endpoint.checkOpen();
            throwFailures();
            if (freeCount == 0) {
                pollSends();
                throwFailures();
            }
            if (freeCount > 0 && !recovery.needsRecovery()) {
                post(ah, remoteQpn, remoteQkey, payload, length);
                return true;
            }
            return false;
        } finally {
            lock.unlock();
        }
    }

    /**
     * One attempt to post up to {@code count} payloads from {@code payloads[from]} on, in one
     * provider call: as {@link #tryPost}, but returns how many were posted (each consumed), 0 having
     * waited for nothing when no slot is free or the QP is being recovered. Reaps completions when
     * fewer slots are free than asked for.
     */
    int tryPostBatch(AddressHandle ah, int remoteQpn, long remoteQkey, ByteBuffer[] payloads, int from, int count) {
        lock.lock();
        try {
            endpoint.checkOpen();
            throwFailures();
            // Until enough slots are free or the CQ is empty.
            while (freeCount < count && pollSends() == completions.length) {
                // more may be queued
            }
            throwFailures();
            if (freeCount == 0 || recovery.needsRecovery()) {
                return 0;
            }
            int n = Math.min(count, freeCount);
            HardwareAddressHandle hardware = ah.hardware();
            HeldAh h = hold(ah, hardware);
            for (int i = 0; i < n; i++) {
                ByteBuffer payload = payloads[from + i];
                int slot = freeSlots[--freeCount];
                batchOffsets[i] = slot * maxMessageSize;
                batchLengths[i] = payload.remaining();
                batchSlots[i] = slot;
                sendMemory.buffer().put(batchOffsets[i], payload, payload.position(), batchLengths[i]);
            }
            h.sends += n;
            int posted = 0;
            try {
                posted = qp.postSends(hardware, remoteQpn, remoteQkey, sendMemory, batchOffsets, batchLengths,
                        batchSlots, n);
            } finally {
                // Those not posted (all, if it threw) give their slots and their share of the AH back.
                for (int i = posted; i < n; i++) {
                    release(h);
                    freeSlots[freeCount++] = (int) batchSlots[i];
                }
            }
            for (int i = 0; i < posted; i++) {
                int slot = (int) batchSlots[i];
                inFlight[slot] = h;
                remoteQpns[slot] = remoteQpn;
                ByteBuffer payload = payloads[from + i];
                payload.position(payload.position() + batchLengths[i]);
            }
            sent.setOpaque(sent.getOpaque() + posted);
            return posted;
        } finally {
            lock.unlock();
        }
    }

    /** The endpoint's reference to {@code hardware} for one more send, a duplicate of {@code ah} if none is held. */
    private HeldAh hold(AddressHandle ah, HardwareAddressHandle hardware) {
        HeldAh h = held.get(hardware);
        if (h == null) {
            AddressHandle duplicate = ah.duplicate();
            h = spareHolders.isEmpty() ? new HeldAh() : spareHolders.pop();
            h.handle = duplicate;
            h.hardware = hardware;
            held.put(hardware, h);
        }
        return h;
    }

    /**
     * An AH reference the endpoint holds for its sends in flight through one AH: a
     * {@link AddressHandle#duplicate()} taken by the first and closed when the last completes, so
     * that a stream to one peer duplicates nothing once running.
     */
    private static final class HeldAh {
        HardwareAddressHandle hardware;
        AddressHandle handle;
        int sends;
    }

    /** Posts into a free slot; the caller holds the lock and has checked there is one. */
    private void post(AddressHandle ah, int remoteQpn, long remoteQkey, ByteBuffer payload, int length) {
        HardwareAddressHandle hardware = ah.hardware(); // throws for a closed handle or a destroyed AH
        HeldAh h = hold(ah, hardware);
        int slot = freeSlots[--freeCount];
        int offset = slot * maxMessageSize;
        sendMemory.buffer().put(offset, payload, payload.position(), length);
        h.sends++;
        try {
            qp.postSend(hardware, remoteQpn, remoteQkey, sendMemory, offset, length, slot);
        } catch (RuntimeException e) {
            release(h);
            freeSlots[freeCount++] = slot;
            throw e;
        }
        inFlight[slot] = h;
        remoteQpns[slot] = remoteQpn;
        payload.position(payload.position() + length);
        sent.setOpaque(sent.getOpaque() + 1);
    }

    /**
     * Reaps one batch of send completions (lock held): frees their slots, drops the endpoint's AH
     * references, and keeps every failure, flushes included (a flushed send never went out), for
     * the next caller. Returns how many it reaped.
     */
    private int pollSends() {
        if (detached) {
            return 0;
        }
        int n = sendCq.poll(completions);
        for (int i = 0; i < n; i++) {
            WorkCompletion wc = completions[i];
            int slot = (int) wc.wrId;
            HeldAh h = inFlight[slot];
            if (h == null) {
                throw new IllegalStateException("send completion for slot " + slot + ", which has no send in flight");
            }
            inFlight[slot] = null;
            try {
                if (wc.status != WorkCompletion.SUCCESS) {
                    failures.add(new SendFailure(remoteQpns[slot], h.handle.dgid(), wc.status, wc.vendorError,
                            efa ? EfaCompletionStatus.of(wc.vendorError) : null, rnrRetry));
                    failed.setOpaque(failed.getOpaque() + 1);
                    recovery.inErrorAfter(wc.status, wc.vendorError);
                }
            } finally {
                release(h);
                freeSlots[freeCount++] = slot;
            }
        }
        return n;
    }

    /** One send through {@code h} is over; the last closes the reference. */
    private void release(HeldAh h) {
        if (--h.sends == 0) {
            AddressHandle handle = h.handle;
            h.handle = null;
            held.remove(h.hardware);
            h.hardware = null;
            spareHolders.push(h);
            handle.close();
        }
    }

    private void throwFailures() {
        if (!failures.isEmpty()) {
            WorkCompletionException e = new WorkCompletionException(failures);
            failures.clear();
            throw e;
        }
    }

    /**
     * One step of a flush: reaps every completion queued; returns true (after reporting failed
     * sends) when no send is in flight.
     */
    boolean flushStep() {
        lock.lock();
        try {
            endpoint.checkOpen();
            // Until the CQ is empty: a caller that sleeps after a false must have left nothing queued,
            // as queued completions raise no event.
            while (pollSends() == completions.length) {
                // more may be queued
            }
            if (freeCount == freeSlots.length) {
                throwFailures();
                return true;
            }
            return false;
        } finally {
            lock.unlock();
        }
    }

    /**
     * One step of the drain at close: true when there is nothing (more) to wait for, because
     * every send completed or the CQ went with its device's context.
     */
    boolean drainStep() {
        lock.lock();
        try {
            if (sendCq.isClosed()) {
                return true;
            }
            pollSends();
            return freeCount == freeSlots.length;
        } finally {
            lock.unlock();
        }
    }

    /**
     * At recovery, lock held: reaps what the QP in error flushed; true once every send posted
     * before the error has completed and been polled, so that none can complete after the reset.
     */
    boolean drainedLocked() {
        while (pollSends() == completions.length) {
            // more may be queued
        }
        return freeCount == freeSlots.length;
    }

    /**
     * At a recovery past its flush bound, lock held, once the QP is destroyed: every send still in
     * flight is reported failed, as flushed ({@code IBV_WC_WR_FLUSH_ERR}, on EFA the vendor error
     * FLUSHED, "flushed during QP destroy"), its slot freed and its AH reference dropped; the send
     * CQ is not polled again until {@link #attachLocked}.
     */
    void discardLocked() {
        detached = true;
        for (int slot = 0; slot < inFlight.length; slot++) {
            HeldAh h = inFlight[slot];
            if (h == null) {
                continue;
            }
            inFlight[slot] = null;
            failures.add(new SendFailure(remoteQpns[slot], h.handle.dgid(), WorkCompletion.WR_FLUSH_ERR,
                    efa ? EfaCompletionStatus.FLUSHED.code() : 0, efa ? EfaCompletionStatus.FLUSHED : null, rnrRetry));
            failed.setOpaque(failed.getOpaque() + 1);
            release(h);
            freeSlots[freeCount++] = slot;
        }
    }

    /** At a recovery, lock held: sends go to the new QP, completions come from its new CQ. */
    void attachLocked(UdQueuePair newQp, CompletionQueue newCq) {
        qp = newQp;
        sendCq = newCq;
        detached = false;
    }

    int inFlightCount() {
        lock.lock();
        try {
            return freeSlots.length - freeCount;
        } finally {
            lock.unlock();
        }
    }

    /** The destination of a send still in flight, for a message; null when none is. */
    String anyInFlight() {
        lock.lock();
        try {
            for (int slot = 0; slot < inFlight.length; slot++) {
                if (inFlight[slot] != null) {
                    return "QPN 0x" + Integer.toHexString(remoteQpns[slot]) + " GID " + inFlight[slot].handle.dgid();
                }
            }
            return null;
        } finally {
            lock.unlock();
        }
    }

    /** At close, lock held, once the QP is destroyed: drops every AH reference still held. */
    void releaseAllLocked() {
        for (int i = 0; i < inFlight.length; i++) {
            if (inFlight[i] != null) {
                release(inFlight[i]);
                inFlight[i] = null;
            }
        }
    }
}
