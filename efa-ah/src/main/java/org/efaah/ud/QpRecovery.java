package org.efaah.ud;

import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.efaah.verbs.CompletionQueue;
import org.efaah.verbs.EfaCompletionStatus;
import org.efaah.verbs.QueuePairState;
import org.efaah.verbs.UdQueuePair;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.WorkCompletion;

/**
 * An endpoint's way out of the QP error state. After an error completion it decides whether the QP
 * is in error (from the completion alone for a send on EFA, else by asking the QP); when it is,
 * the endpoint's callers drive the recovery a step at a time:
 * <ol>
 * <li>the QP is moved to ERR by {@code ibv_modify_qp} once, so that a provider that flushes at ERR
 *     flushes what is posted (one the device put in error may not have);</li>
 * <li>both CQs are polled, for at most the endpoint's flush bound, until every send and receive
 *     posted before the error has completed and been polled: failed sends are kept for the caller,
 *     datagrams that arrived before the error are still handed out;</li>
 * <li>all drained in time, on a device other than EFA: RESET, INIT, RTR, RTS on the same QP (its
 *     QPN stays), every receive reposted, as rdma-core's own tests recover rxe and mlx5 QPs;</li>
 * <li>otherwise the QP is destroyed, the sends still in flight are given up (reported
 *     {@code IBV_WC_WR_FLUSH_ERR}, their AH references dropped only now that no device can use
 *     them), both CQs are destroyed, new CQs and a new QP (a new QPN) are made, and every receive is
 *     posted on it: on EFA once drained or past the bound, elsewhere past the bound, and at once on
 *     every device when a modify of the recovery (to ERR, RESET, INIT, RTR or RTS) fails.</li>
 * </ol>
 * A failed modify is not tried again: the kernel's {@code efa_modify_qp} checks a move against the
 * state it cached, which still says RTS for a QP the device put in error, and whether the device
 * then refuses the command is not documented; a QP that refused once may refuse each time, and a
 * recovery that retried it would keep the endpoint failing every call. The destroy needs no
 * state. A remake that fails (a create or the new QP's modify) ends the endpoint: its caller and
 * every later send, receive and flush get a {@link VerbsException} of the failed call's errno whose
 * cause is that failure, and no create is tried again. libfabric's EFA provider likewise reports a
 * QP it could not make as the endpoint's error and does not retry it; Netty fails every later
 * write of a channel closed with a cause. A create refused once (ENOMEM, a QP limit) would be
 * refused at each call, an admin-queue command each time. {@code close()} frees what is left.
 *
 * <p>On EFA the QP is never reset: libfabric never resets an EFA QP but destroys it, and libefa's
 * {@code efa_qp_init_indices} (called by {@code efa_modify_qp} at RESET) rewinds the producer
 * index but not {@code sq.wq.phase}, which goes into every send descriptor: after an odd number of
 * laps of the send queue, a reset QP's sends carry the phase the device takes for an old
 * descriptor and may never run.
 *
 * <p>The drain comes before a RESET because libefa names a completion's {@code wr_id} by slot when it
 * is polled, and RESET rewinds the slots ({@code efa_modify_qp} calls {@code efa_qp_init_indices}):
 * a completion from before the reset polled after it would read a new work request's
 * {@code wr_id}, or break libefa's slot pool. The bound exists because an EFA QP in error may flush
 * nothing: {@code efa_io_defs.h} documents FLUSHED as "flushed during QP destroy", and libfabric
 * never resets an EFA QP but destroys it, "the EFA device will clear all active WQEs on
 * ibv_destroy_qp() and return error completions" (PR #10968). The CQs go with the QP because those
 * completions name a QP that {@code efa_destroy_qp} has removed from the context's
 * {@code qp_table}: {@code efa_poll_sub_cq} fails each with EINVAL ("Invalid QP"), and a new QP that
 * reused the QPN (and the table slot) would be handed them, with wrong {@code wr_id}s. libfabric,
 * whose CQs are shared, polls its CQs empty after the destroy instead
 * ({@code efa_base_ep_destruct_qp_unsafe}); the endpoint owns its CQs and replaces them, so no
 * completion of the old QP can reach a poll, whenever the device writes it.
 *
 * <p>Locks: {@link #recoverIfNeeded()} takes the send lock, then the receive lock (the endpoint's
 * order), and holds them for one drain step, or the reset or remake and the reposts, none of
 * which waits for a completion. {@link #checkQpState()} and {@link #inErrorAfter} take no lock.
 *
 * <p>It knows what lies beneath it, the QP and its CQs ({@link EndpointResources}); the send and
 * receive sides it drains and moves to a new QP reach it as {@link Side}s ({@link #drives}), and
 * what it tells the endpoint (a recovery begun, a new QP) goes through the two callbacks it was
 * made with.
 */
final class QpRecovery {
    /**
     * One side of the endpoint (its sends, its receives) as a recovery drives it: each method is
     * called with both sides' locks held, taken in the endpoint's order (sends, then receives).
     */
    interface Side {
        /** The side's lock. */
        SlotsLock lock();

