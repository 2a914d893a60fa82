package org.efaah.ud;

import java.util.concurrent.atomic.AtomicLong;
import org.efaah.verbs.QueuePairState;
import org.efaah.verbs.UdQueuePair;

/**
 * An endpoint's way out of the QP error state: after an error completion it asks the QP its state
 * ({@code ibv_query_qp}); when in error, the next caller takes it through RESET, INIT, RTR and RTS,
 * reposts every receive and drops the sends in flight. The generation counts the QP's lives, so
 * that completions of an earlier life (in the high half of their {@code wr_id}) are ignored.
 *
 * <p>Locks: {@link #recoverIfNeeded()} takes the send lock, then the receive lock (the endpoint's
 * order), and holds them only for the reset and reposts, which do not wait. {@link #generation()}
 * and {@link #checkQpState()} take no lock; the generation is written with both locks held.
 */
final class QpRecovery {
    private final UdEndpoint endpoint;
    private final UdQueuePair qp;
    private final int portNum;
    private final long qkey;
    /** The QP's life since the last recovery, in the high half of every wr_id; written under both locks. */
    private volatile int generation;
    /** Set when a completion showed the QP in the error state; cleared by {@link #recoverIfNeeded()}. */
    private volatile boolean needsRecovery;
    /** Recoveries done; written under both locks, read without them. */
    private final AtomicLong recoveries = new AtomicLong();

    QpRecovery(UdEndpoint endpoint, UdQueuePair qp, int portNum, long qkey) {
        this.endpoint = endpoint;
        this.qp = qp;
        this.portNum = portNum;
        this.qkey = qkey;
    }

    /** The QP's life since the last recovery; completions of another one are stale. */
    int generation() {
        return generation;
    }

    boolean needsRecovery() {
        return needsRecovery;
    }

    long recoveries() {
        return recoveries.getOpaque();
    }

    /** After an error completion: is the QP in the error state? If so, mark it for recovery. */
    boolean checkQpState() {
        if (QueuePairState.isError(qp.state())) {
            needsRecovery = true;
            return true;
        }
        return false;
    }

    void recoverIfNeeded() {
        if (needsRecovery) {
            recover();
        }
    }

    /**
     * Takes the QP out of the error state: RESET (dropping what was posted), INIT, RTR, RTS, then
     * every receive reposted under a new generation. Sends in flight are dropped, as the device
     * dropped them; their AH references go too, as no send can use an AH after the reset.
     */
    private void recover() {
        SendSlots sends = endpoint.sends;
        ReceiveSlots receives = endpoint.receives;
        sends.lock.lock();
        try {
            receives.lock.lock();
            try {
                if (!needsRecovery || endpoint.closed()) {
                    return;
                }
                QpRecoveryRecord event = new QpRecoveryRecord();
                event.begin();
                qp.reset();
                int next = generation + 1;
                generation = next;
                sends.dropInFlightLocked();
                qp.activate(portNum, 0, qkey);
                receives.repostAllLocked(next);
                needsRecovery = false;
                recoveries.setOpaque(recoveries.getOpaque() + 1);
                if (event.shouldCommit()) {
                    event.device = qp.pd().device().name();
                    event.qpn = qp.qpn();
                    event.generation = next;
                    event.commit();
                }
            } finally {
                receives.lock.unlock();
            }
        } finally {
            sends.lock.unlock();
        }
    }
}
