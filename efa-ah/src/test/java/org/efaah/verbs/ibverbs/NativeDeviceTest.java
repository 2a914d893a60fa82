package org.efaah.verbs.ibverbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.spi.CreatedAh;
import org.efaah.verbs.Device;
import org.efaah.verbs.DeviceAttributes;
import org.efaah.verbs.Errno;
import org.efaah.verbs.Gid;
import org.efaah.verbs.HardwareAddressHandle;
import org.efaah.verbs.PortAttributes;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.spi.QueuePairNumbers;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.spi.VerbsProvider;
import org.efaah.verbs.VerbsProviders;
import org.efaah.verbs.WorkCompletion;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Against a real device: EFA on AWS, or soft-RoCE (rxe) in the test VM. Excluded from the
 * default build by its tag; run with {@code mvn -Pnative-it verify}.
 */
@Tag("native")
class NativeDeviceTest {

    @BeforeEach
    void needsDevice() {
        NativeTestSupport.assumeDevice();
    }

    @Test
    void providerRoundTripOnFirstDevice() {
        try (VerbsProvider p = VerbsProviders.open("native")) {
            List<String> names = p.deviceNames();
            assertFalse(names.isEmpty());
            long context = p.openDevice(names.get(0));
            try {
                DeviceAttributes device = p.queryDevice(context);
                assertEquals(names.get(0), device.name());
                assertTrue(device.portCount() >= 1, device.toString());
                PortAttributes port = p.queryPort(context, 1);
                assertTrue(port.gidTableLength() > 0, port.toString());
                assertTrue(List.of(256, 512, 1024, 2048, 4096).contains(port.activeMtu()), port.toString());
                Gid own = p.queryGid(context, 1, 0);
                assertFalse(own.isZero(), "GID 0 of port 1 is empty on " + device.name());

                long pd = p.allocatePd(context);
                try {
                    CreatedAh ah = p.createAh(pd, AddressHandleAttributes.builder().dgid(own).portNum(1).build());
                    assertNotEquals(0, ah.handle());
                    if (device.efa()) {
                        assertTrue(ah.ahn() >= 0 && ah.ahn() <= 0xFFFF, "AHN " + ah.ahn());
                    } else {
                        assertEquals(CreatedAh.NO_AHN, ah.ahn(), "a non-EFA device has no AHN");
                    }
                    // The kernel refuses to free a PD that an AH still uses.
                    VerbsException busy = assertThrows(VerbsException.class, () -> p.deallocatePd(pd));
                    assertEquals(Errno.EBUSY, busy.errno(), busy.getMessage());
                    p.destroyAh(ah.handle());
                } finally {
                    p.deallocatePd(pd);
                }
            } finally {
                p.closeDevice(context);
            }
        }
    }

    @Test
    void deviceApiOverNative() {
        try (VerbsProvider p = VerbsProviders.open("native"); Device device = Device.openFirst(p)) {
            Gid own = device.gid(1, 0);
            try (ProtectionDomain pd = device.allocatePd()) {
                HardwareAddressHandle ah = pd.createAh(AddressHandleAttributes.forGid(own));
                assertEquals(device.isEfa(), ah.ahn() != CreatedAh.NO_AHN);
                assertEquals(1, pd.liveAhCount());
                ah.destroy();
                assertEquals(0, pd.liveAhCount());
            }
        }
    }

    @Test
    void autoChoosesNativeWhenADeviceIsPresent() {
        assertEquals("native", VerbsProviders.factory("auto").name());
    }

