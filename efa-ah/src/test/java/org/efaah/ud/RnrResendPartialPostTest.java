package org.efaah.ud;

import static org.efaah.ud.SrdEndpointFixture.fill;
import static org.efaah.ud.SrdEndpointFixture.payloads;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Errno;
import org.efaah.verbs.ForwardingVerbsProvider;
import org.efaah.verbs.SendRequests;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.WorkCompletion;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The batch's own post carries the SRD resends due ahead of its new sends (issue 35 item 2): what
 * happens when the provider takes only part of that post, or refuses its first request
 * ({@code ibv_post_send} stops at the first it refuses; the SPI's postSends returns how many it
 * took, or throws when it took none). Every send goes out once, none is lost or kept, the counters
 * count what went, and the new sends not taken keep their payloads' positions. On the mock's EFA
 * devices, whose SRD QPs complete a send that finds no receive with an RNR error.
 */
class RnrResendPartialPostTest {
    /** The mock, whose next batched post of more than {@link #takeOnly} requests takes only that many (0: throws). */
    private static final class Refusing extends ForwardingVerbsProvider {
        volatile int takeOnly = -1;
        /** The size of the post that was refused in part or whole. */
        volatile int refusedCount;
        /** A batched post to this QPN throws, once (-1: none). */
        volatile int throwFor = -1;

        Refusing(MockVerbsProvider mock) {
            super(mock);
        }

        @Override
        public int postSends(long qp, long ah, int remoteQpn, int remoteQkey, long mr, SendRequests requests,
                             int count) {
            if (remoteQpn == throwFor) {
                throwFor = -1;
                refusedCount = count;
                throw new VerbsException("ibv_post_send", Errno.ENOMEM, "injected: the send queue is full");
            }
            int only = takeOnly;
            if (only >= 0 && count > only) {
                takeOnly = -1;
                refusedCount = count;
                if (only == 0) {
                    throw new VerbsException("ibv_post_send", Errno.ENOMEM, "injected: the send queue is full");
                }
                return delegate().datagrams().postSends(qp, ah, remoteQpn, remoteQkey, mr, requests, only);
            }
            return delegate().datagrams().postSends(qp, ah, remoteQpn, remoteQkey, mr, requests, count);
        }
    }

    private final Refusing provider = new Refusing(new MockVerbsProvider(MockConfig.builder().deviceCount(3).build()));
    private final SrdEndpointFixture fixture = new SrdEndpointFixture(provider);
    private final AddressHandleCache cache = fixture.cache;

    @AfterEach
    void closeAll() throws Exception {
        fixture.close();
    }

    private UdEndpoint endpoint(int device, int sendDepth, int receiveDepth) {
        return fixture.endpoint(device, sendDepth, receiveDepth);
    }

    /** Reads {@code count} datagrams of {@code b}, as "tag index" words in arrival order. */
    private static List<String> read(UdEndpoint b, int count) {
        List<String> got = new ArrayList<>();
        while (got.size() < count) {
            int n = b.receive(d -> got.add((char) d.payload().get(0) + "" + d.payload().get(1)), count - got.size(), 5,
                    TimeUnit.SECONDS);
            assertTrue(n > 0, "datagrams within 5 s; so far " + got);
        }
        assertEquals(0, b.receive(d -> got.add("extra " + (char) d.payload().get(0)), 1, 50, TimeUnit.MILLISECONDS),
                "no datagram twice: " + got);
        return got;
    }

    private static long count(List<String> words, char tag) {
        return words.stream().filter(w -> w.charAt(0) == tag).count();
    }

    private static long distinct(List<String> words, char tag) {
        return words.stream().filter(w -> w.charAt(0) == tag).distinct().count();
    }

    /**
     * a holds 8 resends due to b (their RNRs queued on a's CQ, b's receives posted again), and a
     * batch of 16 new sends goes out in a's 8 free slots: its first post is 8 resends and 8 new.
     */
    private void partial(int takeOnly) {
        UdEndpoint a = endpoint(0, 16, 16);
        UdEndpoint b = endpoint(1, 16, 32);
        try (AddressHandle toB = cache.acquire(a.pd(), AddressHandleAttributes.forGid(b.address().gid()))) {
            owe8(a, toB, b);
            UdEndpoint.Counters before = a.counters();
            ByteBuffer[] n = payloads('N', 16);
            provider.takeOnly = takeOnly;
            a.sendBatch(toB, b.address(), n, 0, 16);
            assertTrue(a.flush(5, TimeUnit.SECONDS), "every send completed");
            assertEquals(-1, provider.takeOnly, "the post that was to be refused in part never came");
            assertEquals(16, provider.refusedCount, "the refused post: 8 resends and 8 new sends");
            for (ByteBuffer p : n) {
                assertEquals(0, p.remaining(), "a new send's payload not consumed");
            }
            List<String> got = read(b, 24);
            assertEquals(8, distinct(got, 'R'), "each R once: " + got);
            assertEquals(16, distinct(got, 'N'), "each N once: " + got);
            UdEndpoint.Counters after = a.counters();
            assertEquals(8, after.rnrResends() - before.rnrResends(), "resends counted: " + after);
            assertEquals(16, after.sent() - before.sent(), "new sends counted: " + after);
            assertEquals(0, after.failedSends(), after.toString());
            assertEquals(0, a.sendsInFlight());
        }
    }

