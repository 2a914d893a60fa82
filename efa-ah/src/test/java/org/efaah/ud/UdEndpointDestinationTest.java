package org.efaah.ud;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import org.efaah.cache.AddressHandle;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.ProtectionDomain;
import org.junit.jupiter.api.Test;

/**
 * Issue 28 case 12, of the kind "a send whose AH and address disagree is refused before the post,
 * and a send that needs no AH from the caller exists".
 */
class UdEndpointDestinationTest {

    @Test
    void aSendWhoseAhAndAddressDisagreeIsRefusedBeforeThePost() throws Exception {
        try (MockEndpoints f = new MockEndpoints(3)) {
            ProtectionDomain pd = f.pd(0);
            UdEndpoint sender = f.endpoint(pd, UdEndpoint.Options.defaults());
            UdEndpoint peer1 = f.endpoint(f.pd(1), UdEndpoint.Options.defaults());
            UdEndpoint peer2 = f.endpoint(f.pd(2), UdEndpoint.Options.defaults());
            try (AddressHandle toPeer1 = f.cache.acquire(pd, AddressHandleAttributes.builder()
                    .dgid(peer1.address().gid()).build())) {
                ByteBuffer payload = ByteBuffer.allocate(8);
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                        () -> sender.send(toPeer1, peer2.address(), payload));
                assertTrue(e.getMessage().startsWith("to: GID " + peer2.address().gid()), e.getMessage());
                assertThrows(IllegalArgumentException.class,
                        () -> sender.sendBatch(toPeer1, peer2.address(), new ByteBuffer[] {payload}, 0, 1));
                assertEquals(8, payload.remaining(), "not consumed");
                assertEquals(0, sender.counters().sent(), "nothing was posted");
            }
        }
    }

    @Test
    void aSendToAnAddressAcquiresAndReleasesItsAhThroughTheCache() throws Exception {
        try (MockEndpoints f = new MockEndpoints(2)) {
            UdEndpoint sender = f.endpoint(f.pd(0), UdEndpoint.Options.defaults());
            UdEndpoint receiver = f.endpoint(f.pd(1), UdEndpoint.Options.defaults());
            for (int i = 0; i < 3; i++) {
                sender.send(receiver.address(), ByteBuffer.allocate(4).putInt(0, i));
                Datagram d = receiver.receive(5, TimeUnit.SECONDS);
                assertNotNull(d);
                assertEquals(i, ByteBuffer.wrap(d.payload()).getInt());
            }
            assertTrue(sender.flush(5, TimeUnit.SECONDS));
            assertEquals(0, f.cache.stats().leaksReported());
            // MockEndpoints' close checks that no AH is left: every acquire was released.
        }
    }
}