    /**
     * The datagram calls one by one on the raw provider: a UD QP sends to itself through an AH to
     * its own GID, and the completions, payload, GRH and return-path attributes are what verbs
     * promise. Then the errors the stub or the kernel give, and polling that allocates nothing.
     */
    @Test
    void datagramPathOnTheRawProvider() {
        String env = System.getenv("EFA_AH_VM_GID_INDEX");
        int gidIndex = env == null ? 0 : Integer.parseInt(env);
        try (VerbsProvider p = VerbsProviders.open("native")) {
            long context = p.openDevice(p.deviceNames().get(0));
            long pd = p.allocatePd(context);
            long sendCq = p.datagrams().createCq(context, 16);
            long recvCq = p.datagrams().createCq(context, 16);
            ByteBuffer memory = ByteBuffer.allocateDirect(4096);
            long mr = p.datagrams().registerMemory(pd, memory);
            QueuePairNumbers qp = p.datagrams().createUdQp(pd, sendCq, recvCq, 8, 8);
            CreatedAh ah = null;
            try {
                assertTrue(qp.qpn() > 0 && qp.qpn() <= 0xFFFFFF, "qpn " + qp.qpn());
                p.datagrams().activateUdQp(qp.handle(), 1, 0, 0x11111111);
                p.datagrams().postReceive(qp.handle(), mr, 2048, 40 + 100, 77);
                for (int i = 0; i < 100; i++) {
                    memory.put(i, (byte) (i * 3 + 1));
                }
                Gid own = p.queryGid(context, 1, gidIndex);
                CreatedAh toSelf = p.createAh(pd, AddressHandleAttributes.builder().dgid(own).sgidIndex(gidIndex).build());
                ah = toSelf;
                p.datagrams().postSend(qp.handle(), toSelf.handle(), qp.qpn(), 0x11111111, mr, 0, 100, 55);

                WorkCompletion[] wc = {new WorkCompletion(), new WorkCompletion()};
                WorkCompletion sent = pollOne(p, sendCq, wc);
                assertEquals(55, sent.wrId);
                assertEquals(WorkCompletion.SUCCESS, sent.status, sent.toString());
                assertEquals(WorkCompletion.OPCODE_SEND, sent.opcode);
                WorkCompletion received = pollOne(p, recvCq, wc);
                assertEquals(77, received.wrId);
                assertEquals(WorkCompletion.SUCCESS, received.status, received.toString());
                assertEquals(WorkCompletion.OPCODE_RECV, received.opcode);
                assertEquals(40 + 100, received.byteLength);
                assertEquals(qp.qpn(), received.qpNum);
                assertEquals(qp.qpn(), received.srcQp);
                // libefa's efa_process_cqe sets wc_flags 0: the 40 bytes are no GRH, and
                // ibv_init_ah_from_wc can only make a local AH to slid from such a completion.
                boolean efa = p.queryDevice(context).vendorId() == DeviceAttributes.AMAZON_VENDOR_ID;
                assertEquals(efa ? 0 : WorkCompletion.FLAG_GRH, received.wcFlags & WorkCompletion.FLAG_GRH,
                        (efa ? "EFA" : "verbs") + " receive: " + received);
                for (int i = 0; i < 100; i++) {
                    assertEquals((byte) (i * 3 + 1), memory.get(2048 + 40 + i), "payload byte " + i);
                }
                AddressHandleAttributes back = p.datagrams().initAhFromWc(context, 1, received, mr, 2048);
                if (efa) {
                    assertFalse(back.isGlobal(), back.toString());
                    assertEquals(received.slid, back.dlid(), back.toString());
                } else {
                    assertEquals(own, back.dgid(), back.toString());
                    assertEquals(gidIndex, back.sgidIndex(), back.toString());
                    assertTrue(back.isGlobal());
                }

                // Ranges outside the MR are refused by the stub, before libibverbs.
                VerbsException outside = assertThrows(VerbsException.class,
                        () -> p.datagrams().postSend(qp.handle(), toSelf.handle(), qp.qpn(), 0, mr, 4000, 97, 1));
                assertEquals(Errno.EINVAL, outside.errno());
                assertEquals("ibv_post_send", outside.operation());
                assertEquals(Errno.EINVAL, assertThrows(VerbsException.class,
                        () -> p.datagrams().initAhFromWc(context, 1, received, mr, 4057)).errno());
                // The kernel keeps a CQ that a QP uses.
                VerbsException busy = assertThrows(VerbsException.class, () -> p.datagrams().destroyCq(sendCq));
                assertEquals("ibv_destroy_cq", busy.operation());

                assertPollingAllocatesNothing(p, recvCq, wc);
            } finally {
                tearDown(p, context, pd, sendCq, recvCq, mr, qp, ah);
            }
        }
    }

