package org.efaah.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.fixture.CountingProvider;
import org.efaah.ud.Datagram;
import org.efaah.ud.TestDatagrams;
import org.efaah.ud.UdEndpoint;
import org.efaah.ud.WorkCompletionException;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.CompletionQueue;
import org.efaah.verbs.Device;
import org.efaah.verbs.Errno;
import org.efaah.verbs.Gid;
import org.efaah.verbs.Grh;
import org.efaah.verbs.InterruptedOperationException;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.QueuePairState;
import org.efaah.verbs.QueuePairType;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.WorkCompletion;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Issue 11 cases 3, 5 and 6 (GRH part) and issue 9's refusal of SRD, against the real kernel
 * device (rxe0 in the VM): a blocked receive ends on close and on interrupt, an oversized
 * datagram costs one QP recovery and not the endpoint, the source and the reply agree on a GRH
 * libibverbs reads as IPv4, and SRD on a non-EFA device is EOPNOTSUPP.
 */
@Tag("native")
class NativeDatapathTest {
    private static final long PROMPT_NANOS = TimeUnit.SECONDS.toNanos(1);

    private CountingProvider provider;
    private Device device;
    private ProtectionDomain pd;
    private AddressHandleCache cache;
    private int gidIndex;

    @BeforeEach
    void open() {
        provider = new CountingProvider(NativeDevice.provider());
        device = NativeDevice.open(provider);
        pd = device.allocatePd();
        cache = AddressHandleCache.builder().leakDetection(LeakDetection.PARANOID).build();
        gidIndex = NativeDevice.gidIndex();
    }

    @AfterEach
    void close() {
        if (cache != null) {
            cache.close();
        }
        if (pd != null) {
            pd.close();
        }
        if (device != null) {
            device.close();
        }
    }

    private UdEndpoint.Options options() {
        return UdEndpoint.Options.defaults().withSgidIndex(gidIndex);
    }

    @Test
    void aReceiveBlockedInAnotherThreadEndsPromptlyOnCloseAndOnInterrupt() throws Exception {
        UdEndpoint e = UdEndpoint.open(pd, cache, options());
        try {
            // Interrupt first: the endpoint stays usable.
            AtomicReference<Throwable> thrown = new AtomicReference<>();
            AtomicBoolean flagKept = new AtomicBoolean();
            Thread t = blockedReceive(e, thrown, flagKept);
            long t0 = System.nanoTime();
            t.interrupt();
            t.join(10_000);
            long interruptNanos = System.nanoTime() - t0;
            assertInstanceOf(InterruptedOperationException.class, thrown.get());
            assertTrue(flagKept.get());
            assertTrue(interruptNanos < PROMPT_NANOS, "interrupted receive(6 s) took " + interruptNanos / 1_000_000 + " ms");
            // Then close under a second blocked receive.
            thrown.set(null);
            t = blockedReceive(e, thrown, flagKept);
            t0 = System.nanoTime();
            e.close();
            long closeNanos = System.nanoTime() - t0;
            t.join(10_000);
            long endNanos = System.nanoTime() - t0;
            assertInstanceOf(IllegalStateException.class, thrown.get());
            assertTrue(closeNanos < PROMPT_NANOS, "close behind receive(6 s) took " + closeNanos / 1_000_000 + " ms");
            assertTrue(endNanos < PROMPT_NANOS, "the receive ended " + endNanos / 1_000_000 + " ms after close");
            NativeDevice.figure(String.format("%s: interrupted receive(6 s) returned in %d ms; close under a "
                    + "receive(6 s) took %d ms", device.name(), interruptNanos / 1_000_000, closeNanos / 1_000_000));
        } finally {
            e.close();
        }
    }

    private static Thread blockedReceive(UdEndpoint e, AtomicReference<Throwable> thrown, AtomicBoolean flagKept)
            throws InterruptedException {
        CountDownLatch started = new CountDownLatch(1);
        Thread t = new Thread(() -> {
            started.countDown();
            try {
                e.receive(6, TimeUnit.SECONDS);
            } catch (Throwable x) {
                thrown.set(x);
                flagKept.set(Thread.currentThread().isInterrupted());
            }
        });
        t.start();
        started.await();
        Thread.sleep(200);
        return t;
    }