    @Test
    void aPostTakingPartOfItsResendsLosesNone() {
        partial(3);
    }

    @Test
    void aPostTakingItsResendsAndPartOfItsNewSendsLosesNone() {
        partial(10);
    }

    @Test
    void aPostTakingExactlyItsResends() {
        partial(8);
    }

    @Test
    void aPostRefusedAtItsFirstResendReportsThatResendAndLosesNoOther() {
        UdEndpoint a = endpoint(0, 16, 16);
        UdEndpoint b = endpoint(1, 16, 32);
        try (AddressHandle toB = cache.acquire(a.pd(), AddressHandleAttributes.forGid(b.address().gid()))) {
            owe8(a, toB, b);
            UdEndpoint.Counters before = a.counters();
            ByteBuffer[] n = payloads('N', 16);
            provider.takeOnly = 0;
            VerbsException refused = assertThrows(VerbsException.class, () -> a.sendBatch(toB, b.address(), n, 0, 16));
            assertEquals(Errno.ENOMEM, refused.errno());
            assertEquals(16, provider.refusedCount, "the refused post: 8 resends and 8 new sends");
            for (ByteBuffer p : n) {
                assertEquals(2, p.remaining(), "a payload consumed by a post that threw");
            }
            WorkCompletionException rnr = assertThrows(WorkCompletionException.class, () -> a.flush(5, TimeUnit.SECONDS));
            assertEquals(1, rnr.failures().size(), rnr.failures().toString());
            assertEquals(WorkCompletion.RNR_RETRY_EXC_ERR, rnr.failures().get(0).status());
            a.sendBatch(toB, b.address(), n, 0, 16);
            assertTrue(a.flush(5, TimeUnit.SECONDS), "every send completed");
            List<String> got = read(b, 23);
            assertEquals(7, distinct(got, 'R'), "each R but the refused one once: " + got);
            assertEquals(16, distinct(got, 'N'), "each N once: " + got);
            UdEndpoint.Counters after = a.counters();
            assertEquals(7, after.rnrResends() - before.rnrResends(), after.toString());
            assertEquals(16, after.sent() - before.sent(), after.toString());
            assertEquals(1, after.failedSends() - before.failedSends(), after.toString());
            assertEquals(0, a.sendsInFlight());
        }
    }

    /**
     * Leaves a (send depth 16) owing 8 resends to b (its receive depth 32), their RNRs queued on
     * a's CQ and b's receives posted again: the next batch of 16 from a posts 8 resends and 8 new.
     */
    private static void owe8(UdEndpoint a, AddressHandle toB, UdEndpoint b) {
        fill(a, toB, b, 16);
        fill(a, toB, b, 16);
        a.sendBatch(toB, b.address(), payloads('R', 8), 0, 8); // all 8 meet RNR
        assertEquals(32, count(read(b, 32), 'X'));
    }

    /**
     * Leaves a (send depth 32) owing 8 resends to b (R) and 8 to c (S), their RNRs queued on a's CQ
     * and b's and c's receives posted again.
     */
    private static void owe8Each(UdEndpoint a, AddressHandle toB, UdEndpoint b, AddressHandle toC, UdEndpoint c) {
        fill(a, toB, b, 32);
        fill(a, toC, c, 8);
        a.sendBatch(toB, b.address(), payloads('R', 8), 0, 8);
        a.sendBatch(toC, c.address(), payloads('S', 8), 0, 8);
        assertEquals(32, count(read(b, 32), 'X'));
        assertEquals(8, count(read(c, 8), 'X'));
    }

    /** Resends due to b and to c when a batch to b goes out: b's in its post, c's in a call of their own. */
    @Test
    void resendsDueElsewhereGoInTheirOwnCall() {
        UdEndpoint a = endpoint(0, 32, 16);
        UdEndpoint b = endpoint(1, 16, 32);
        UdEndpoint c = endpoint(2, 16, 8);
        try (AddressHandle toB = cache.acquire(a.pd(), AddressHandleAttributes.forGid(b.address().gid()));
             AddressHandle toC = cache.acquire(a.pd(), AddressHandleAttributes.forGid(c.address().gid()))) {
            owe8Each(a, toB, b, toC, c);
            UdEndpoint.Counters before = a.counters();
            a.sendBatch(toB, b.address(), payloads('N', 17), 0, 17);
            assertTrue(a.flush(5, TimeUnit.SECONDS), "every send completed");
            List<String> atB = read(b, 25);
            List<String> atC = read(c, 8);
            assertEquals(8, distinct(atB, 'R'), atB.toString());
            assertEquals(17, distinct(atB, 'N'), atB.toString());
            assertEquals(8, distinct(atC, 'S'), atC.toString());
            UdEndpoint.Counters after = a.counters();
            assertEquals(16, after.rnrResends() - before.rnrResends(), after.toString());
            assertEquals(0, after.failedSends(), after.toString());
        }
    }

