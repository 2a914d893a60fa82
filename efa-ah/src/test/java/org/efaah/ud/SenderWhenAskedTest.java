package org.efaah.ud;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.efaah.cache.AddressHandle;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.mock.MockConfig;
import org.junit.jupiter.api.Test;

/**
 * Issue 35 item 2, of the kind "the sender is named when asked, as it was at arrival or UNKNOWN":
 * the receive path looked every EFA sender up in the cache at poll (a handle acquired and closed
 * per datagram), though the handler never asked.
 */
class SenderWhenAskedTest {
    private static final long WAIT_SECONDS = 5;

    /** Failed before: every datagram polled was a cache hit (hits 1, expected 0). */
    @Test
    void onEfaADatagramWhoseSenderNobodyAsksIsNotLookedUp() throws Exception {
        try (MockEndpoints f = new MockEndpoints(2)) {
            ProtectionDomain pdR = f.pd(0);
            UdEndpoint receiver = f.endpoint(pdR, UdEndpoint.Options.defaults());
            UdEndpoint a = f.endpoint(f.pd(1), UdEndpoint.Options.defaults());
            try (AddressHandle toA = f.cache.acquire(pdR, to(a))) {
                a.send(receiver.address(), ByteBuffer.allocate(8));
                long hits = f.cache.stats().hits();
                assertEquals(1, receiver.receive(v -> v.payload().get(0), 1, WAIT_SECONDS, TimeUnit.SECONDS));
                assertEquals(hits, f.cache.stats().hits(), "cache hits by a receive whose handler read only the payload");
                a.send(receiver.address(), ByteBuffer.allocate(8)); // the sender's own acquire is a hit
                hits = f.cache.stats().hits();
                List<String> asked = new ArrayList<>();
                assertEquals(1, receiver.receive(v -> asked.add(v.origin() + " " + v.sourceGid()), 1,
                        WAIT_SECONDS, TimeUnit.SECONDS));
                assertEquals(List.of(SourceOrigin.AHN + " " + a.address().gid()), asked);
                assertEquals(hits + 1, f.cache.stats().hits(), "one look-up, when asked");
            }
        }
    }

    /** A Datagram is named when its user asks: UNKNOWN once its AHN went to another peer, and the first answer stays. */
    @Test
    void onEfaACopiedDatagramIsNamedWhenFirstAskedAndKeepsThatAnswer() throws Exception {
        try (MockEndpoints f = new MockEndpoints(3)) {
            ProtectionDomain pdR = f.pd(0);
            UdEndpoint receiver = f.endpoint(pdR, UdEndpoint.Options.defaults());
            UdEndpoint a = f.endpoint(f.pd(1), UdEndpoint.Options.defaults());
            UdEndpoint b = f.endpoint(f.pd(2), UdEndpoint.Options.defaults());
            AddressHandle toA = f.cache.acquire(pdR, to(a));
            int ahn = toA.ahn();
            a.send(receiver.address(), ByteBuffer.allocate(8));
            a.send(receiver.address(), ByteBuffer.allocate(8));
            Datagram askedFirst = receiver.receive(WAIT_SECONDS, TimeUnit.SECONDS);
            Datagram askedLater = receiver.receive(WAIT_SECONDS, TimeUnit.SECONDS);
            assertEquals(SourceOrigin.AHN, askedFirst.origin());
            toA.close();
            f.cache.invalidateAll();
            try (AddressHandle toB = f.cache.acquire(pdR, to(b))) {
                assertEquals(ahn, toB.ahn(), "the mock reuses the lowest free AHN");
                assertEquals(a.address().gid(), askedFirst.sourceGid(), "named once, when first asked");
                assertEquals(SourceOrigin.AHN, askedFirst.origin());
                assertEquals(SourceOrigin.UNKNOWN, askedLater.origin(), "B's GID is " + b.address().gid());
                assertNull(askedLater.sourceGid());
                assertEquals(ahn, askedLater.sourceAhn(), "the AHN the device wrote");
            }
        }
    }

    /** Asked after its AH was destroyed, its AHN given to nobody: UNKNOWN, as the cache vouches for no AH. */
    @Test
    void onEfaAViewAskedAfterItsSendersAhWasDestroyedIsUnknown() throws Exception {
        try (MockEndpoints f = new MockEndpoints(2)) {
            ProtectionDomain pdR = f.pd(0);
            UdEndpoint receiver = f.endpoint(pdR, UdEndpoint.Options.defaults());
            UdEndpoint a = f.endpoint(f.pd(1), UdEndpoint.Options.defaults());
            AddressHandle toA = f.cache.acquire(pdR, to(a));
            int ahn = toA.ahn();
            a.send(receiver.address(), ByteBuffer.allocate(8));
            List<String> seen = new ArrayList<>();
            assertEquals(1, receiver.receive(v -> {
                toA.close();
                f.cache.invalidateAll();
                seen.add(v.origin() + " " + v.sourceGid() + " AHN " + v.sourceAhn());
            }, 1, WAIT_SECONDS, TimeUnit.SECONDS));
            assertEquals(List.of(SourceOrigin.UNKNOWN + " null AHN " + ahn), seen);
        }
    }

    /** Elsewhere the GRH names the sender whenever asked, whatever became of the receiver's AHs. */
    @Test
    void onRoceADatagramAskedAfterTheReceiversAhsChangedIsNamedByItsGrh() throws Exception {
        try (MockEndpoints f = new MockEndpoints(MockConfig.builder().deviceCount(3).efa(false).build())) {
            ProtectionDomain pdR = f.pd(0);
            UdEndpoint receiver = f.endpoint(pdR, UdEndpoint.Options.defaults());
            UdEndpoint a = f.endpoint(f.pd(1), UdEndpoint.Options.defaults());
            UdEndpoint b = f.endpoint(f.pd(2), UdEndpoint.Options.defaults());
            AddressHandle toA = f.cache.acquire(pdR, to(a));
            a.send(receiver.address(), ByteBuffer.allocate(8));
            a.send(receiver.address(), ByteBuffer.allocate(8));
            Datagram copied = receiver.receive(WAIT_SECONDS, TimeUnit.SECONDS);
            toA.close();
            f.cache.invalidateAll();
            try (AddressHandle toB = f.cache.acquire(pdR, to(b))) {
                assertEquals(SourceOrigin.GRH, copied.origin());
                assertEquals(a.address().gid(), copied.sourceGid());
                List<String> inPlace = new ArrayList<>();
                assertEquals(1, receiver.receive(v -> inPlace.add(v.origin() + " " + v.sourceGid()), 1,
                        WAIT_SECONDS, TimeUnit.SECONDS));
                assertEquals(List.of(SourceOrigin.GRH + " " + a.address().gid()), inPlace);
            }
        }
    }

    private static AddressHandleAttributes to(UdEndpoint peer) {
        return AddressHandleAttributes.builder().dgid(peer.address().gid()).build();
    }
}
