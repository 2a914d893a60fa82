package org.efaah.ud;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.EfaCompletionStatus;
import org.efaah.verbs.Errno;
import org.efaah.verbs.Gid;
import org.efaah.verbs.Grh;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.QueuePairType;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.WorkCompletion;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 9 on the mock's EFA devices, which behave as EFA does (see efa-datapath.md): senders
 * named by AHN or by the GID the completion carries, never by the 40 bytes in front; replies
 * never through ibv_init_ah_from_wc; SRD exactly once, out of order.
 */
class EfaDatagramPathTest {
    private final MockEndpoints f = new MockEndpoints(17);


    @AfterEach
    void closeAll() throws Exception {
        f.close();
    }

    @Test
    void aServerAnswersSixteenClientsTenRoundsFirstByCompletionGidThenByAhnAsHits() {
        ProtectionDomain serverPd = f.pd(0);
        UdEndpoint server = f.endpoint(serverPd, UdEndpoint.Options.defaults());
        List<UdEndpoint> clients = new ArrayList<>();
        List<AddressHandle> toServer = new ArrayList<>();
        for (int c = 1; c <= 16; c++) {
            UdEndpoint client = f.endpoint(f.pd(c), UdEndpoint.Options.defaults());
            clients.add(client);
            toServer.add(f.cache.acquire(client.pd(), AddressHandleAttributes.forGid(server.address().gid())));
        }
        // The server keeps one return-path AH per client, as a server keeps its peers.
        Map<Gid, AddressHandle> peers = new HashMap<>();
        Map<SourceOrigin, Integer> origins = new HashMap<>();
        long createsBefore = f.cache.stats().hardwareCreates();
        long hitsBefore = f.cache.stats().hits();
        for (int round = 0; round < 10; round++) {
            for (int c = 0; c < 16; c++) {
                clients.get(c).send(toServer.get(c), server.address(), ByteBuffer.wrap(new byte[] {(byte) c, (byte) round}));
            }
            for (int i = 0; i < 16; i++) {
                Datagram d = server.receive(5, TimeUnit.SECONDS);
                assertNotNull(d);
                int c = d.payload()[0];
                assertEquals(clients.get(c).address().gid(), d.sourceGid(), "source of client " + c);
                assertEquals(clients.get(c).address().qpn(), d.sourceQpn());
                assertEquals(round == 0 ? SourceOrigin.COMPLETION_GID : SourceOrigin.AHN, d.origin(),
                        "client " + c + " round " + round);
                assertEquals(Grh.Version.UNKNOWN, Grh.version(d.grh()), "EFA's 40 bytes are not a GRH");
                assertEquals(0, d.completion().wcFlags & WorkCompletion.FLAG_GRH, "no IBV_WC_GRH on EFA");
                origins.merge(d.origin(), 1, Integer::sum);
                if (round == 0) {
                    peers.put(d.sourceGid(), server.acquireReplyAh(d));
                } else {
                    assertEquals(peers.get(d.sourceGid()).ahn(), d.sourceAhn(), "slid is the server's own AHN");
                }
                server.reply(d, ByteBuffer.wrap(new byte[] {d.payload()[0], d.payload()[1], 42}));
            }
            for (int c = 0; c < 16; c++) {
                Datagram answer = clients.get(c).receive(5, TimeUnit.SECONDS);
                assertNotNull(answer, "client " + c + " round " + round);
                assertArrayEquals(new byte[] {(byte) c, (byte) round, 42}, answer.payload());
                assertEquals(server.address().gid(), answer.sourceGid());
            }
        }
        long creates = f.cache.stats().hardwareCreates() - createsBefore;
        long hits = f.cache.stats().hits() - hitsBefore;
        System.out.printf("FIGURE EFA mock, 16 clients x 10 rounds: %d datagrams named by the completion's GID, "
                        + "%d by AHN; server hardware creates %d; cache hits %d%n",
                origins.getOrDefault(SourceOrigin.COMPLETION_GID, 0), origins.getOrDefault(SourceOrigin.AHN, 0),
                creates, hits);
        assertEquals(16, origins.get(SourceOrigin.COMPLETION_GID));
        assertEquals(144, origins.get(SourceOrigin.AHN));
        assertEquals(16, creates, "16 return-path AHs on the server in all");
        // Per later datagram: the AHN look-up at receive and the reply's; per first one: the reply's.
        assertTrue(hits >= 144 * 2 + 16, "hits " + hits);
        assertTrue(server.flush(5, TimeUnit.SECONDS));
        peers.values().forEach(AddressHandle::close);
        toServer.forEach(AddressHandle::close);
    }

