package org.efaah.ud;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.EfaCompletionStatus;
import org.efaah.verbs.EfaDeviceAttributes;
import org.efaah.verbs.Errno;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.QueuePairType;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.WorkCompletion;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 16 at the endpoint, on the mock's EFA devices modelled on libefa: SRD's receive layout,
 * RNR as rnr_retry decides it, every failed send reported, and a recovery that drains before RESET.
 */
class EfaAsLibefaTest {
    private final MockEndpoints f = new MockEndpoints(3);

    @AfterEach
    void closeAll() throws Exception {
        f.close();
    }

    @Test
    void anSrdPayloadStartsAtOffsetZeroAndItsSlotHasNoGrhArea() {
        UdEndpoint a = f.endpoint(f.pd(1), MockEndpoints.srd());
        UdEndpoint b = f.endpoint(f.pd(2), MockEndpoints.srd());
        int max = b.maxMessageSize();
        assertEquals(b.pd().device().port(1).maxMessageSize(), max, "EFA: the port's max_msg_sz");
        try (AddressHandle toB = f.cache.acquire(a.pd(), AddressHandleAttributes.forGid(b.address().gid()))) {
            for (int size : new int[] {1, 39, 40, 41, 64, max - 1, max}) {
                ByteBuffer sent = TestDatagrams.pattern(size, size);
                a.send(toB, b.address(), sent.duplicate());
                Datagram d = b.receive(5, TimeUnit.SECONDS);
                assertNotNull(d, size + " bytes");
                assertArrayEquals(sent.array(), d.payload(), "an SRD datagram of " + size + " bytes, whole");
                assertEquals(size, d.completion().byteLength, "byte_len counts the payload alone on SRD");
            }
            assertTrue(a.flush(5, TimeUnit.SECONDS));
        }
    }

    /** The case: three sends to a receiver with no receive posted, three failures reported. */
    @Test
    void everySrdSendThatMeetsNoReceiveIsReportedWithItsDestination() {
        UdEndpoint a = f.endpoint(f.pd(1), MockEndpoints.srd());
        UdEndpoint b = f.endpoint(f.pd(2), MockEndpoints.srd().withDepths(64, 1));
        assertEquals(UdEndpoint.DEFAULT_RNR_RETRY, a.rnrRetry(), "finite where the device lets it be set");
        try (AddressHandle toB = f.cache.acquire(a.pd(), AddressHandleAttributes.forGid(b.address().gid()))) {
            for (int i = 1; i <= 4; i++) {
                a.send(toB, b.address(), ByteBuffer.wrap(new byte[] {(byte) i}));
            }
            int reports = 0;
            int failures = 0;
            for (int attempt = 0; attempt < 10; attempt++) {
                try {
                    if (a.flush(5, TimeUnit.SECONDS)) {
                        break;
                    }
                } catch (WorkCompletionException e) {
                    reports++;
                    for (SendFailure failure : e.failures()) {
                        failures++;
                        assertEquals(b.address().qpn(), failure.remoteQpn());
                        assertEquals(b.address().gid(), failure.remoteGid());
                        assertEquals(WorkCompletion.RNR_RETRY_EXC_ERR, failure.status());
                        assertEquals(EfaCompletionStatus.REMOTE_ERROR_RNR, failure.efaStatus());
                        assertEquals(UdEndpoint.DEFAULT_RNR_RETRY, failure.rnrRetry());
                        assertTrue(failure.isReceiverNotReady());
                    }
                    assertTrue(e.getMessage().contains("rnr_retry 3"), e.getMessage());
                }
            }
            System.out.printf("FIGURE SRD RNR: %d failed sends in %d report(s), counted %d%n", failures, reports,
                    a.counters().failedSends());
            assertEquals(3, failures, "sends 2, 3 and 4 each reported");
            assertEquals(3, a.counters().failedSends());
            assertArrayEquals(new byte[] {1}, b.receive(5, TimeUnit.SECONDS).payload());
        }
    }

    @Test
    void withRnrRetrySevenAnSrdSendWaitsForTheReceiverInsteadOfFailing() throws Exception {
        UdEndpoint a = f.endpoint(f.pd(1), MockEndpoints.srd().withRnrRetry(7));
        UdEndpoint b = f.endpoint(f.pd(2), MockEndpoints.srd().withDepths(64, 1));
        assertEquals(7, a.rnrRetry());
        try (AddressHandle toB = f.cache.acquire(a.pd(), AddressHandleAttributes.forGid(b.address().gid()))) {
            a.send(toB, b.address(), ByteBuffer.wrap(new byte[] {1}));
            a.send(toB, b.address(), ByteBuffer.wrap(new byte[] {2}));
            assertFalse(a.flush(200, TimeUnit.MILLISECONDS), "the second send retries without end");
            assertEquals(1, a.sendsInFlight());
            assertArrayEquals(new byte[] {1}, b.receive(5, TimeUnit.SECONDS).payload());
            // b reposted its receive: the device's retry now lands the second datagram.
            assertTrue(a.flush(5, TimeUnit.SECONDS));
            assertArrayEquals(new byte[] {2}, b.receive(5, TimeUnit.SECONDS).payload());
            assertEquals(0, a.counters().failedSends());
        }
    }

