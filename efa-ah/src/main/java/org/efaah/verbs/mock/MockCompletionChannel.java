package org.efaah.verbs.mock;

import java.util.List;
import org.efaah.verbs.spi.CompletionChannelVerbs;
import org.efaah.verbs.spi.VerbsProvider;

/**
 * A completion channel of the mock ({@code struct ibv_comp_channel} as the native stub uses it: one
 * CQ, a stop signal). The notification contract it models is libibverbs' and the kernel's:
 * <ul>
 * <li>no event unless the CQ was armed ({@code ibv_req_notify_cq}); one event per arm, however many
 * completions follow, until armed again (the kernel's {@code ib_uverbs_comp_handler} is called once
 * per arm by the driver);</li>
 * <li>completions already in the CQ when it is armed give no event: the waiter must poll once more
 * after arming, or sleep through them;</li>
 * <li>events read are acknowledged in batches, the rest before the CQ is destroyed
 * ({@code ibv_cmd_destroy_cq} waits for every reported event to be acknowledged); events still
 * unread when the CQ goes are dropped with it ({@code ib_uverbs_release_ucq}).</li>
 * </ul>
 * Posting, waking, stopping and waiting are {@link MockChannel}'s, as for the other channels of the
 * mock; what is its own is the count it returns and the acknowledgements. The fabric only posts
 * events here (fabric, then channel: the one lock order).
 */
final class MockCompletionChannel {
    private static final int ACK_BATCH = 64;
    final MockVerbsProvider.MockContext context;
    /** The CQ on this channel, or null; guarded by the fabric's monitor. */
    Object cq;
    /* One item per event: what a wait takes is counted, never looked at. */
    private final MockChannel<Boolean> events = new MockChannel<>(0);
    private int unacked;
    private long eventsPosted;

    MockCompletionChannel(MockVerbsProvider.MockContext context) {
        this.context = context;
    }

    void post() {
        synchronized (this) {
            eventsPosted++;
        }
        events.post(Boolean.TRUE);
    }

    void wake() {
        events.wake();
    }

    void stop() {
        events.stop();
    }

    /** Events posted so far, for tests of the contract. */
    synchronized long eventsPosted() {
        return eventsPosted;
    }

    /** The CQ is destroyed: unread events go with it, read ones are acknowledged first. */
    void cqDestroyed() {
        events.clear();
        synchronized (this) {
            unacked = 0;
        }
    }

    int await(int timeoutMillis) {
        List<Boolean> taken = events.await(timeoutMillis);
        if (taken == null) {
            return CompletionChannelVerbs.CHANNEL_STOPPED;
        }
        int n = taken.size();
        synchronized (this) {
            unacked += n;
            if (unacked >= ACK_BATCH) {
                unacked = 0;
            }
        }
        return n;
    }
}
