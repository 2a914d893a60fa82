package org.efaah.ud;

import org.efaah.verbs.Errno;
import org.efaah.verbs.ForwardingVerbsProvider;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.WorkCompletion;
import org.efaah.verbs.mock.MockVerbsProvider;

/**
 * The mock behind switches that fail the next CQ poll, QP destroy or batched receive post, that
 * refuse moves of a QP ({@code ibv_modify_qp}) as a device may refuse them, and a count of
 * {@code ibv_query_qp} calls.
 */
final class FaultyDatapath extends ForwardingVerbsProvider {
    final MockVerbsProvider mock;
    volatile boolean failNextPoll;
    volatile boolean failNextQpDestroy;
    /** The next batched receive post posts half its receives, and the single post after it fails. */
    volatile boolean failNextReceivesPartway;
    private volatile boolean failNextReceive;
    /** Every move to ERR fails (EINVAL), as a device may refuse it for a QP it put in error. */
    volatile boolean refuseError;
    /** Every move to RESET fails (EINVAL). */
    volatile boolean refuseReset;
    /** The next this many moves to RTS of a UD QP (INIT, RTR, RTS: activateUdQp) fail (EINVAL). */
    final java.util.concurrent.atomic.AtomicInteger refuseActivations = new java.util.concurrent.atomic.AtomicInteger();
    final java.util.concurrent.atomic.AtomicInteger moves = new java.util.concurrent.atomic.AtomicInteger();
    final java.util.concurrent.atomic.AtomicInteger qpStateQueries = new java.util.concurrent.atomic.AtomicInteger();

    FaultyDatapath(MockVerbsProvider mock) {
        super(mock);
        this.mock = mock;
    }

    @Override
    public int pollCq(long cq, WorkCompletion[] into) {
        if (failNextPoll) {
            failNextPoll = false;
            throw new VerbsException("ibv_poll_cq", Errno.EIO, "injected");
        }
        return super.pollCq(cq, into);
    }

    @Override
    public int queryQpState(long qp) {
        qpStateQueries.incrementAndGet();
        return super.queryQpState(qp);
    }

    @Override
    public void moveQpToError(long qp) {
        moves.incrementAndGet();
        if (refuseError) {
            throw new VerbsException("ibv_modify_qp", Errno.EINVAL, "injected: ERR refused");
        }
        super.moveQpToError(qp);
    }

    @Override
    public void resetQp(long qp) {
        moves.incrementAndGet();
        if (refuseReset) {
            throw new VerbsException("ibv_modify_qp", Errno.EINVAL, "injected: RESET refused");
        }
        super.resetQp(qp);
    }

    @Override
    public void activateUdQp(long qp, int portNum, int pkeyIndex, int qkey) {
        refuseActivation();
        super.activateUdQp(qp, portNum, pkeyIndex, qkey);
    }

    private void refuseActivation() {
        moves.incrementAndGet();
        if (refuseActivations.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
            throw new VerbsException("ibv_modify_qp", Errno.EINVAL, "injected: INIT refused");
        }
    }

    @Override
    public void destroyQp(long qp) {
        if (failNextQpDestroy) {
            failNextQpDestroy = false;
            throw new VerbsException("ibv_destroy_qp", Errno.EBUSY, "injected");
        }
        super.destroyQp(qp);
    }

    @Override
    public int postReceives(long qp, long mr, int[] offsets, int length, long[] wrIds, int count) {
        if (failNextReceivesPartway && count > 1) {
            failNextReceivesPartway = false;
            failNextReceive = true;
            return super.postReceives(qp, mr, offsets, length, wrIds, count / 2);
        }
        return super.postReceives(qp, mr, offsets, length, wrIds, count);
    }

    @Override
    public void postReceive(long qp, long mr, int offset, int length, long wrId) {
        if (failNextReceive) {
            failNextReceive = false;
            throw new VerbsException("ibv_post_recv", Errno.ENOMEM, "injected");
        }
        super.postReceive(qp, mr, offset, length, wrId);
    }
}