    /*
     * The resends due elsewhere go in a call of their own after the batch's post: when that call
     * is refused, the batch's own sends are posted and consumed, and what is thrown is the failed
     * send it is (the RNR the refused resend met, to its own QPN, the provider's refusal beside it),
     * at the batch's next step, as any failure found mid-batch. Before: the other destination's
     * ENOMEM, thrown as if this batch's post had been refused.
     */
    @Test
    void aRefusedResendElsewhereAfterTheBatchsPostIsReportedNextAndTheBatchReturns() {
        UdEndpoint a = endpoint(0, 32, 16);
        UdEndpoint b = endpoint(1, 16, 32);
        UdEndpoint c = endpoint(2, 16, 8);
        try (AddressHandle toB = cache.acquire(a.pd(), AddressHandleAttributes.forGid(b.address().gid()));
             AddressHandle toC = cache.acquire(a.pd(), AddressHandleAttributes.forGid(c.address().gid()))) {
            owe8Each(a, toB, b, toC, c);
            UdEndpoint.Counters before = a.counters();
            provider.throwFor = c.address().qpn();
            // 17 for 16 free slots: the batch reaps the 16 RNRs first, then posts b's 8 resends and 16
            // new sends, then c's 8 resends in their own call (refused), then its 17th send.
            ByteBuffer[] n = payloads('N', 17);
            WorkCompletionException rnr = assertThrows(WorkCompletionException.class,
                    () -> a.sendBatch(toB, b.address(), n, 0, 17));
            assertEquals(-1, provider.throwFor, "the resends to c were not posted after the batch");
            for (int i = 0; i < 16; i++) {
                assertEquals(0, n[i].remaining(), "a posted payload not consumed: " + i);
            }
            assertEquals(2, n[16].remaining(), "the payload after the failure found consumed");
            assertEquals(1, rnr.failures().size(), rnr.failures().toString());
            assertEquals(WorkCompletion.RNR_RETRY_EXC_ERR, rnr.failures().get(0).status());
            assertEquals(c.address().qpn(), rnr.failures().get(0).remoteQpn(), rnr.failures().toString());
            assertEquals(1, rnr.getSuppressed().length, "the provider's refusal beside the failure");
            assertEquals(Errno.ENOMEM, ((VerbsException) rnr.getSuppressed()[0]).errno());
            a.sendBatch(toB, b.address(), n, 16, 1);
            assertTrue(a.flush(5, TimeUnit.SECONDS), "every send completed");
            List<String> atB = read(b, 25);
            List<String> atC = read(c, 7);
            assertEquals(8, distinct(atB, 'R'), atB.toString());
            assertEquals(17, distinct(atB, 'N'), atB.toString());
            assertEquals(7, distinct(atC, 'S'), "each S but the refused one: " + atC);
            UdEndpoint.Counters after = a.counters();
            assertEquals(15, after.rnrResends() - before.rnrResends(), after.toString());
            assertEquals(1, after.failedSends() - before.failedSends(), after.toString());
            assertEquals(0, a.sendsInFlight());
        }
    }

    /**
     * A batch that took 8 resends due and meets a payload it cannot read (its memory gone) posts
     * nothing: the resends wait again and go out with the next call, the new sends' slots come back.
     */
    @Test
    void aBatchWithAnUnreadablePayloadPutsItsResendsBack() throws Exception {
        ByteBuffer gone = UnreadablePayloadTest.closedArenaBuffer();
        UdEndpoint a = endpoint(0, 16, 16);
        UdEndpoint b = endpoint(1, 16, 32);
        try (AddressHandle toB = cache.acquire(a.pd(), AddressHandleAttributes.forGid(b.address().gid()))) {
            owe8(a, toB, b);
            UdEndpoint.Counters before = a.counters();
            ByteBuffer[] n = payloads('N', 16);
            ByteBuffer[] withGone = n.clone();
            withGone[5] = gone;
            assertThrows(IllegalStateException.class, () -> a.sendBatch(toB, b.address(), withGone, 0, 16));
            assertEquals(8, a.sendsInFlight(), "the 8 resends still owed, no new send's slot kept");
            a.sendBatch(toB, b.address(), n, 0, 16);
            assertTrue(a.flush(5, TimeUnit.SECONDS), "every send completed");
            List<String> got = read(b, 24);
            assertEquals(8, distinct(got, 'R'), "each R once: " + got);
            assertEquals(16, distinct(got, 'N'), "each N once: " + got);
            UdEndpoint.Counters after = a.counters();
            assertEquals(8, after.rnrResends() - before.rnrResends(), after.toString());
            assertEquals(0, after.failedSends() - before.failedSends(), after.toString());
            assertEquals(0, a.sendsInFlight());
        }
    }
}