        /** Reaps what the QP in error flushed; true once nothing posted before the error is outstanding. */
        boolean drainedLocked();

        /** The QP destroyed: what the side held on it is given up, and its CQ not polled until attached. */
        void discardLocked();

        /** The new QP and this side's new CQ. */
        void attachLocked(UdQueuePair qp, CompletionQueue cq);

        /** The QP back in RTS: post again what the side keeps posted (the receives; the sends post nothing). */
        default void repostAllLocked() {
        }
    }

    /** Told when a recovery begins: waits asleep on either CQ are to go on parked, driving it. */
    private final Waker recoveryBegun;
    /** Told, both locks held, of the QP a remake made: the endpoint's address and waits follow it. */
    private final Consumer<UdQueuePair> attached;
    /** The endpoint's close: a recovery takes no step past it. */
    private final CloseFlag closeFlag;
    private Side sends;
    private Side receives;
    private final EndpointResources resources;
    private final int portNum;
    private final long qkey;
    private final int rnrRetry;
    private final boolean efa;
    private final long flushBoundNanos;
    /** Set when a completion showed the QP in the error state; cleared once a QP is in RTS again. */
    private volatile boolean needsRecovery;
    /** Whether this recovery has moved the QP to ERR yet; written under both locks. */
    private boolean flushRequested;
    /** When this recovery stops waiting for flushes ({@link System#nanoTime()}); under both locks. */
    private long flushDeadline;
    /** Whether this recovery has begun to destroy and remake the QP; under both locks. */
    private boolean remaking;
    /** The modify to ERR, RESET, INIT, RTR or RTS that failed in this recovery, or null; under both locks. */
    private VerbsException refused;
    /** EFA: the device statuses (bit n: efa_io_comp_status n) of receive errors the QP was seen to survive; under the receive lock. */
    private long receiveStatusesSurvived;
    /** The failure of the remake that ended the endpoint, or null; written under both locks. */
    private volatile VerbsException ended;
    // Written under both locks, read without them.
    private final AtomicLong recoveries = new AtomicLong();
    private final AtomicLong remade = new AtomicLong();

    QpRecovery(Waker recoveryBegun, Consumer<UdQueuePair> attached, CloseFlag closeFlag, EndpointResources resources,
               int portNum, long qkey, int rnrRetry, boolean efa, long flushBoundNanos) {
        this.recoveryBegun = recoveryBegun;
        this.attached = attached;
        this.closeFlag = closeFlag;
        this.resources = resources;
        this.portNum = portNum;
        this.qkey = qkey;
        this.rnrRetry = rnrRetry;
        this.efa = efa;
        this.flushBoundNanos = flushBoundNanos;
    }

    /**
     * The sides this recovery drains and moves to a new QP; once, by the endpoint that composes them,
     * before it is shared (they are made after the recovery, which they report to).
     */
    void drives(Side sends, Side receives) {
        this.sends = sends;
        this.receives = receives;
    }

    boolean needsRecovery() {
        return needsRecovery;
    }

    /** The recovery's part of whether a wait may sleep on a CQ's channel: not while it waits for both CQs. */
    boolean mayIdle() {
        return !needsRecovery;
    }

    long recoveries() {
        return recoveries.getOpaque();
    }

    /** Recoveries that destroyed the QP and made a new one (a new QPN). */
    long remade() {
        return remade.getOpaque();
    }

    /** After an error completion: is the QP in the error state ({@code ibv_query_qp})? If so, mark it for recovery. */
    boolean checkQpState() {
        if (needsRecovery) {
            return true;
        }
        if (QueuePairState.isError(resources.qp.state())) {
            needsRecovery = true;
            recoveryBegun.wake();
            return true;
        }
        return false;
    }

    /**
     * After a send that completed with {@code status} and {@code vendorError}: is the QP in error?
     * On EFA the completion says enough, without {@code ibv_query_qp} (an admin-queue command per
     * failed send): a flush comes only from a QP that left RTS, and of the other statuses
     * ({@code to_ibv_status}) only an internal QP error is the QP's own; the rest (remote errors,
     * RNR, an unreachable or unknown peer, a bad AH, lkey or length) fail one work request, and the
     * QP goes on, as libfabric's EFA endpoints go on sending after them
     * ({@code efa_rdm_pke_handle_tx_error}). Were the QP in error after all, the next send's flush
     * says so. Elsewhere the QP is asked.
     */
    boolean inErrorAfter(int status, int vendorError) {
        if (!efa) {
            return checkQpState();
        }
        if (status == WorkCompletion.WR_FLUSH_ERR
                || vendorError == EfaCompletionStatus.LOCAL_ERROR_QP_INTERNAL_ERROR.code()) {
            if (!needsRecovery) {
                needsRecovery = true;
                recoveryBegun.wake();
            }
        }
        return needsRecovery;
    }

