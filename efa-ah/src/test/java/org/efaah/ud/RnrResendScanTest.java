package org.efaah.ud;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.efaah.cache.AddressHandle;
import org.efaah.verbs.AddressHandleAttributes;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 35: the RNR resends are scanned for only once the earliest is due (SendSlots keeps that
 * time instead of scanning every slot at every reap). A send that meets its first RNR while
 * another waits its longest backoff (100 ms) is due at once, and must be resent at once: the
 * earliest time is lowered when a send is kept, not only recomputed at a scan. On the mock's EFA
 * devices (SRD; RoCE has no RNR completion: UD drops).
 *
 * <p>Timing: B's resends come 0, 64 µs, 192 µs, 448 µs ... after its first RNR, so a flush of
 * 30 ms polling for them makes several even when the thread is descheduled for milliseconds at a
 * time; A's come 100 ms apart, one at most in the window. Were B held until A's time (the earliest
 * not lowered), the window would see two at most: A's and B's with it.
 */
@org.junit.jupiter.api.Tag("timing") // scripts/test runs it under load: see TimingRounds
class RnrResendScanTest {
    private final MockEndpoints f = new MockEndpoints(3);

    @AfterEach
    void closeAll() throws Exception {
        f.close();
    }

    @Test
    void aSendDueAtOnceIsNotHeldBehindOneWaitingItsLongestBackoff() throws Exception {
        UdEndpoint a = f.endpoint(f.pd(1), MockEndpoints.srd().withRnrResendBudget(20, TimeUnit.SECONDS));
        UdEndpoint b = f.endpoint(f.pd(2), MockEndpoints.srd().withDepths(64, 1));
        try (AddressHandle toB = f.cache.acquire(a.pd(), AddressHandleAttributes.forGid(b.address().gid()))) {
            a.send(toB, b.address(), ByteBuffer.wrap(new byte[] {'X'})); // takes b's one receive
            a.send(toB, b.address(), ByteBuffer.wrap(new byte[] {'A'})); // meets RNR
            // About 12 RNRs double A's backoff from 64 µs to its most, 100 ms; 400 ms make sure.
            assertFalse(a.flush(400, TimeUnit.MILLISECONDS), "A waits: b has no receive");
            long before = a.counters().rnrResends();
            assertTrue(before >= 10, "A's resends so far: " + before); // its backoff at 100 ms
            a.send(toB, b.address(), ByteBuffer.wrap(new byte[] {'B'})); // its first RNR: due at once
            assertFalse(a.flush(30, TimeUnit.MILLISECONDS), "A and B wait: b has no receive");
            long resends = a.counters().rnrResends() - before;
            assertTrue(resends >= 4, "resends in the 30 ms after B's first RNR: " + resends + " (B's come "
                    + "64 µs, 128 µs, ... apart, A's 100 ms apart)");
            // b reads X and has its receive again: A and B arrive as they are resent.
            CompletableFuture<Boolean> flushed = CompletableFuture.supplyAsync(() -> a.flush(10, TimeUnit.SECONDS));
            assertEquals('X', received(b), "the first datagram");
            char first = received(b);
            char second = received(b);
            assertEquals("AB", first < second ? "" + first + second : "" + second + first, "A and B, once each");
            assertTrue(flushed.get(10, TimeUnit.SECONDS), "every send completed");
            assertEquals(0, a.counters().failedSends());
        }
    }

    private static char received(UdEndpoint b) {
        Datagram d = b.receive(5, TimeUnit.SECONDS);
        assertNotNull(d, "a datagram within 5 s");
        return (char) d.payload()[0];
    }
}
