package org.efaah.ud;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.WorkCompletion;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 11 case 5: one oversized datagram puts the receiver's QP in the error state (as rxe
 * does); the endpoint takes it back to RTS, reposts its receives, counts the recovery, and the
 * datagrams that fit arrive again. On the mock's EFA and RoCE models alike.
 */
class UdEndpointRecoveryTest {

    @ParameterizedTest(name = "efa={0}")
    @ValueSource(booleans = {true, false})
    void anOversizedDatagramCostsOneRecoveryNotTheEndpoint(boolean efa) {
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().efa(efa).deviceCount(2).build());
        String prefix = efa ? "efa_" : "roce_";
        try (Device d0 = Device.open(mock, prefix + "0");
             Device d1 = Device.open(mock, prefix + "1");
             ProtectionDomain pd0 = d0.allocatePd();
             ProtectionDomain pd1 = d1.allocatePd();
             AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.PARANOID).build();
             UdEndpoint small = UdEndpoint.open(pd0, cache, UdEndpoint.Options.defaults().withMaxMessageSize(512));
             UdEndpoint big = UdEndpoint.open(pd1, cache, UdEndpoint.Options.defaults());
             AddressHandle toSmall = cache.acquire(pd1, AddressHandleAttributes.builder()
                     .dgid(small.address().gid()).build())) {
            big.send(toSmall, small.address(), ByteBuffer.allocate(1024));
            WorkCompletionException e = assertThrows(WorkCompletionException.class,
                    () -> small.receive(5, TimeUnit.SECONDS));
            assertEquals(WorkCompletion.LOC_QP_OP_ERR, e.status(), e.getMessage());
            assertEquals(1, small.counters().recoveries());
            for (int i = 0; i < 300; i++) {
                // More than the 256 receives posted: every slot was reposted by the recovery.
                big.send(toSmall, small.address(), ByteBuffer.allocate(512).put(0, (byte) i));
                Datagram d = small.receive(5, TimeUnit.SECONDS);
                assertNotNull(d, "512-byte datagram " + i + " after the oversized one");
                assertEquals(512, d.payload().length);
                assertEquals((byte) i, d.payload()[0]);
            }
            assertEquals(1, small.counters().recoveries());
            assertEquals(1, small.counters().receiveErrors(), "the flushed receives are not errors of their own");
            assertTrue(big.flush(5, TimeUnit.SECONDS));
        }
    }

    /**
     * Issue 28 case 5, of the kind "a recovery always ends": a recovery whose receive repost failed
     * partway stayed unfinished, and every later send waited on receives of a QP already back in
     * RTS until it failed after 10 s with ETIMEDOUT.
     */
    @Test
    void aRecoveryWhoseRepostFailsPartwayStillEnds() {
        FaultyDatapath faulty = new FaultyDatapath(new MockVerbsProvider(MockConfig.builder().deviceCount(2).build()));
        try (Device d0 = Device.open(faulty, "efa_0");
             Device d1 = Device.open(faulty, "efa_1");
             ProtectionDomain pd0 = d0.allocatePd();
             ProtectionDomain pd1 = d1.allocatePd();
             AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.PARANOID).build();
             UdEndpoint small = UdEndpoint.open(pd0, cache, UdEndpoint.Options.defaults().withMaxMessageSize(512));
             UdEndpoint big = UdEndpoint.open(pd1, cache, UdEndpoint.Options.defaults());
             AddressHandle toSmall = cache.acquire(pd1, AddressHandleAttributes.builder()
                     .dgid(small.address().gid()).build());
             AddressHandle toBig = cache.acquire(pd0, AddressHandleAttributes.builder()
                     .dgid(big.address().gid()).build())) {
            faulty.failNextReceivesPartway = true;
            big.send(toSmall, small.address(), ByteBuffer.allocate(1024));
            // The receive error, then the recovery's failed repost, each thrown by a call that drives it.
            boolean repostFailed = false;
            for (int i = 0; i < 10 && !repostFailed; i++) {
                try {
                    small.receive(1, TimeUnit.SECONDS);
                } catch (WorkCompletionException e) {
                    assertEquals(WorkCompletion.LOC_QP_OP_ERR, e.status(), e.getMessage());
                    // The recovery the error began, ended by this call: its failed repost rides on it.
                    for (Throwable t : e.getSuppressed()) {
                        assertTrue(t.getMessage().contains("ibv_post_recv"), t.toString());
                        repostFailed = true;
                    }
                } catch (VerbsException e) {
                    assertTrue(e.getMessage().contains("ibv_post_recv"), e.getMessage());
                    repostFailed = true;
                }
            }
            assertTrue(repostFailed);
            assertEquals(1, small.counters().recoveries());
            long start = System.nanoTime();
            small.send(toBig, big.address(), ByteBuffer.allocate(16));
            assertTrue(small.flush(5, TimeUnit.SECONDS), "the send completes on the recovered QP");
            assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(5), "the send did not wait for the recovery");
            big.send(toSmall, small.address(), ByteBuffer.allocate(16));
            assertNotNull(small.receive(5, TimeUnit.SECONDS), "the receives that were reposted take datagrams");
        }
    }
}
