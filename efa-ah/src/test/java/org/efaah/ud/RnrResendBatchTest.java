package org.efaah.ud;

import static org.efaah.ud.SrdEndpointFixture.fill;
import static org.efaah.ud.SrdEndpointFixture.payloads;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 35 item 2 (the sender's own cost): SRD resends due together go to the provider in one
 * call, and those due when a batch goes out go in the batch's own call, ahead of its new sends.
 * In the warm stream over the EFA double about one datagram in eight met RNR, and each resend was
 * a post of its own (three guards, a JNI call, the double's lock): most of the sender's provider
 * calls. Counted at the SPI on the mock's EFA devices, whose SRD QPs complete a send that finds no
 * receive with an RNR error ({@code rnr_retry} 3, the endpoint's default). A count, not a time.
 */
@org.junit.jupiter.api.Tag("timing") // a reader thread beside the sender: scripts/test runs it under load (TimingRounds)
class RnrResendBatchTest {
    /**
     * Counts send posts (one per provider call, single or chained) and the CQ arms made by one thread
     * ({@link #armer}). Arms by every thread would count the receiver's too: its waits arm its receive
     * CQ once per datagram that finds it waiting, as many as the scheduler spreads the resends' arrivals.
     */
    private static final class Counting extends PostCountingVerbs {
        final AtomicLong arms = new AtomicLong();
        final AtomicLong allArms = new AtomicLong();
        volatile Thread armer;

        @Override
        public void requestCqNotification(long cq) {
            allArms.incrementAndGet();
            if (Thread.currentThread() == armer) {
                arms.incrementAndGet();
            }
            super.requestCqNotification(cq);
        }

        Counting(MockVerbsProvider mock) {
            super(mock);
        }
    }

    private final Counting counting = new Counting(new MockVerbsProvider(MockConfig.builder().deviceCount(2).build()));
    private final SrdEndpointFixture fixture = new SrdEndpointFixture(counting);
    private final AddressHandleCache cache = fixture.cache;

    @AfterEach
    void closeAll() throws Exception {
        fixture.close();
    }

    private UdEndpoint endpoint(int device, int sendDepth, int receiveDepth) {
        return fixture.endpoint(device, sendDepth, receiveDepth);
    }

    /** Reads what {@code b} has, {@code count} datagrams, returning their tags in arrival order. */
    private static String read(UdEndpoint b, int count) {
        StringBuilder tags = new StringBuilder();
        while (tags.length() < count) {
            int got = b.receive(d -> tags.append((char) d.payload().get(0)), count - tags.length(), 5, TimeUnit.SECONDS);
            assertTrue(got > 0, "datagrams within 5 s; so far " + tags);
        }
        return tags.toString();
    }

    @Test
    void resendsDueTogetherGoInOneCall() {
        UdEndpoint a = endpoint(0, 8, 16);
        UdEndpoint b = endpoint(1, 8, 8);
        try (AddressHandle toB = cache.acquire(a.pd(), AddressHandleAttributes.forGid(b.address().gid()))) {
            fill(a, toB, b, 8);
            a.sendBatch(toB, b.address(), payloads('R', 8), 0, 8); // all 8 meet RNR; their completions wait on a's CQ
            assertEquals("XXXXXXXX", read(b, 8), "b's first 8"); // and b posts its 8 receives again
            long posts = counting.posts.get();
            long resends = a.counters().rnrResends();
            assertTrue(a.flush(5, TimeUnit.SECONDS), "the R completed");
            assertEquals("RRRRRRRR", read(b, 8), "each R once");
            long resent = a.counters().rnrResends() - resends;
            long calls = counting.posts.get() - posts;
            System.out.printf("FIGURE SRD resends of 8 sends due together: %d resends in %d provider calls%n",
                    resent, calls);
            assertEquals(8, resent, "each R resent once");
            // The flush reaps the 8 RNRs, each due at once (a first RNR's backoff is 0), and posts them.
            assertEquals(1, calls, "provider calls for " + resent + " resends due together");
            assertEquals(0, a.counters().failedSends());
        }
    }

    @Test
    void resendsDueWhenABatchGoesOutGoInItsCallAheadOfItsNewSends() {
        UdEndpoint a = endpoint(0, 16, 16);
        UdEndpoint b = endpoint(1, 16, 32);
        try (AddressHandle toB = cache.acquire(a.pd(), AddressHandleAttributes.forGid(b.address().gid()))) {
            fill(a, toB, b, 16);
            fill(a, toB, b, 16);
            a.sendBatch(toB, b.address(), payloads('R', 8), 0, 8); // all 8 meet RNR; their completions wait on a's CQ
            assertEquals("X".repeat(32), read(b, 32), "b's first 32"); // and b posts its 32 receives again
            long posts = counting.posts.get();
            long resends = a.counters().rnrResends();
            // 8 slots free: the poll reaps the 8 RNRs (due at once), then one call posts them and 8 N;
            // the other 8 N go in a second call once those complete.
            a.sendBatch(toB, b.address(), payloads('N', 16), 0, 16);
            long calls = counting.posts.get() - posts;
            assertTrue(a.flush(5, TimeUnit.SECONDS), "every send completed");
            assertEquals(8, a.counters().rnrResends() - resends, "each R resent once");
            assertEquals("R".repeat(8) + "N".repeat(16), read(b, 24), "the resends first, then the new sends");
            System.out.printf("FIGURE SRD batch of 16 with 8 resends due: %d provider calls%n", calls);
            assertEquals(2, calls, "provider calls for 8 resends and 16 new sends in 8 free slots");
            assertEquals(0, a.counters().failedSends());
        }
    }

    /*
     * A wait for a slot while every slot waits to be resent (its receiver has no receive) must not
     * arm the send CQ for each resend: a resend posted by the wait's step and left unreaped makes the
     * wait look idle, so it arms and sleeps, and the resend's completion raises an event nobody reads.
     * Over the EFA double such events filled the completion channel's pipe and the double's write of
     * the next one blocked the sender for good (a warm stream under load); on a device they pile up
     * in the kernel's event queue. The resends' completions are reaped in the step that posts them.
     */
    @Test
    void aWaitWhileEverySlotWaitsToBeResentDoesNotArmForEachResend() throws Exception {
        UdEndpoint a = endpoint(0, 8, 16);
        UdEndpoint b = endpoint(1, 8, 8);
        try (AddressHandle toB = cache.acquire(a.pd(), AddressHandleAttributes.forGid(b.address().gid()))) {
            fill(a, toB, b, 8);
            a.sendBatch(toB, b.address(), payloads('R', 8), 0, 8); // every slot: RNR, then resends
            long resends = a.counters().rnrResends();
            // b reads nothing until the R have been resent 64 times since here (at most 10 s), not
            // for a fixed time: a sender held off the CPU through a fixed wait would resend too few.
            java.util.concurrent.CompletableFuture<String> reader = java.util.concurrent.CompletableFuture.supplyAsync(
                    () -> {
                        long bound = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                        while (a.counters().rnrResends() - resends < 64 && System.nanoTime() - bound < 0) {
                            java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
                        }
                        return read(b, 8 + 8 + 8);
                    });
            // Only a's send waiter arms on this thread (the reader arms b's receive CQ on its own).
            counting.armer = Thread.currentThread();
            long arms = counting.arms.get();
            long allArms = counting.allArms.get();
            a.sendBatch(toB, b.address(), payloads('S', 8), 0, 8); // waits for the R to go
            long armed = counting.arms.get() - arms;
            long armedByAll = counting.allArms.get() - allArms;
            long resent = a.counters().rnrResends() - resends;
            assertTrue(a.flush(5, TimeUnit.SECONDS), "every send completed");
            String tags = reader.get(10, TimeUnit.SECONDS);
            assertEquals(8, tags.chars().filter(c -> c == 'R').count(), "each R once: " + tags);
            assertEquals(8, tags.chars().filter(c -> c == 'S').count(), "each S once: " + tags);
            System.out.printf("FIGURE SRD wait for a slot while 8 resends back off: %d resends, %d arms of the send CQ"
                    + " (%d by every thread)%n", resent, armed, armedByAll);
            assertTrue(resent > 8, "the R were resent more than once while b read nothing: " + resent);
            assertTrue(armed <= 2, "arms of the send CQ while every slot waited to be resent: " + armed);
        }
    }
}