    @Test
    void aSendStalledByRnrRetrySevenTimesOutNamingTheCauseAndTheSetting() {
        UdEndpoint a = f.endpoint(f.pd(1), MockEndpoints.srd().withRnrRetry(7).withDepths(1, 16));
        UdEndpoint b = f.endpoint(f.pd(2), MockEndpoints.srd().withDepths(64, 1));
        try (AddressHandle toB = f.cache.acquire(a.pd(), AddressHandleAttributes.forGid(b.address().gid()))) {
            a.send(toB, b.address(), ByteBuffer.wrap(new byte[] {1}));
            a.send(toB, b.address(), ByteBuffer.wrap(new byte[] {2})); // waits for a receive that never comes
            VerbsException e = assertThrows(VerbsException.class,
                    () -> a.send(toB, b.address(), ByteBuffer.wrap(new byte[] {3})));
            assertEquals(Errno.ETIMEDOUT, e.errno());
            assertTrue(e.getMessage().contains("rnr_retry 7"), e.getMessage());
            assertTrue(e.getMessage().contains("QPN 0x" + Integer.toHexString(b.address().qpn())), e.getMessage());
        }
    }

    @Test
    void whereTheDeviceCannotSetRnrRetryAutoKeepsItsDefaultAndAFiniteValueIsRefused() {
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder()
                .efaDeviceCaps(EfaDeviceAttributes.CAPS_CQ_WITH_SGID).build());
        try (Device d = Device.open(mock, "efa_0"); ProtectionDomain pd = d.allocatePd();
             AddressHandleCache cache = AddressHandleCache.create()) {
            try (UdEndpoint e = UdEndpoint.open(pd, cache, MockEndpoints.srd())) {
                assertEquals(7, e.rnrRetry(), "the device's default, retry without end");
            }
            VerbsException e = assertThrows(VerbsException.class,
                    () -> UdEndpoint.open(pd, cache, MockEndpoints.srd().withRnrRetry(3)));
            assertEquals(Errno.EOPNOTSUPP, e.errno());
            assertTrue(e.getMessage().contains("EFADV_DEVICE_ATTR_CAPS_RNR_RETRY"), e.getMessage());
            IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
                    () -> UdEndpoint.open(pd, cache, MockEndpoints.srd().withRnrRetry(8)));
            assertTrue(bad.getMessage().startsWith("rnrRetry: 8"), bad.getMessage());
            IllegalArgumentException ud = assertThrows(IllegalArgumentException.class,
                    () -> UdEndpoint.open(pd, cache, UdEndpoint.Options.defaults().withRnrRetry(3)));
            assertTrue(ud.getMessage().contains("SRD only"), ud.getMessage());
        }
    }

    /**
     * The case: the receiver's QP goes into error with 4 of its sends flushed into an 8-entry
     * send CQ; after the recovery 8 sends must all arrive. A recovery that resets before polling the
     * 4 flushes overruns that CQ, or has libefa name them by a new send's wr_id.
     */
    @Test
    void recoveryDrainsEveryFlushedCompletionBeforeTheReset() {
        UdEndpoint peer = f.endpoint(f.pd(1), UdEndpoint.Options.defaults());
        UdEndpoint e = f.endpoint(f.pd(2), UdEndpoint.Options.defaults().withDepths(8, 64).withMaxMessageSize(512));
        try (AddressHandle toE = f.cache.acquire(peer.pd(), AddressHandleAttributes.forGid(e.address().gid()));
             AddressHandle toPeer = f.cache.acquire(e.pd(), AddressHandleAttributes.forGid(peer.address().gid()))) {
            peer.send(toE, e.address(), ByteBuffer.allocate(1024)); // into a 512-byte receive: QP in error
            for (int i = 0; i < 4; i++) {
                e.send(toPeer, peer.address(), ByteBuffer.wrap(new byte[] {(byte) (100 + i)})); // each flushed
            }
            WorkCompletionException receiveError = assertThrows(WorkCompletionException.class,
                    () -> e.receive(5, TimeUnit.SECONDS));
            assertEquals(WorkCompletion.LOC_QP_OP_ERR, receiveError.status());
            int flushedReported = 0;
            Set<Byte> expected = new HashSet<>();
            for (int i = 0; i < 8; i++) {
                ByteBuffer payload = ByteBuffer.wrap(new byte[] {(byte) i});
                for (;;) {
                    try {
                        e.send(toPeer, peer.address(), payload);
                        break;
                    } catch (WorkCompletionException flushed) {
                        for (SendFailure failure : flushed.failures()) {
                            assertEquals(WorkCompletion.WR_FLUSH_ERR, failure.status());
                            assertEquals(peer.address().qpn(), failure.remoteQpn());
                            flushedReported++;
                        }
                        assertEquals(0, payload.position(), "a send that throws is not posted");
                    }
                }
                expected.add((byte) i);
            }
            assertTrue(e.flush(5, TimeUnit.SECONDS), "all 8 sends completed");
            Set<Byte> delivered = new HashSet<>();
            for (int i = 0; i < 8; i++) {
                Datagram d = peer.receive(5, TimeUnit.SECONDS);
                assertNotNull(d, "datagram " + i + " of 8");
                delivered.add(d.payload()[0]);
            }
            System.out.printf("FIGURE recovery: %d flushed sends reported, recoveries %d, %d of 8 delivered%n",
                    flushedReported, e.counters().recoveries(), delivered.size());
            assertEquals(4, flushedReported, "the 4 sends the error flushed, each reported");
            assertEquals(expected, delivered);
            assertEquals(1, e.counters().recoveries());
            assertEquals(4, e.counters().failedSends());
        }
    }

    @Test
    void aUdReceiveShorterThanTheGrhAreaIsRefusedBeforeTheProvider() {
        UdEndpoint e = f.endpoint(f.pd(1), UdEndpoint.Options.defaults());
        ProtectionDomain pd = e.pd();
        try (var cq = pd.device().createCq(4);
             var mr = pd.registerMemory(ByteBuffer.allocateDirect(64));
             var qp = pd.createQp(QueuePairType.UD, cq, cq, 4, 4)) {
            qp.activate(1, 0, UdEndpoint.DEFAULT_QKEY);
            IllegalArgumentException ex = assertThrows(IllegalArgumentException.class, () -> qp.postReceive(mr, 0, 0, 1));
            assertTrue(ex.getMessage().startsWith("length: 0; valid 1.."), ex.getMessage());
            IllegalArgumentException shortUd = assertThrows(IllegalArgumentException.class,
                    () -> qp.postReceive(mr, 0, 39, 1));
            assertTrue(shortUd.getMessage().contains("at least 40 bytes"), shortUd.getMessage());
            qp.postReceive(mr, 0, 40, 1);
        }
    }

    /**
     * Issue 29 item 7: a batched receive of length 0 was posted (the single path refused it); on
     * SRD, which has no 40-byte area to refuse it for, libefa takes a slot for it that never
     * completes ({@code efa_post_recv} writes no descriptor for an empty SGE list).
     */
    @Test
    void anEmptyBatchedReceiveIsRefusedAsASingleOneIs() {
        UdEndpoint e = f.endpoint(f.pd(1), UdEndpoint.Options.defaults());
        ProtectionDomain pd = e.pd();
        try (var cq = pd.device().createCq(4);
             var mr = pd.registerMemory(ByteBuffer.allocateDirect(64));
             var qp = pd.createQp(QueuePairType.SRD, cq, cq, 4, 4)) {
            qp.activate(1, 0, UdEndpoint.DEFAULT_QKEY);
            IllegalArgumentException ex = assertThrows(IllegalArgumentException.class,
                    () -> qp.postReceives(mr, new int[] {0, 8}, 0, new long[] {1, 2}, 2));
            assertTrue(ex.getMessage().startsWith("length: 0; valid 1.."), ex.getMessage());
            assertEquals(2, qp.postReceives(mr, new int[] {0, 8}, 8, new long[] {1, 2}, 2));
        }
    }

    /**
     * Issue 29 item 7: each failed send cost an {@code ibv_query_qp}, an admin-queue command on EFA.
     * The completion says enough there: a send to a QPN that does not exist fails alone.
     */
    @Test
    void aFailedSendOnEfaCostsNoQpQuery() throws Exception {
        FaultyDatapath counting = new FaultyDatapath(new MockVerbsProvider(MockConfig.builder().deviceCount(2).build()));
        try (Device d0 = Device.open(counting, "efa_0");
             Device d1 = Device.open(counting, "efa_1");
             ProtectionDomain pd0 = d0.allocatePd();
             ProtectionDomain pd1 = d1.allocatePd();
             AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.PARANOID).build();
             UdEndpoint a = UdEndpoint.open(pd0, cache, UdEndpoint.Options.defaults().withTransport(QueuePairType.SRD));
             UdEndpoint b = UdEndpoint.open(pd1, cache, UdEndpoint.Options.defaults().withTransport(QueuePairType.SRD));
             AddressHandle toB = cache.acquire(pd0, AddressHandleAttributes.forGid(b.address().gid()))) {
            for (int i = 0; i < 5; i++) {
                a.send(toB, b.address().qpn() + 1, b.address().qkey(), ByteBuffer.allocate(8));
            }
            WorkCompletionException e = assertThrows(WorkCompletionException.class, () -> a.flush(5, TimeUnit.SECONDS));
            assertEquals(5, e.failures().size());
            assertEquals(EfaCompletionStatus.REMOTE_ERROR_BAD_DEST_QPN, e.failures().get(0).efaStatus());
            assertEquals(0, counting.qpStateQueries.get(), "ibv_query_qp calls");
            a.send(toB, b.address(), ByteBuffer.allocate(8));
            assertTrue(a.flush(5, TimeUnit.SECONDS), "the QP goes on");
            assertEquals(0, a.counters().recoveries());
        }
    }
}
