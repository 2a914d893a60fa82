package org.efaah.ud;

/*
 * EFA names a sender by the AHN of the receiver's AH for it, which the device writes into the
 * completion when the datagram arrives; the endpoint looks it up when it polls, and the cache
 * vouches for an AHN only if no create in the PD returned that number since a mark
 * (AddressHandleCache.ahnReuseMark) read before the datagram arrived. This class tells, for each
 * completion taken from the receive CQ, the newest mark known to be older than its arrival.
 *
 * A mark m is read before each poll of the CQ, with P the receives then posted and not yet taken.
 * A completion written before m used one of those P receives, and the CQ hands completions out
 * in the order they were written, so:
 *  - count rule: once P more completions have been taken, every later one was written after m;
 *  - empty rule: a poll that comes back short found the CQ empty, so every completion a later
 *    poll returns was written after the m read before that short poll.
 * The first rule keeps the mark moving on a CQ that never empties (a receiver behind its
 * senders), the second on a quiet one with many receives posted. The first mark is read before
 * the QP is made, when nothing can have arrived. After a recovery makes a new QP and CQ, every
 * completion is newer than the last mark read, which was read before that QP existed.
 *
 * Not thread-safe: ReceiveSlots calls it under its receive lock. The device's look-up of the AH
 * and its write of the completion are taken as one step ("arrival"): a datagram whose look-up
 * came before a mark but whose completion was written after it would need the device to destroy
 * and create an AH in between, inside its own handling of that one packet.
 */
final class ArrivalMarks {
    /** The mark the completions taken now are named by. */
    private long current;
    /** A mark read before a poll, valid once {@link #pendingCount} more completions were taken; count -1: none. */
    private long pending;
    private int pendingCount = -1;
    /** The mark read before the last poll, and whether that poll came back short. */
    private long lastPoll;
    private boolean lastPollShort;

    /** @param beforeQp the mark read before the QP was made */
    ArrivalMarks(long beforeQp) {
        current = beforeQp;
        lastPoll = beforeQp;
    }

    /**
     * Before a poll of the CQ, with every completion of the previous poll taken.
     *
     * @param mark        the cache's mark, read now
     * @param outstanding receives posted and not yet taken
     */
    void beforePoll(long mark, int outstanding) {
        if (lastPollShort) {
            promote(lastPoll);
            lastPollShort = false; // a poll that throws says nothing of the CQ
        }
        lastPoll = mark;
        if (pendingCount < 0) {
            pending = mark;
            pendingCount = outstanding;
        }
    }

    /** After that poll: whether it came back with fewer completions than it asked for. */
    void afterPoll(boolean cameBackShort) {
        lastPollShort = cameBackShort;
    }

    /** A completion is taken: returns the mark to name its sender by. */
    long take() {
        if (pendingCount == 0) {
            promote(pending);
        } else if (pendingCount > 0) {
            pendingCount--;
        }
        return current;
    }

    /** The QP and CQ are gone, and new ones will be made: every later completion is newer than the last mark. */
    void qpDiscarded() {
        promote(lastPoll);
        lastPollShort = false;
    }

    private void promote(long mark) {
        current = Math.max(current, mark);
        if (pendingCount >= 0 && pending <= mark) {
            pendingCount = -1;
        }
    }
}
