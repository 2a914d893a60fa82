package org.efaah.ud;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.efaah.cache.AddressHandle;
import org.efaah.verbs.CompletionQueue;
import org.efaah.verbs.EfaCompletionStatus;
import org.efaah.verbs.HardwareAddressHandle;
import org.efaah.verbs.MemoryRegion;
import org.efaah.verbs.SendRequests;
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
final class SendSlots implements QpRecovery.Side {
    final SlotsLock lock = new SlotsLock();
    /** The endpoint's close: no step starts past it. */
    private final CloseFlag closeFlag;
    /** Told when a send is queued for a resend, which no completion event announces. */
    private final Waker resendQueued;
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
    /**
     * The AH reference of the last sends, kept when they have all completed, so that a stream to
     * one peer duplicates no reference per batch; closed when another AH's sends end idle too, at a
     * flush that finds nothing in flight, and at close.
     */
    private HeldAh lingering;
    /** One batched post's work requests, in native memory: offsets and lengths in the send memory, slots as wr_ids. */
    private final SendRequests batch;
    /** Spare holders, so that a send allocates nothing once running. */
    private final ArrayDeque<HeldAh> spareHolders = new ArrayDeque<>();
    private final int[] remoteQpns;
    /** Per slot in flight, what a resend after RNR posts again: the Q_Key and the length (the payload stays in the slot). */
    private final long[] remoteQkeys;
    private final int[] lengths;
    /**
     * SRD RNR resends. Per slot: its RNR completions so far, when the first came, and, while it
     * waits to be posted again, when ({@code resendAt}). {@code rnrBudgetNanos} 0: none.
     */
    private final long rnrBudgetNanos;
    private final int[] rnrTries;
    private final long[] rnrSince;
    private final long[] resendAt;
    private final boolean[] waitingResend;
    /** The earliest {@link #resendAt} of the slots waiting (valid while {@link #awaitingResend} > 0): no scan before it. */
    private long nextResendAt;
    /** The last {@link #takeDueResends} left a due resend to another destination than the one it took. */
    private boolean dueElsewhere;
    /** The provider's refusal of resends posted after a batch's own post, for the failure it made; under the lock. */
    private RuntimeException refusedElsewhere;
    /** {@link #stepNanos()}: the clock as read once in this step, if read; a step begins at each lock. */
    private long stepNanos;
    private boolean stepClockRead;
    /** Slots waiting to be resent; written under the lock, read without it by the send waiter. */
    private volatile int awaitingResend;
    /** The last poll took a full batch: completions may still be queued. Written under the lock. */
    private volatile boolean cqMayHoldMore;
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
    /** Of {@link #failed}, the sends given up by a recovery's destroy, never completed. */
    private final AtomicLong outcomeUnknown = new AtomicLong();
    private final AtomicLong rnrResends = new AtomicLong();