    /**
     * After a receive that completed with {@code status} and {@code vendorError}: is the QP in
     * error? On EFA, the send side's rule ({@link #inErrorAfter}) where the completion says enough:
     * a flush or an internal QP error puts the QP in error. The other statuses fail one receive on
     * a QP that goes on, as far as rdma-core documents; but whether a receive too short for its
     * datagram (LOCAL_ERROR_BAD_LENGTH) leaves RTS is not documented, and a QP in error that
     * flushes nothing would never say so again. So the QP is asked ({@code ibv_query_qp}, an
     * admin-queue command shared by the host) the first time a status comes, and a status the QP
     * was then seen to survive is not asked about again: a peer sending oversized datagrams costs
     * one query, not one per datagram. Elsewhere the QP is asked each time.
     */
    boolean inErrorAfterReceive(int status, int vendorError) {
        if (!efa) {
            return checkQpState();
        }
        if (inErrorAfter(status, vendorError)) {
            return true;
        }
        long bit = vendorError >= 0 && vendorError < Long.SIZE ? 1L << vendorError : 0;
        if ((receiveStatusesSurvived & bit) != 0) {
            return false;
        }
        boolean inError = checkQpState();
        if (!inError) {
            receiveStatusesSurvived |= bit;
        }
        return inError;
    }

    /** One step of a recovery, when one is needed: a drain step, or the reset or remake that ends it. */
    void recoverIfNeeded() {
        if (needsRecovery) {
            VerbsException cause = ended;
            if (cause != null) {
                throw endedBy(cause);
            }
            step();
        }
    }

    /** The failure of the remake that ended the endpoint, or null while it can recover. */
    VerbsException ended() {
        return ended;
    }

    private static VerbsException endedBy(VerbsException cause) {
        VerbsException e = new VerbsException(cause.operation(), cause.errnoValue(),
                "the QP's remake failed; the endpoint is ended, close it");
        e.initCause(cause);
        return e;
    }

    private void step() {
        Side sends = this.sends;
        Side receives = this.receives;
        sends.lock().lock();
        try {
            receives.lock().lock();
            try {
                if (!needsRecovery || closeFlag.isClosed()) {
                    return;
                }
                if (ended != null) {
                    throw endedBy(ended);
                }
                if (!flushRequested) {
                    flushRequested = true;
                    flushDeadline = System.nanoTime() + flushBoundNanos;
                    try {
                        resources.qp.moveToError();
                    } catch (VerbsException e) {
                        // The kernel's efa_modify_qp checks the move against its own cached state
                        // (RTS for a QP the device put in error) and the device may refuse the
                        // command: no flush is coming, and only the destroy ends what is posted.
                        refused = e;
                    }
                }
                // Both drained in this one step, under both locks: nothing can be posted in between.
                // A remake that failed partway is finished first: its QP or CQs may be gone.
                boolean drained = !remaking && sends.drainedLocked() & receives.drainedLocked();
                boolean remake = remaking || refused != null || (drained && efa)
                        || System.nanoTime() - flushDeadline >= 0;
                if (!remake && !drained) {
                    return;
                }
                QpRecoveryRecord event = new QpRecoveryRecord();
                event.begin();
                if (!remake) {
                    refused = resetToRts();
                    remake = refused != null;
                }
                if (remake) {
                    remaking = true;
                    try {
                        remake(sends, receives);
                    } catch (VerbsException e) {
                        ended = e;
                        throw endedBy(e);
                    }
                    remaking = false;
                    event.remade = true;
                    event.refused = refused == null ? null : refused.getMessage();
                    refused = null;
                }
                // Back in RTS, the recovery is over before the reposts: a repost that fails (thrown
                // to this caller) drops its slot as any failed repost does, and must not leave
                // every later send waiting on receives that can no longer be flushed.
                flushRequested = false;
                needsRecovery = false;
                recoveries.setOpaque(recoveries.getOpaque() + 1);
                if (event.shouldCommit()) {
                    event.device = resources.qp.pd().device().name();
                    event.qpn = resources.qp.qpn();
                    event.recovery = recoveries.getOpaque();
                    event.commit();
                }
                receives.repostAllLocked();
            } finally {
                receives.lock().unlock();
            }
        } finally {
            sends.lock().unlock();
        }
    }

    /**
     * Where rdma-core's own tests recover a QP (rxe, mlx5), RESET, INIT, RTR, RTS on the same QP,
     * every work request drained. Returns the failure of a modify the device refused (the QP is
     * then remade), or null.
     */
    private VerbsException resetToRts() {
        UdQueuePair qp = resources.qp;
        try {
            qp.reset();
            qp.activate(portNum, 0, qkey, rnrRetry);
            return null;
        } catch (VerbsException e) {
            return e;
        }
    }

    /**
     * Past the bound, both locks held: the QP destroyed first (no device then uses an AH or a
     * buffer of its sends), what it still held given up, its CQs destroyed, new ones made. Each
     * part can fail and is retried by the next step: a closed QP or CQ is not closed again.
     */
    private void remake(Side sends, Side receives) {
        resources.qp.close();
        sends.discardLocked();
        receives.discardLocked();
        resources.closeCqs();
        resources.remakeQpAndCqs();
        sends.attachLocked(resources.qp, resources.sendCq);
        receives.attachLocked(resources.qp, resources.receiveCq);
        attached.accept(resources.qp);
        remade.setOpaque(remade.getOpaque() + 1);
    }
}