    /**
     * Batched posts of more than the stub's 64 a call, read by the stub in place: 100 receives in
     * one {@code postReceives} and 100 sends in one {@code postSends} (64, then 36), then 100 more
     * from a second {@link SendRequests}, so that a thread's remembered address of the first would
     * post the first's requests again. Every completion comes back once, in order, with its length
     * and its payload.
     */
    @Test
    void batchedPostsPastSixtyFourAreReadWhereTheyLie() {
        String env = System.getenv("EFA_AH_VM_GID_INDEX");
        int gidIndex = env == null ? 0 : Integer.parseInt(env);
        int count = 100;
        int receiveBase = 2 * count * 64;
        try (VerbsProvider p = VerbsProviders.open("native")) {
            long context = p.openDevice(p.deviceNames().get(0));
            long pd = p.allocatePd(context);
            long sendCq = p.datagrams().createCq(context, 256);
            long recvCq = p.datagrams().createCq(context, 256);
            ByteBuffer memory = ByteBuffer.allocateDirect(receiveBase + count * 256);
            long mr = p.datagrams().registerMemory(pd, memory);
            QueuePairNumbers qp = p.datagrams().createUdQp(pd, sendCq, recvCq, 128, 128);
            CreatedAh ah = null;
            try {
                p.datagrams().activateUdQp(qp.handle(), 1, 0, 0x11111111);
                Gid own = p.queryGid(context, 1, gidIndex);
                ah = p.createAh(pd, AddressHandleAttributes.builder().dgid(own).sgidIndex(gidIndex).build());
                org.efaah.verbs.SendRequests first = org.efaah.verbs.SendRequests.allocate(count);
                org.efaah.verbs.SendRequests second = org.efaah.verbs.SendRequests.allocate(count);
                for (int i = 0; i < count; i++) {
                    memory.put(i * 64, (byte) i);
                    memory.put((count + i) * 64, (byte) (count + i));
                    first.set(i, i * 64, 1 + i % 64, 2000 + i);
                    second.set(i, (count + i) * 64, 1 + (count + i) % 64, 2000 + count + i);
                }
                for (org.efaah.verbs.SendRequests requests : List.of(first, second)) {
                    int round = requests == first ? 0 : count;
                    int[] offsets = new int[count];
                    long[] wrIds = new long[count];
                    for (int i = 0; i < count; i++) {
                        offsets[i] = receiveBase + i * 256;
                        wrIds[i] = 1000 + round + i;
                    }
                    assertEquals(count, p.datagrams().postReceives(qp.handle(), mr, offsets, 256, wrIds, count));
                    assertEquals(count, p.datagrams().postSends(qp.handle(), ah.handle(), qp.qpn(), 0x11111111, mr,
                            requests, count));
                    WorkCompletion[] wc = new WorkCompletion[16];
                    for (int i = 0; i < wc.length; i++) {
                        wc[i] = new WorkCompletion();
                    }
                    List<WorkCompletion> sent = pollAll(p, sendCq, wc, count);
                    List<WorkCompletion> received = pollAll(p, recvCq, wc, count);
                    for (int i = 0; i < count; i++) {
                        int d = round + i;
                        assertEquals(2000 + d, sent.get(i).wrId, "send " + d);
                        assertEquals(WorkCompletion.SUCCESS, sent.get(i).status, sent.get(i).toString());
                        WorkCompletion r = received.get(i);
                        assertEquals(1000 + d, r.wrId, "receive " + d);
                        assertEquals(WorkCompletion.SUCCESS, r.status, r.toString());
                        assertEquals(40 + 1 + d % 64, r.byteLength, "receive " + d);
                        assertEquals((byte) d, memory.get(receiveBase + i * 256 + 40), "payload of " + d);
                    }
                }
            } finally {
                tearDown(p, context, pd, sendCq, recvCq, mr, qp, ah);
            }
        }
    }