    SendSlots(CloseFlag closeFlag, Waker resendQueued, QpRecovery recovery, UdQueuePair qp, CompletionQueue sendCq,
              MemoryRegion sendMemory, int depth, int maxMessageSize, boolean efa, int rnrRetry, long rnrBudgetNanos) {
        this.closeFlag = closeFlag;
        this.resendQueued = resendQueued;
        this.recovery = recovery;
        this.qp = qp;
        this.sendCq = sendCq;
        this.sendMemory = sendMemory;
        this.maxMessageSize = maxMessageSize;
        this.efa = efa;
        this.rnrRetry = rnrRetry;
        this.inFlight = new HeldAh[depth];
        this.batch = SendRequests.allocate(depth);
        this.remoteQpns = new int[depth];
        this.remoteQkeys = new long[depth];
        this.lengths = new int[depth];
        this.rnrBudgetNanos = rnrBudgetNanos;
        this.rnrTries = new int[depth];
        this.rnrSince = new long[depth];
        this.resendAt = new long[depth];
        this.waitingResend = new boolean[depth];
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

    @Override
    public SlotsLock lock() {
        return lock;
    }

    long sent() {
        return sent.getOpaque();
    }

    long outcomeUnknown() {
        return outcomeUnknown.getOpaque();
    }

    long failed() {
        return failed.getOpaque();
    }

    long rnrResends() {
        return rnrResends.getOpaque();
    }

    /** Whether sends wait to be resent after RNR: their waits must poll, as no completion will wake them. */
    boolean resendsWaiting() {
        return awaitingResend > 0;
    }

    /**
     * The send side's part of whether a wait may sleep on the send CQ's channel: no resend waiting
     * (its time raises no event) and the last poll did not stop at a full batch (what it left on the
     * CQ, if queued before the arm, raises none either). Asked after the arm; no lock.
     */
    boolean mayIdle() {
        return awaitingResend == 0 && !cqMayHoldMore;
    }

    /**
     * One attempt to post: reports failed sends, reaps completions when no slot is free, and posts
     * into a free slot. Returns false, having waited for nothing, when none is free or the QP is
     * being recovered (a post would only be flushed).
     */
    boolean tryPost(AddressHandle ah, int remoteQpn, long remoteQkey, ByteBuffer payload, int length) {
        lock.lock();
        try {
            stepClockRead = false;
            closeFlag.checkOpen();
            throwFailures();
            if (awaitingResend > 0) {
                resendDue();
            }
            if (freeCount == 0) {
                pollSends(false);
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
     * fewer slots are free than asked for. The resends due to the same destination go in the same
     * call, ahead of the new sends (they are older): a stream whose receiver runs short of receives
     * makes no provider call per resend.
     */
    int tryPostBatch(AddressHandle ah, int remoteQpn, long remoteQkey, ByteBuffer[] payloads, int from, int count) {
        lock.lock();
        try {
            stepClockRead = false;
            closeFlag.checkOpen();
            throwFailures();
            // Until enough slots are free or the CQ is empty; the resends due wait for the post below.
            while (freeCount < count && pollSends(false) == completions.length) {
                // more may be queued
            }
            throwFailures();
            if (freeCount == 0 && awaitingResend > 0) {
                // No post to carry the resends due: they go on their own, each poll after them, so that
                // what they met at once is reaped here: a resend that meets RNR again keeps the wait
                // from sleeping (mayIdle) rather than leaving its completion to an armed CQ's event.
                while (pollSends(true) == completions.length) {
                    // more may be queued
                }
                throwFailures();
            }
            if (freeCount == 0 || recovery.needsRecovery()) {
                return 0;
            }
            int n = Math.min(count, freeCount);
            HardwareAddressHandle hardware = ah.hardware();
            HeldAh h = hold(ah, hardware);
            dueElsewhere = false;
            int k = awaitingResend > 0 ? takeDueResends(h, remoteQpn, remoteQkey) : 0;
            ByteBuffer memory = sendMemory.buffer();
            int claimed = 0;
            try {
                for (int i = 0; i < n; i++) {
                    ByteBuffer payload = payloads[from + i];
                    int slot = freeSlots[--freeCount];
                    int length = payload.remaining();
                    batch.set(k + i, slot * maxMessageSize, length, slot);
                    claimed++;
                    lengths[slot] = length;
                    memory.put(slot * maxMessageSize, payload, payload.position(), length);
                }
            } catch (RuntimeException e) {
                uncopied(h, k, claimed);
                throw e;
            }
            h.sends += n;
            int posted = 0;
            boolean threw = true;
            try {
                posted = qp.postSends(hardware, remoteQpn, remoteQkey, sendMemory, batch, k + n);
                threw = false;
            } finally {
                // Those not posted (all, if it threw): resends wait again (the first reported as the
                // RNR it met, if the call threw), new sends give their slots and their share back.
                unposted(h, k, posted, k + n, threw);
            }
            int resent = Math.min(posted, k);
            if (resent > 0) {
                rnrResends.setOpaque(rnrResends.getOpaque() + resent);
            }
            for (int i = k; i < posted; i++) {
                int slot = (int) batch.wrId(i);
                inFlight[slot] = h;
                remoteQpns[slot] = remoteQpn;
                remoteQkeys[slot] = remoteQkey;
                ByteBuffer payload = payloads[from + i - k];
                payload.position(payload.position() + lengths[slot]);
            }
            int sentNow = Math.max(0, posted - k);
            sent.setOpaque(sent.getOpaque() + sentNow);
            if (dueElsewhere) {
                try {
                    resendDue(); // due resends to another destination: their own call
                } catch (RuntimeException e) {
                    // This batch's sends are posted and consumed: thrown here, another destination's
                    // refusal would read as this post's. The resend refused is already the failed send
                    // it is (failRnr); the refusal goes beside it, thrown at the next step.
                    refusedElsewhere = e;
                }
            }
            return sentNow;
        } finally {
            lock.unlock();
        }
    }

    /**
     * After a batched post of {@code total} requests, lock held: request {@code i} from
     * {@code posted} on was not posted. A resend (the first {@code resends}) waits to go again, due
     * at once (the next call meets the provider's refusal again, or not); when the call threw, the
     * first was the one refused, and is reported as the RNR it met, as a single resend that throws.
     * A new send gives its slot and its share of {@code h} back.
     */
    private void unposted(HeldAh h, int resends, int posted, int total, boolean threw) {
        for (int i = posted; i < total; i++) {
            int slot = (int) batch.wrId(i);
            if (i >= resends) {
                release(h);
                freeSlots[freeCount++] = slot;
            } else if (threw && i == 0) {
                failRnr(slot);
            } else {
                waitAgain(slot);
            }
        }
    }

    /**
     * A payload could not be read while a batch was copied into its slots, lock held (its memory
     * gone: a closed arena's segment, on Java 22 and later): nothing of the batch is posted. The
     * {@code claimed} slots of new sends go back free, the {@code resends} taken wait again (due
     * at once), and {@code h}, if no send holds it now, lingers as after its last send, so that
     * neither a slot nor the AH reference is lost and a flush still ends.
     */
    private void uncopied(HeldAh h, int resends, int claimed) {
        for (int i = 0; i < claimed; i++) {
            freeSlots[freeCount++] = (int) batch.wrId(resends + i);
        }
        for (int i = 0; i < resends; i++) {
            waitAgain((int) batch.wrId(i));
        }
        if (h.sends == 0 && h != lingering) {
            h.sends = 1;
            release(h); // as its last send's end: it lingers, the one that lingered before is closed
        }
    }

    /** The endpoint's reference to {@code hardware} for one more send, a duplicate of {@code ah} if none is held. */
    private HeldAh hold(AddressHandle ah, HardwareAddressHandle hardware) {
        HeldAh h = lingering;
        if (h != null && h.hardware == hardware) {
            return h; // its sends == 0 when idle: counted up by the caller, still the map's entry
        }
        h = held.get(hardware);
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
        h.sends++;
        try {
            // The copy may throw too (a payload whose memory is gone): its slot and share go back.
            sendMemory.buffer().put(offset, payload, payload.position(), length);
            qp.postSend(hardware, remoteQpn, remoteQkey, sendMemory, offset, length, slot);
        } catch (RuntimeException e) {
            release(h);
            freeSlots[freeCount++] = slot;
            throw e;
        }
        inFlight[slot] = h;
        remoteQpns[slot] = remoteQpn;
        remoteQkeys[slot] = remoteQkey;
        lengths[slot] = length;
        payload.position(payload.position() + length);
        sent.setOpaque(sent.getOpaque() + 1);
    }

    /**
     * Reaps one batch of send completions (lock held): frees their slots, drops the endpoint's AH
     * references, and keeps every failure, flushes included (a flushed send never went out), for
     * the next caller. First posts the resends due, if {@code resend}; a caller that posts next
     * passes false and takes them into its own post. Returns how many it reaped.
     */
    private int pollSends(boolean resend) {
        if (detached) {
            return 0;
        }
        if (resend && awaitingResend > 0) {
            resendDue();
        }
        int n = sendCq.poll(completions);
        boolean full = n == completions.length;
        if (full != cqMayHoldMore) {
            cqMayHoldMore = full;
        }
        // Every completion taken is accounted for before anything is thrown: one left behind in
        // the array would keep its slot and its AH reference for ever.
        RuntimeException queryFailed = null;
        for (int i = 0; i < n; i++) {
            WorkCompletion wc = completions[i];
            int slot = (int) wc.wrId;
            HeldAh h = inFlight[slot];
            if (h == null) {
                throw new IllegalStateException("send completion for slot " + slot + ", which has no send in flight");
            }
            if (wc.status == WorkCompletion.RNR_RETRY_EXC_ERR && rnrBudgetNanos != 0) {
                if (keepForResend(slot, stepNanos())) {
                    continue;
                }
            }
            inFlight[slot] = null;
            rnrTries[slot] = 0;
            try {
                if (wc.status != WorkCompletion.SUCCESS) {
                    failures.add(new SendFailure(remoteQpns[slot], h.handle.dgid(), wc.status, wc.vendorError,
                            efa ? EfaCompletionStatus.of(wc.vendorError) : null, rnrRetry));
                    failed.setOpaque(failed.getOpaque() + 1);
                    recovery.inErrorAfter(wc.status, wc.vendorError);
                }
            } catch (RuntimeException e) {
                // ibv_query_qp failed: the QP's state is unknown. The failed send is kept for the
                // caller; a later error completion asks again.
                if (queryFailed == null) {
                    queryFailed = e;
                } else {
                    queryFailed.addSuppressed(e);
                }
            } finally {
                release(h);
                freeSlots[freeCount++] = slot;
            }
        }
        if (queryFailed != null) {
            throw queryFailed;
        }
        return n;
    }

    /*
     * SRD RNR: the device retried rnr_retry times (3 by default here, as libfabric sets it) and the
     * receiver still had no receive posted. The send stays in flight, its payload in its slot, and
     * is posted again once its backoff has passed: at once the first time, then after 64 µs
     * doubling per RNR up to 100 ms; past rnrBudgetNanos since its first RNR it is reported.
     * libfabric's RDM endpoint (efa_rdm_ep_queue_rnr_pkt) also resends a packet that met RNR at
     * once the first time, then backs the whole peer off (40..120 µs at random, doubling to 1 s), and
     * with FI_RM_ENABLED, its default, resends without a bound; with FI_RM_DISABLED it reports the
     * first RNR (efa_rdm_pke_handle_tx_error). Here the backoff is per send, not per peer, and the
     * total is bounded, so that a receiver gone for good still ends in a reported failure.
     */
    private static final long FIRST_BACKOFF_NANOS = 64_000;
    private static final long MAX_BACKOFF_NANOS = 100_000_000;

    /** An RNR completion of {@code slot} polled at {@code now}, lock held: true when it is to be resent, its time set. */
    private boolean keepForResend(int slot, long now) {
        int tries = rnrTries[slot];
        if (tries == 0) {
            rnrSince[slot] = now;
        }
        long end = rnrSince[slot] + rnrBudgetNanos;
        if (now - end >= 0) {
            return false;
        }
        long backoff = tries == 0 ? 0 : Math.min(MAX_BACKOFF_NANOS, FIRST_BACKOFF_NANOS << Math.min(tries - 1, 20));
        long at = end - (now + backoff) < 0 ? end : now + backoff;
        resendAt[slot] = at;
        rnrTries[slot] = tries + 1;
        waitingResend[slot] = true;
        if (awaitingResend == 0 || at - nextResendAt < 0) {
            nextResendAt = at;
        }
        awaitingResend++;
        resendQueued.wake(); // a wait asleep on the send CQ would get no event for it
        return true;
    }

    /**
     * Posts again, lock held, the sends whose backoff has passed, those to one destination in one
     * provider call; none while the QP is being recovered. Scans the slots only once the earliest
     * is due ({@link #nextResendAt}). A resend that is refused waits again, due at once; one whose
     * call throws is reported as the RNR it met and the exception thrown, the rest left for the next
     * call.
     */
    private void resendDue() {
        if (recovery.needsRecovery()) {
            return;
        }
        int k;
        while ((k = takeDueResends(null, 0, 0)) > 0) {
            int slot = (int) batch.wrId(0);
            HeldAh h = inFlight[slot];
            int posted = 0;
            boolean threw = true;
            try {
                posted = qp.postSends(h.hardware, remoteQpns[slot], remoteQkeys[slot], sendMemory, batch, k);
                threw = false;
            } finally {
                unposted(h, k, posted, k, threw);
            }
            rnrResends.setOpaque(rnrResends.getOpaque() + posted);
            if (posted < k || !dueElsewhere) {
                return; // refused ones wait for the next call; or none due is left
            }
        }
    }

    /**
     * Moves the resends due now to one destination into {@link #batch}, from request 0, lock held,
     * and returns how many: to ({@code h}, {@code remoteQpn}, {@code remoteQkey}), or with {@code h}
     * null to that of the first due. Leaves {@link #dueElsewhere} set when a due one to another
     * destination was left, and {@link #nextResendAt} at the earliest of those left.
     */
    private int takeDueResends(HeldAh h, int remoteQpn, long remoteQkey) {
        dueElsewhere = false;
        long now = stepNanos();
        if (now - nextResendAt < 0) {
            return 0;
        }
        long next = Long.MAX_VALUE;
        boolean later = false;
        int k = 0;
        int left = awaitingResend;
        for (int slot = 0; slot < waitingResend.length && left > 0; slot++) {
            if (!waitingResend[slot]) {
                continue;
            }
            left--;
            if (now - resendAt[slot] < 0) {
                if (!later || resendAt[slot] - next < 0) {
                    next = resendAt[slot];
                    later = true;
                }
                continue;
            }
            if (h == null) {
                h = inFlight[slot];
                remoteQpn = remoteQpns[slot];
                remoteQkey = remoteQkeys[slot];
            } else if (inFlight[slot] != h || remoteQpns[slot] != remoteQpn || remoteQkeys[slot] != remoteQkey) {
                dueElsewhere = true;
                next = now;
                later = true;
                continue;
            }
            waitingResend[slot] = false;
            batch.set(k++, slot * maxMessageSize, lengths[slot], slot);
        }
        if (k > 0) {
            awaitingResend -= k; // one volatile write for the lot
        }
        if (later) {
            nextResendAt = next;
        }
        return k;
    }

    /*
     * The clock, read once per step (lock held) at its first need, not at each RNR, reap and scan:
     * a step does not wait and lasts microseconds, against backoffs of 64 µs and more and a budget
     * of a second; and a clock read is dear where the TSC is virtualised (a VM's vDSO
     * clock_gettime took a sixth of the warm stream's sender samples over the double).
     */
    private long stepNanos() {
        if (!stepClockRead) {
            stepNanos = System.nanoTime();
            stepClockRead = true;
        }
        return stepNanos;
    }

    /** A resend not posted, lock held: waits again, due at once. */
    private void waitAgain(int slot) {
        long now = stepNanos();
        resendAt[slot] = now;
        waitingResend[slot] = true;
        if (awaitingResend == 0 || now - nextResendAt < 0) {
            nextResendAt = now;
        }
        awaitingResend++;
        resendQueued.wake(); // as keepForResend: a wait asleep on the send CQ would get no event for it
    }

    /** Lock held: every send waiting to be resent is reported as the RNR failure it met, its slot freed. */
    private void dropResends() {
        for (int slot = 0; slot < waitingResend.length && awaitingResend > 0; slot++) {
            if (waitingResend[slot]) {
                waitingResend[slot] = false;
                awaitingResend--;
                failRnr(slot);
            }
        }
    }

    private void failRnr(int slot) {
        HeldAh h = inFlight[slot];
        inFlight[slot] = null;
        rnrTries[slot] = 0;
        EfaCompletionStatus rnr = efa ? EfaCompletionStatus.REMOTE_ERROR_RNR : null;
        failures.add(new SendFailure(remoteQpns[slot], h.handle.dgid(), WorkCompletion.RNR_RETRY_EXC_ERR,
                rnr == null ? 0 : rnr.code(), rnr, rnrRetry));
        failed.setOpaque(failed.getOpaque() + 1);
        release(h);
        freeSlots[freeCount++] = slot;
    }

    /**
     * One send through {@code h} is over. The last keeps the reference as {@link #lingering}, for
     * the next sends to the same AH, and closes the one that lingered before, if another.
     */
    private void release(HeldAh h) {
        if (--h.sends == 0 && h != lingering) {
            HeldAh before = lingering;
            lingering = h;
            if (before != null && before.sends == 0) {
                closeHeld(before);
            }
        }
    }

    /** Drops the lingering reference, if no send uses it. */
    private void closeLingering() {
        HeldAh h = lingering;
        if (h != null && h.sends == 0) {
            lingering = null;
            closeHeld(h);
        }
    }

    private void closeHeld(HeldAh h) {
        if (h == lingering) {
            lingering = null;
        }
        AddressHandle handle = h.handle;
        h.handle = null;
        held.remove(h.hardware);
        h.hardware = null;
        spareHolders.push(h);
        handle.close();
    }

    private void throwFailures() {
        if (!failures.isEmpty()) {
            WorkCompletionException e = new WorkCompletionException(failures);
            failures.clear();
            if (refusedElsewhere != null) {
                e.addSuppressed(refusedElsewhere);
                refusedElsewhere = null;
            }
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
            stepClockRead = false;
            closeFlag.checkOpen();
            // Until the CQ is empty: a caller that sleeps after a false must have left nothing queued,
            // as queued completions raise no event.
            while (pollSends(true) == completions.length) {
                // more may be queued
            }
            if (freeCount == freeSlots.length) {
                closeLingering(); // every send done: the endpoint holds no AH beyond what is in flight
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
            stepClockRead = false;
            if (sendCq.isClosed()) {
                return true;
            }
            pollSends(true);
            return freeCount == freeSlots.length;
        } finally {
            lock.unlock();
        }
    }

    /**
     * At recovery, lock held: reaps what the QP in error flushed; true once every send posted
     * before the error has completed and been polled, so that none can complete after the reset.
     */
    @Override
    public boolean drainedLocked() {
        stepClockRead = false; // the recovery's step
        dropResends(); // not on the QP: nothing of theirs can complete after the reset
        while (pollSends(true) == completions.length) {
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
    @Override
    public void discardLocked() {
        dropResends();
        detached = true;
        for (int slot = 0; slot < inFlight.length; slot++) {
            HeldAh h = inFlight[slot];
            if (h == null) {
                continue;
            }
            inFlight[slot] = null;
            rnrTries[slot] = 0;
            failures.add(new SendFailure(remoteQpns[slot], h.handle.dgid(), WorkCompletion.WR_FLUSH_ERR,
                    efa ? EfaCompletionStatus.FLUSHED.code() : 0, efa ? EfaCompletionStatus.FLUSHED : null, rnrRetry,
                    true));
            failed.setOpaque(failed.getOpaque() + 1);
            outcomeUnknown.setOpaque(outcomeUnknown.getOpaque() + 1);
            release(h);
            freeSlots[freeCount++] = slot;
        }
    }

    /** At a recovery, lock held: sends go to the new QP, completions come from its new CQ. */
    @Override
    public void attachLocked(UdQueuePair newQp, CompletionQueue newCq) {
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

    /** Why no send slot freed in 10 s, as far as the send side can tell; no lock held. */
    String stalledSendDetail() {
        String pending = anyInFlight();
        StringBuilder b = new StringBuilder("no send completed in 10 s");
        if (pending != null) {
            b.append("; ").append(inFlightCount()).append(" in flight, among them one to ").append(pending);
        }
        if (recovery.needsRecovery()) {
            b.append("; the QP is in the error state and its flushed work requests have not all completed");
        } else if (resendsWaiting()) {
            b.append("; sends that met RNR wait to be resent (their receiver posts no receive)");
        } else if (rnrRetry == 7) {
            b.append("; SRD rnr_retry 7 retries without end: a receiver with no receive posted keeps a send in "
                    + "flight without a completion (set Options.withRnrRetry(0..6) where the device allows it)");
        }
        return b.toString();
    }

    /** At close, lock held, once the QP is destroyed: drops every AH reference still held. */
    void releaseAllLocked() {
        java.util.Arrays.fill(waitingResend, false);
        awaitingResend = 0;
        for (int i = 0; i < inFlight.length; i++) {
            if (inFlight[i] != null) {
                release(inFlight[i]);
                inFlight[i] = null;
            }
        }
        closeLingering();
    }
}
