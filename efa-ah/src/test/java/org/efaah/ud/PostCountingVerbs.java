package org.efaah.ud;

import java.util.concurrent.atomic.AtomicLong;
import org.efaah.verbs.ForwardingVerbsProvider;
import org.efaah.verbs.SendRequests;
import org.efaah.verbs.mock.MockVerbsProvider;

/**
 * A provider over the mock that counts send posts: one per provider call, single or chained,
 * whichever of the SPI's three forms the endpoint uses. Tests that count other calls extend it.
 */
class PostCountingVerbs extends ForwardingVerbsProvider {
    final AtomicLong posts = new AtomicLong();

    PostCountingVerbs(MockVerbsProvider mock) {
        super(mock);
    }

    @Override
    public void postSend(long qp, long ah, int remoteQpn, int remoteQkey, long mr, int offset, int length,
                         long wrId) {
        posts.incrementAndGet();
        super.postSend(qp, ah, remoteQpn, remoteQkey, mr, offset, length, wrId);
    }

    @Override
    public int postSends(long qp, long ah, int remoteQpn, int remoteQkey, long mr, int[] offsets, int[] lengths,
                         long[] wrIds, int count) {
        posts.incrementAndGet();
        // Past the count: the mock's own loop of single posts, not counted again.
        return delegate().datagrams().postSends(qp, ah, remoteQpn, remoteQkey, mr, offsets, lengths, wrIds, count);
    }

    @Override
    public int postSends(long qp, long ah, int remoteQpn, int remoteQkey, long mr, SendRequests requests,
                         int count) {
        posts.incrementAndGet();
        return delegate().datagrams().postSends(qp, ah, remoteQpn, remoteQkey, mr, requests, count);
    }
}