    /** Frees what a raw-provider test made, children first; {@code ah} may be null. */
    private static void tearDown(VerbsProvider p, long context, long pd, long sendCq, long recvCq, long mr,
                                 QueuePairNumbers qp, CreatedAh ah) {
        if (ah != null) {
            p.destroyAh(ah.handle());
        }
        p.datagrams().destroyQp(qp.handle());
        p.datagrams().deregisterMemory(mr);
        p.datagrams().destroyCq(recvCq);
        p.datagrams().destroyCq(sendCq);
        p.deallocatePd(pd);
        p.closeDevice(context);
    }

    /** {@code count} completions of {@code cq}, copied out, polled for at most 30 s. */
    private static List<WorkCompletion> pollAll(VerbsProvider p, long cq, WorkCompletion[] wc, int count) {
        List<WorkCompletion> all = new java.util.ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (all.size() < count && System.nanoTime() < deadline) {
            int n = p.datagrams().pollCq(cq, wc);
            for (int i = 0; i < n; i++) {
                WorkCompletion kept = new WorkCompletion();
                kept.copyFrom(wc[i]);
                all.add(kept);
            }
            if (n == 0) {
                Thread.onSpinWait();
            }
        }
        assertEquals(count, all.size(), "completions in 30 s");
        return all;
    }

    /**
     * A poll whose holder is null loses no completion: those the stub took are kept for the CQ
     * (UnclaimedCompletions) and handed out first by its next poll, and what a CQ kept goes with
     * its destroy, not with a destroy refused. Both CQ kinds of the device: EFA's with the sender's GID, or rxe's.
     */
    @Test
    void aNullHolderLosesNoCompletion() {
        String env = System.getenv("EFA_AH_VM_GID_INDEX");
        int gidIndex = env == null ? 0 : Integer.parseInt(env);
        try (VerbsProvider p = VerbsProviders.open("native")) {
            boolean efa;
            try (Device device = Device.openFirst(p)) {
                efa = device.isEfa();
            }
            org.efaah.verbs.NullHolderPolls.sendAndReceive(p, efa, gidIndex, (sendCq, receiveCq) -> {
                assertEquals(1, UnclaimedCompletions.kept(sendCq), "the last send's completion, taken by the stub");
                assertEquals(0, UnclaimedCompletions.kept(receiveCq), "every kept completion handed out");
                // A destroy refused (a QP still uses the CQ) leaves the CQ with what it kept.
                VerbsException busy = assertThrows(VerbsException.class, () -> p.datagrams().destroyCq(sendCq));
                assertEquals(Errno.EBUSY, busy.errno(), busy.toString());
                assertEquals(1, UnclaimedCompletions.kept(sendCq), "kept across a refused destroy");
            });
            assertFalse(UnclaimedCompletions.any(), "what the send CQ kept went with its destroy");
        }
    }

    private static WorkCompletion pollOne(VerbsProvider p, long cq, WorkCompletion[] wc) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline) {
            int n = p.datagrams().pollCq(cq, wc);
            if (n > 0) {
                assertEquals(1, n);
                return wc[0];
            }
            Thread.onSpinWait();
        }
        throw new AssertionError("no completion in 30 s");
    }

    private static void assertPollingAllocatesNothing(VerbsProvider p, long cq, WorkCompletion[] wc) {
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long id = Thread.currentThread().getId();
        for (int i = 0; i < 20_000; i++) {
            p.datagrams().pollCq(cq, wc); // warm-up: this thread's scratch is made, the path compiled
        }
        long before = threads.getThreadAllocatedBytes(id);
        for (int i = 0; i < 100_000; i++) {
            assertEquals(0, p.datagrams().pollCq(cq, wc));
        }
        long allocated = threads.getThreadAllocatedBytes(id) - before;
        // Not 0: the JIT may still allocate a little for the measuring loop itself.
        assertTrue(allocated < 100_000, allocated + " bytes allocated by 100,000 empty polls");
    }
}
