package org.efaah.ud;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.BitSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.efaah.cache.AddressHandle;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.EfaCompletionStatus;
import org.efaah.verbs.WorkCompletion;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 29 item 6: on SRD a send that meets RNR (its receiver had no receive posted and the
 * device's {@code rnr_retry} 3 ran out) is resent after a backoff, and reported only once its
 * budget is spent. On the mock's EFA devices, which fail such a send with an RNR error completion
 * for a finite {@code rnr_retry}.
 */
class SrdRnrResendTest {
    private final MockEndpoints f = new MockEndpoints(3);

    @AfterEach
    void closeAll() throws Exception {
        f.close();
    }

    /**
     * A receiver that stalls for a moment (posts no receive until its sender has posted all 32 sends)
     * no longer fails its senders' sends. The stall ends when the sends are in, not after a fixed
     * 100 ms: a sender held off the CPU for those 100 ms would meet no RNR, and the test none.
     */
    @Test
    void aReceiverThatStallsForAMomentLosesNothing() throws Exception {
        UdEndpoint a = f.endpoint(f.pd(1), MockEndpoints.srd());
        UdEndpoint b = f.endpoint(f.pd(2), MockEndpoints.srd().withDepths(64, 4));
        int count = 32;
        CountDownLatch posted = new CountDownLatch(1);
        try (AddressHandle toB = f.cache.acquire(a.pd(), AddressHandleAttributes.forGid(b.address().gid()))) {
            CompletableFuture<BitSet> received = CompletableFuture.supplyAsync(() -> {
                BitSet seen = new BitSet();
                try {
                    // The stall: b's 4 receives are taken, the rest meet RNR.
                    assertTrue(posted.await(10, TimeUnit.SECONDS), "the sends were posted");
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                while (seen.cardinality() < count) {
                    Datagram d = b.receive(5, TimeUnit.SECONDS);
                    if (d == null) {
                        break;
                    }
                    seen.set(d.payload()[0]);
                }
                return seen;
            });
            for (int i = 0; i < count; i++) {
                a.send(toB, b.address(), ByteBuffer.wrap(new byte[] {(byte) i}));
            }
            posted.countDown();
            assertTrue(a.flush(10, TimeUnit.SECONDS), "every send completed");
            assertEquals(count, received.get(10, TimeUnit.SECONDS).cardinality(), "every datagram arrived once");
            assertEquals(0, a.counters().failedSends());
            assertTrue(a.counters().rnrResends() > 0, "the stall was met: resends counted");
            System.out.printf("FIGURE SRD RNR stall of 100 ms: %d datagrams, %d resends, 0 failures%n", count,
                    a.counters().rnrResends());
        }
    }

    /** A budget of 0 reports the first RNR, as before the resends (and as libfabric's FI_RM_DISABLED). */
    @Test
    void aBudgetOfZeroReportsTheFirstRnr() {
        UdEndpoint a = f.endpoint(f.pd(1), MockEndpoints.srd().withRnrResendBudget(0, TimeUnit.SECONDS));
        UdEndpoint b = f.endpoint(f.pd(2), MockEndpoints.srd().withDepths(64, 1));
        try (AddressHandle toB = f.cache.acquire(a.pd(), AddressHandleAttributes.forGid(b.address().gid()))) {
            a.send(toB, b.address(), ByteBuffer.wrap(new byte[] {1}));
            a.send(toB, b.address(), ByteBuffer.wrap(new byte[] {2}));
            WorkCompletionException e = assertThrows(WorkCompletionException.class, () -> a.flush(5, TimeUnit.SECONDS));
            assertEquals(WorkCompletion.RNR_RETRY_EXC_ERR, e.status());
            assertEquals(0, a.counters().rnrResends());
            assertNotNull(b.receive(5, TimeUnit.SECONDS));
        }
    }

    @Test
    void theBudgetIsCheckedAtOpen() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> f.endpoint(f.pd(1),
                MockEndpoints.srd().withRnrResendBudget(61, TimeUnit.SECONDS)));
        assertTrue(e.getMessage().startsWith("rnrResendNanos: 61000000000 is out of range; valid 0..60000000000"),
                e.getMessage());
        assertEquals(UdEndpoint.DEFAULT_RNR_RESEND_NANOS, UdEndpoint.Options.defaults().rnrResendNanos());
    }

    /** A receiver that posts nothing: each send is reported, as RNR, once its budget is spent. */
    @Test
    void aSendIsReportedOnlyOnceItsBudgetIsSpent() {
        UdEndpoint a = f.endpoint(f.pd(1), MockEndpoints.srd());
        UdEndpoint b = f.endpoint(f.pd(2), MockEndpoints.srd().withDepths(64, 1));
        try (AddressHandle toB = f.cache.acquire(a.pd(), AddressHandleAttributes.forGid(b.address().gid()))) {
            long start = System.nanoTime();
            for (int i = 1; i <= 3; i++) {
                a.send(toB, b.address(), ByteBuffer.wrap(new byte[] {(byte) i}));
            }
            WorkCompletionException e = assertThrows(WorkCompletionException.class, () -> a.flush(10, TimeUnit.SECONDS));
            long took = System.nanoTime() - start;
            assertTrue(took >= UdEndpoint.DEFAULT_RNR_RESEND_NANOS, "reported after " + took / 1_000_000 + " ms");
            assertEquals(2, e.failures().size(), e.getMessage());
            for (SendFailure failure : e.failures()) {
                assertEquals(WorkCompletion.RNR_RETRY_EXC_ERR, failure.status());
                assertEquals(EfaCompletionStatus.REMOTE_ERROR_RNR, failure.efaStatus());
            }
            assertTrue(a.counters().rnrResends() >= 2, "resends: " + a.counters().rnrResends());
            assertNotNull(b.receive(5, TimeUnit.SECONDS));
        }
    }
}
