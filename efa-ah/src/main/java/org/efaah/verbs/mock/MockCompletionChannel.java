package org.efaah.verbs.mock;

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
 * Waits use this object's monitor, never the fabric's, which only posts events here (fabric, then
 * channel: the one lock order). A wait is ended by {@link #wake()}, as the native one by its wake
 * eventfd; an interrupt of the waiting thread also ends it early (the flag kept).
 */
final class MockCompletionChannel {
    private static final int ACK_BATCH = 64;
    final MockVerbsProvider.MockContext context;
    /** The CQ on this channel, or null; guarded by the fabric's monitor. */
    Object cq;
    private int pending;
    private int unacked;
    private boolean stopped;
    private boolean woken;
    private long eventsPosted;

    MockCompletionChannel(MockVerbsProvider.MockContext context) {
        this.context = context;
    }

    synchronized void post() {
        pending++;
        eventsPosted++;
        notifyAll();
    }

    synchronized void wake() {
        woken = true;
        notifyAll();
    }

    synchronized void stop() {
        stopped = true;
        notifyAll();
    }

    /** Events posted so far, for tests of the contract. */
    synchronized long eventsPosted() {
        return eventsPosted;
    }

    /** The CQ is destroyed: unread events go with it, read ones are acknowledged first. */
    synchronized void cqDestroyed() {
        pending = 0;
        unacked = 0;
    }

    int await(int timeoutMillis) {
        long deadline = System.nanoTime() + timeoutMillis * 1_000_000L;
        synchronized (this) {
            while (!stopped && pending == 0 && !woken) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return 0;
                }
                try {
                    wait(Math.max(1, left / 1_000_000L));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return 0;
                }
            }
            if (stopped) {
                return CompletionChannelVerbs.CHANNEL_STOPPED;
            }
            woken = false;
            int n = pending;
            pending = 0;
            unacked += n;
            if (unacked >= ACK_BATCH) {
                unacked = 0;
            }
            return n;
        }
    }
}