    @Test
    void tenThousandDatagramsOfOneToMtuBytesOverUd() {
        exchange(QueuePairType.UD);
    }

    @Test
    void tenThousandDatagramsOfOneToMtuBytesOverSrdOutOfOrderEachExactlyOnce() {
        f.mock.reorderSrd(7L);
        exchange(QueuePairType.SRD);
    }

    private void exchange(QueuePairType transport) {
        UdEndpoint.Options options = UdEndpoint.Options.defaults().withTransport(transport).withDepths(64, 256);
        UdEndpoint a = f.endpoint(f.pd(1), options);
        UdEndpoint b = f.endpoint(f.pd(2), options);
        int mtu = a.maxMessageSize();
        int batch = 16;
        int outOfOrder = 0;
        int verified = 0;
        try (AddressHandle toB = f.cache.acquire(a.pd(), AddressHandleAttributes.forGid(b.address().gid()))) {
            for (int start = 0; start < 10_000; start += batch) {
                // Within a batch the sizes differ, so a datagram's size says which one it is.
                Map<Integer, Integer> bySize = new HashMap<>();
                for (int i = start; i < start + batch; i++) {
                    int size = 1 + i % mtu;
                    bySize.put(size, i);
                    a.send(toB, b.address(), TestDatagrams.pattern(size, i));
                }
                int expected = start;
                for (int k = 0; k < batch; k++) {
                    Datagram d = b.receive(5, TimeUnit.SECONDS);
                    assertNotNull(d, transport + " datagram " + (start + k));
                    Integer i = bySize.remove(d.payload().length);
                    assertNotNull(i, "a datagram of " + d.payload().length + " bytes delivered twice or never sent");
                    assertArrayEquals(TestDatagrams.pattern(d.payload().length, i).array(), d.payload(), "payload " + i);
                    assertEquals(a.address().gid(), d.sourceGid());
                    if (i != expected) {
                        outOfOrder++;
                    }
                    expected = i + 1;
                    verified++;
                }
                assertTrue(bySize.isEmpty(), "every datagram of the batch delivered");
                assertTrue(a.flush(5, TimeUnit.SECONDS));
            }
            assertNull(b.receive(10, TimeUnit.MILLISECONDS), "nothing delivered twice");
        }
        System.out.printf("FIGURE EFA mock %s: %d datagrams of 1..%d bytes verified byte for byte, %d out of order%n",
                transport, verified, mtu, outOfOrder);
        assertEquals(10_000, verified);
        if (transport == QueuePairType.SRD) {
            assertTrue(outOfOrder > 1000, "out of order: " + outOfOrder);
        } else {
            assertEquals(0, outOfOrder);
        }
    }

    @Test
    void anSrdSendToAQpWithNoReceivePostedEndsInAnRnrErrorNeverASilentDrop() {
        UdEndpoint.Options srd = UdEndpoint.Options.defaults().withTransport(QueuePairType.SRD);
        UdEndpoint a = f.endpoint(f.pd(1), srd);
        UdEndpoint b = f.endpoint(f.pd(2), srd.withDepths(64, 1));
        try (AddressHandle toB = f.cache.acquire(a.pd(), AddressHandleAttributes.forGid(b.address().gid()))) {
            a.send(toB, b.address(), ByteBuffer.wrap(new byte[] {1}));
            a.send(toB, b.address(), ByteBuffer.wrap(new byte[] {2})); // b's one receive is taken
            WorkCompletionException e = assertThrows(WorkCompletionException.class, () -> a.flush(5, TimeUnit.SECONDS));
            assertEquals(WorkCompletion.RNR_RETRY_EXC_ERR, e.status());
            assertEquals(EfaCompletionStatus.REMOTE_ERROR_RNR, e.efaStatus());
            assertTrue(e.getMessage().contains("EFA_IO_COMP_STATUS_REMOTE_ERROR_RNR"), e.getMessage());
            assertEquals(0, a.counters().recoveries(), "an RNR error leaves an SRD QP in RTS");
            assertArrayEquals(new byte[] {1}, b.receive(5, TimeUnit.SECONDS).payload());
        }
    }

