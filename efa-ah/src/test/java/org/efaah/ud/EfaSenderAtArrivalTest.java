package org.efaah.ud;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.efaah.cache.AddressHandle;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Gid;
import org.efaah.verbs.ProtectionDomain;
import org.junit.jupiter.api.Test;

/**
 * Issue 28 case 11, of the kind "on EFA a datagram names its sender as it was at arrival": a
 * datagram read after its sender's AH was destroyed and its AHN reused was credited to the new peer.
 */
class EfaSenderAtArrivalTest {

    @Test
    void aDatagramReadAfterItsAhnWasReusedStillNamesItsSender() throws Exception {
        try (MockEndpoints f = new MockEndpoints(3)) {
            ProtectionDomain pdR = f.pd(0);
            UdEndpoint receiver = f.endpoint(pdR, UdEndpoint.Options.defaults());
            UdEndpoint a = f.endpoint(f.pd(1), UdEndpoint.Options.defaults());
            UdEndpoint b = f.endpoint(f.pd(2), UdEndpoint.Options.defaults());
            AddressHandle toA = f.cache.acquire(pdR, AddressHandleAttributes.builder().dgid(a.address().gid()).build());
            int ahn = toA.ahn();
            a.send(receiver.address(), ByteBuffer.allocate(8));
            a.send(receiver.address(), ByteBuffer.allocate(8));
            assertEquals(2, a.counters().sent());
            // The handler throws on the first: the second stays lent, to be read by the next call.
            assertThrows(IllegalStateException.class, () -> receiver.receive(v -> {
                throw new IllegalStateException("busy");
            }, 2, 5, TimeUnit.SECONDS));
            toA.close();
            f.cache.invalidateAll();
            try (AddressHandle toB = f.cache.acquire(pdR, AddressHandleAttributes.builder()
                    .dgid(b.address().gid()).build())) {
                assertEquals(ahn, toB.ahn(), "the mock reuses the lowest free AHN");
                List<Gid> senders = new ArrayList<>();
                assertEquals(1, receiver.poll(v -> senders.add(v.sourceGid()), 1));
                assertEquals(List.of(a.address().gid()), senders, "B's GID is " + b.address().gid());
            }
        }
    }
}
