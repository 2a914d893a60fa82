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
import org.efaah.verbs.WorkCompletion;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
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
             AddressHandleCache cache = AddressHandleCache.create(LeakDetection.PARANOID);
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
}