    @Test
    void srdOnANonEfaDeviceIsRefusedWithEopnotsuppNamingTheDevice() {
        MockVerbsProvider roce = new MockVerbsProvider(MockConfig.builder().efa(false).deviceCount(1).build());
        try (Device d = Device.open(roce, "roce_0"); ProtectionDomain pd = d.allocatePd();
             AddressHandleCache roceCache = AddressHandleCache.create()) {
            VerbsException e = assertThrows(VerbsException.class, () -> UdEndpoint.open(pd, roceCache,
                    UdEndpoint.Options.defaults().withTransport(QueuePairType.SRD)));
            assertEquals(Errno.EOPNOTSUPP, e.errno());
            assertTrue(e.getMessage().contains("roce_0"), e.getMessage());
            assertEquals(0, pd.liveAhCount());
        }
    }

    @Test
    void onEfaInitAhFromWcGivesANonGlobalAttributeSetWhichEfaRefuses() {
        UdEndpoint a = f.endpoint(f.pd(1), UdEndpoint.Options.defaults());
        UdEndpoint b = f.endpoint(f.pd(2), UdEndpoint.Options.defaults());
        try (AddressHandle toB = f.cache.acquire(a.pd(), AddressHandleAttributes.forGid(b.address().gid()))) {
            a.send(toB, b.address(), ByteBuffer.wrap(new byte[] {9}));
            Datagram d = b.receive(5, TimeUnit.SECONDS);
            assertNotNull(d);
            assertEquals(WorkCompletion.EFA_UNKNOWN_AHN, d.completion().slid, "b holds no AH for a: slid 0xFFFF");
            // What libibverbs gives without a GRH, and what the endpoint therefore never uses on EFA.
            AddressHandleAttributes fromWc;
            try (var mr = b.pd().registerMemory(ByteBuffer.allocateDirect(Grh.LENGTH))) {
                fromWc = b.pd().device().initAhFromWc(1, d.completion(), mr, 0);
            }
            assertFalse(fromWc.isGlobal());
            assertEquals(0xFFFF, fromWc.dlid());
            assertThrows(RuntimeException.class, () -> f.cache.acquire(b.pd(), fromWc));
            AddressHandleAttributes reply = b.replyAttributes(d);
            assertTrue(reply.isGlobal());
            assertEquals(a.address().gid(), reply.dgid());
        }
    }

    @Test
    void aSendDepthOfTwoWaitsForSlotsAndNeverOverfillsTheSendQueue() {
        // The mock answers a send beyond max_send_wr outstanding with ENOMEM, as EFA does
        // (MockDatapathTest); the endpoint reaps completions first, so ten sends all go.
        UdEndpoint a = f.endpoint(f.pd(1), UdEndpoint.Options.defaults().withDepths(2, 4));
        UdEndpoint b = f.endpoint(f.pd(2), UdEndpoint.Options.defaults());
        try (AddressHandle toB = f.cache.acquire(a.pd(), AddressHandleAttributes.forGid(b.address().gid()))) {
            for (int i = 0; i < 10; i++) {
                a.send(toB, b.address(), ByteBuffer.wrap(new byte[] {(byte) i}));
            }
            assertTrue(a.flush(5, TimeUnit.SECONDS));
            assertEquals(10, a.counters().sent());
        }
    }
}
