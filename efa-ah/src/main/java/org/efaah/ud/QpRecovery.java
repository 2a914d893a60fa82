package org.efaah.ud;

import java.util.concurrent.atomic.AtomicLong;
import org.efaah.verbs.QueuePairState;
import org.efaah.verbs.UdQueuePair;

/**
 * An endpoint's way out of the QP error state. After an error completion it asks the QP its state
 * ({@code ibv_query_qp}); when in error, the endpoint's callers drive the recovery a step at a time:
 * <ol>
 * <li>the QP is moved to ERR by {@code ibv_modify_qp} once, so that every provider flushes what is
 *     posted (one the device put in error may not have);</li>
 * <li>both CQs are polled until every send and receive posted before the error has completed and
 *     been polled: failed sends are kept for the caller, datagrams that arrived before the error are
 *     still handed out;</li>
 * <li>only then RESET, INIT, RTR, RTS, and every receive reposted.</li>
 * </ol>
 * The drain comes first because libefa names a completion's {@code wr_id} by slot when it is polled,
 * and RESET rewinds the slots ({@code efa_qp_init_indices}): a completion from before the reset polled
 * after it would read a new work request's {@code wr_id}, or break libefa's slot pool.
 *
 * <p>Locks: {@link #recoverIfNeeded()} takes the send lock, then the receive lock (the endpoint's
 * order), and holds them only for one drain step or the reset and reposts, none of which waits.
 * {@link #checkQpState()} takes no lock.
 */
final class QpRecovery {
    private final UdEndpoint endpoint;
    private final UdQueuePair qp;
    private final int portNum;
    private final long qkey;
    private final int rnrRetry;
    /** Set when a completion showed the QP in the error state; cleared once the QP is back in RTS. */
    private volatile boolean needsRecovery;
    /** Whether this recovery has moved the QP to ERR yet; written under both locks. */
    private boolean flushRequested;
    /** Recoveries done; written under both locks, read without them. */
    private final AtomicLong recoveries = new AtomicLong();

    QpRecovery(UdEndpoint endpoint, UdQueuePair qp, int portNum, long qkey, int rnrRetry) {
        this.endpoint = endpoint;
        this.qp = qp;
        this.portNum = portNum;
        this.qkey = qkey;
        this.rnrRetry = rnrRetry;
    }

    boolean needsRecovery() {
        return needsRecovery;
    }

    long recoveries() {
        return recoveries.getOpaque();
    }

    /** After an error completion: is the QP in the error state? If so, mark it for recovery. */
    boolean checkQpState() {
        if (needsRecovery) {
            return true;
        }
        if (QueuePairState.isError(qp.state())) {
            needsRecovery = true;
            return true;
        }
        return false;
    }

    /** One step of a recovery, when one is needed: a drain step, or the reset once drained. */
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
                    qp.moveToError();
                    flushRequested = true;
                }
                // Both drained in this one step, under both locks: nothing can be posted in between.
                boolean sendsDrained = sends.drainedLocked();
                if (!(receives.drainedLocked() && sendsDrained)) {
                    return;
                }
                QpRecoveryRecord event = new QpRecoveryRecord();
                event.begin();
                qp.reset();
                qp.activate(portNum, 0, qkey, rnrRetry);
                // Back in RTS, the recovery is over before the reposts: a repost that fails (thrown
                // to this caller) drops its slot as any failed repost does, and must not leave
                // every later send waiting on receives that can no longer be flushed.
                flushRequested = false;
                needsRecovery = false;
                recoveries.setOpaque(recoveries.getOpaque() + 1);
                if (event.shouldCommit()) {
                    event.device = qp.pd().device().name();
                    event.qpn = qp.qpn();
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
}
