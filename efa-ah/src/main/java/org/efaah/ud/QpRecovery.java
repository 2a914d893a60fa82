package org.efaah.ud;

import java.util.concurrent.atomic.AtomicLong;
import org.efaah.verbs.EfaCompletionStatus;
import org.efaah.verbs.QueuePairState;
import org.efaah.verbs.UdQueuePair;
import org.efaah.verbs.WorkCompletion;

/**
 * An endpoint's way out of the QP error state. After an error completion it decides whether the QP
 * is in error (from the completion alone for a send on EFA, else by asking the QP); when it is, the endpoint's callers drive the recovery a step at a time:
 * <ol>
 * <li>the QP is moved to ERR by {@code ibv_modify_qp} once, so that a provider that flushes at ERR
 *     flushes what is posted (one the device put in error may not have);</li>
 * <li>both CQs are polled, for at most the endpoint's flush bound, until every send and receive
 *     posted before the error has completed and been polled: failed sends are kept for the caller,
 *     datagrams that arrived before the error are still handed out;</li>
 * <li>all drained in time: RESET, INIT, RTR, RTS on the same QP (its QPN stays), every receive
 *     reposted;</li>
 * <li>the bound passed first: the QP is destroyed, the sends still in flight are reported failed
 *     ({@code IBV_WC_WR_FLUSH_ERR}, their AH references dropped only now that no device can use
 *     them), both CQs are destroyed, new CQs and a new QP (a new QPN) are made, and every receive is
 *     posted on it.</li>
 * </ol>
 * The drain comes before a RESET because libefa names a completion's {@code wr_id} by slot when it
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
 */
final class QpRecovery {
    private final UdEndpoint endpoint;
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
    // Written under both locks, read without them.
    private final AtomicLong recoveries = new AtomicLong();
    private final AtomicLong remade = new AtomicLong();

    QpRecovery(UdEndpoint endpoint, EndpointResources resources, int portNum, long qkey, int rnrRetry, boolean efa,
               long flushBoundNanos) {
        this.endpoint = endpoint;
        this.resources = resources;
        this.portNum = portNum;
        this.qkey = qkey;
        this.rnrRetry = rnrRetry;
        this.efa = efa;
        this.flushBoundNanos = flushBoundNanos;
    }

    boolean needsRecovery() {
        return needsRecovery;
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
            endpoint.recoveryBegun();
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
                endpoint.recoveryBegun();
            }
        }
        return needsRecovery;
    }

    /** One step of a recovery, when one is needed: a drain step, or the reset or remake that ends it. */
    void recoverIfNeeded() {
        if (needsRecovery) {
            step();
        }
    }

    private void step() {
        SendSlots sends = endpoint.sends;
        ReceiveSlots receives = endpoint.receives;
        sends.lock.lock();
        try {
            receives.lock.lock();
            try {
                if (!needsRecovery || endpoint.closed()) {
                    return;
                }
                if (!flushRequested) {
                    resources.qp.moveToError();
                    flushRequested = true;
                    flushDeadline = System.nanoTime() + flushBoundNanos;
                }
                QpRecoveryRecord event = new QpRecoveryRecord();
                // Both drained in this one step, under both locks: nothing can be posted in between.
                // A remake that failed partway is finished first: its QP or CQs may be gone.
                if (!remaking && sends.drainedLocked() & receives.drainedLocked()) {
                    event.begin();
                    UdQueuePair qp = resources.qp;
                    qp.reset();
                    qp.activate(portNum, 0, qkey, rnrRetry);
                } else if (remaking || System.nanoTime() - flushDeadline >= 0) {
                    event.begin();
                    remaking = true;
                    remake(sends, receives);
                    remaking = false;
                    event.remade = true;
                } else {
                    return;
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
                receives.lock.unlock();
            }
        } finally {
            sends.lock.unlock();
        }
    }

    /**
     * Past the bound, both locks held: the QP destroyed first (no device then uses an AH or a
     * buffer of its sends), what it still held given up, its CQs destroyed, new ones made. Each
     * part can fail and is retried by the next step: a closed QP or CQ is not closed again.
     */
    private void remake(SendSlots sends, ReceiveSlots receives) {
        resources.qp.close();
        sends.discardLocked();
        receives.discardLocked();
        resources.closeCqs();
        resources.remakeQpAndCqs();
        sends.attachLocked(resources.qp, resources.sendCq);
        receives.attachLocked(resources.qp, resources.receiveCq);
        endpoint.attached(resources.qp);
        remade.setOpaque(remade.getOpaque() + 1);
    }
}