    /*
     * rxe ends a receive too short for its datagram LOC_QP_OP_ERR and puts the QP in ERR: one
     * recovery. libefa's to_ibv_status gives LOC_LEN_ERR (LOCAL_ERROR_BAD_LENGTH), and whether the
     * QP leaves RTS on EFA is unknown: no recovery or one, the figure says which.
     */
    @Test
    void anOversizedDatagramCostsOneRecoveryAndLaterDatagramsArrive() {
        try (UdEndpoint small = UdEndpoint.open(pd, cache, options().withMaxMessageSize(512));
             UdEndpoint big = UdEndpoint.open(pd, cache, options());
             AddressHandle toSmall = cache.acquire(pd, AddressHandleAttributes.builder().dgid(small.address().gid())
                     .sgidIndex(gidIndex).build())) {
            big.send(toSmall, small.address(), ByteBuffer.allocate(1024));
            WorkCompletionException e = assertThrows(WorkCompletionException.class,
                    () -> small.receive(30, TimeUnit.SECONDS));
            NativeDevice.figure(device.name() + ": a 1,024-byte datagram into 512-byte receives: " + e.getMessage()
                    + "; recoveries " + small.counters().recoveries());
            assertEquals(device.isEfa() ? WorkCompletion.LOC_LEN_ERR : WorkCompletion.LOC_QP_OP_ERR, e.status(),
                    e.getMessage());
            if (!device.isEfa()) {
                assertEquals(1, small.counters().recoveries());
            }
            int arrived = 0;
            try {
                for (int i = 0; i < 300; i++) {
                    big.send(toSmall, small.address(), ByteBuffer.allocate(512).put(0, (byte) i));
                    Datagram d = small.receive(30, TimeUnit.SECONDS);
                    assertNotNull(d, "512-byte datagram " + i + " after the oversized one");
                    assertEquals(512, d.payload().length);
                    assertEquals((byte) i, d.payload()[0]);
                    arrived++;
                }
            } finally {
                long recoveries = small.counters().recoveries();
                if (device.isEfa()) {
                    NativeDevice.figure(device.name() + ": after a receive too short (LOC_LEN_ERR) the QP "
                            + (recoveries > 0 ? "left RTS and was recovered" : arrived == 300 ? "stayed in RTS"
                            : "stopped delivering, not recovered") + ": recoveries " + recoveries + ", "
                            + arrived + " of 300 later datagrams arrived");
                }
            }
            if (device.isEfa()) {
                assertTrue(small.counters().recoveries() <= 1, "recoveries " + small.counters().recoveries());
            } else {
                assertEquals(1, small.counters().recoveries());
            }
            assertTrue(big.flush(30, TimeUnit.SECONDS));
        }
    }

    @Test
    void theQpStateIsReadAndAResetQpComesBackToRts() {
        CompletionQueue cq = device.createCq(8);
        try (cq; var qp = pd.createUdQp(cq, cq, 4, 4)) {
            assertEquals(QueuePairState.RESET, qp.state());
            qp.activate(1, 0, UdEndpoint.DEFAULT_QKEY);
            assertEquals(QueuePairState.RTS, qp.state());
            qp.reset();
            assertEquals(QueuePairState.RESET, qp.state());
            qp.activate(1, 0, UdEndpoint.DEFAULT_QKEY);
            assertEquals(QueuePairState.RTS, qp.state());
        }
    }

    @Test
    void sourceAndReplyAgreeOnAGrhThatLibibverbsReadsAsIpv4() {
        Gid own = device.gid(1, gidIndex);
        Assumptions.assumeTrue(own.isIpv4Mapped(), "needs an IPv4-mapped local GID (RoCE v2 over IPv4)");
        byte[] local = own.toBytes();
        byte[] area = TestDatagrams.ipv6NibbleThenIpv4(new byte[] {10, 0, 0, 5},
                new byte[] {local[12], local[13], local[14], local[15]});
        assertEquals(Grh.Version.IPV4, Grh.version(area));
        try (UdEndpoint e = UdEndpoint.open(pd, cache, options())) {
            Datagram d = TestDatagrams.withGrh(area, 0x123);
            AddressHandleAttributes reply = e.replyAttributes(d);
            NativeDevice.figure(device.name() + ": 20 bytes 0x60 + IPv4 10.0.0.5 -> " + own + ": source "
                    + d.sourceGid() + ", ibv_init_ah_from_wc dgid " + reply.dgid() + " sgid_index " + reply.sgidIndex());
            assertEquals(Gid.parse("::ffff:10.0.0.5"), d.sourceGid());
            assertEquals(d.sourceGid(), reply.dgid(), "libibverbs and the endpoint agree");
        }
    }

    @Test
    void srdOnADeviceThatIsNotEfaIsRefusedWithEopnotsupp() {
        Assumptions.assumeFalse(device.isEfa(), "on EFA SRD is supported (NativeEfaDatapathTest)");
        VerbsException e = assertThrows(VerbsException.class,
                () -> UdEndpoint.open(pd, cache, options().withTransport(QueuePairType.SRD)));
        assertEquals(Errno.EOPNOTSUPP, e.errno());
        assertTrue(e.getMessage().contains(device.name()), e.getMessage());
        // The stub refuses too, whether libefa is absent or answers for a device that is not EFA.
        CompletionQueue cq = device.createCq(8);
        try (cq) {
            long cqHandle = provider.lastCq;
            VerbsException stub = assertThrows(VerbsException.class, () -> provider.efa()
                    .createSrdQp(provider.lastPd, cqHandle, cqHandle, 4, 4));
            assertEquals(Errno.EOPNOTSUPP, stub.errno(), stub.getMessage());
            NativeDevice.figure(device.name() + ": SRD refused: " + e.getMessage() + " / stub: " + stub.getMessage());
        }
    }

    @Test
    void anEfaCqIsRefusedOnADeviceThatIsNotEfa() {
        Assumptions.assumeFalse(device.isEfa(), "on EFA the CQ is made (NativeEfaDatapathTest)");
        VerbsException e = assertThrows(VerbsException.class, () -> device.createCqWithSourceGid(8));
        assertEquals(Errno.EOPNOTSUPP, e.errno());
        assertTrue(e.getMessage().contains(device.name()), e.getMessage());
    }

    @Test
    void anEfaCqOnAChannelIsRefusedOnADeviceThatIsNotEfaAndTheEndpointStillSleeps() {
        Assumptions.assumeFalse(device.isEfa(), "on EFA the CQ is made (NativeEfaDatapathTest)");
        VerbsException e = assertThrows(VerbsException.class, () -> device.createCqWithSourceGidAndEvents(8));
        assertEquals(Errno.EOPNOTSUPP, e.errno(), e.getMessage());
        assertEquals("efadv_create_cq", e.operation());
        try (CompletionQueue cq = device.createCqWithEvents(8)) {
            assertTrue(cq.hasEvents(), "a plain CQ on a channel is still made after the refusal");
        }
    }

    /**
     * {@link UdEndpoint#sendBatch}: more payloads than send slots, posted in chained
     * {@code ibv_post_send} calls, received through a handler with every byte checked.
     */
    @Test
    void aBatchLargerThanTheSendRingArrivesWholeThroughAHandler() {
        try (UdEndpoint sender = UdEndpoint.open(pd, cache, options().withDepths(16, 16));
             UdEndpoint receiver = UdEndpoint.open(pd, cache, options().withDepths(16, 256));
             AddressHandle ah = cache.acquire(pd, AddressHandleAttributes.builder()
                     .dgid(receiver.address().gid()).sgidIndex(gidIndex).build())) {
            ByteBuffer[] batch = new ByteBuffer[200];
            for (int i = 0; i < batch.length; i++) {
                batch[i] = TestDatagrams.pattern(1 + i, i);
            }
            sender.sendBatch(ah, receiver.address(), batch, 0, batch.length);
            for (ByteBuffer b : batch) {
                assertEquals(0, b.remaining(), "every payload consumed");
            }
            assertTrue(sender.flush(10, TimeUnit.SECONDS));
            int[] got = {0};
            while (got[0] < batch.length) {
                int n = receiver.receive(d -> {
                    ByteBuffer want = TestDatagrams.pattern(1 + got[0], got[0]);
                    assertEquals(want, d.payload(), "datagram " + got[0]);
                    assertEquals(sender.address().qpn(), d.sourceQpn());
                    got[0]++;
                }, 64, 10, TimeUnit.SECONDS);
                assertTrue(n > 0, "received " + got[0] + " of " + batch.length);
            }
            assertEquals(batch.length, sender.counters().sent());
        }
    }
}
