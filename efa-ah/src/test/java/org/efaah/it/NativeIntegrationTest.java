package org.efaah.it;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.CacheStats;
import org.efaah.cache.LeakDetection;
import org.efaah.fixture.CountingProvider;
import org.efaah.ud.Datagram;
import org.efaah.ud.UdEndpoint;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.DeviceAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.Errno;
import org.efaah.verbs.Gid;
import org.efaah.verbs.HardwareAddressHandle;
import org.efaah.verbs.PortAttributes;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.spi.VerbsProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The library against a real kernel verbs device: soft-RoCE (rxe0) in the VM of
 * {@code scripts/rxe-vm}, or an EFA device on an EFA host. Skipped, saying why, where there is
 * no device (see {@link NativeDevice#REQUIRE_DEVICE}).
 */
@Tag("native")
class NativeIntegrationTest {
    private CountingProvider provider;
    private Device device;
    private ProtectionDomain pd;
    private AddressHandleCache cache;
    private int gidIndex;

    @BeforeEach
    void open() {
        VerbsProvider real = NativeDevice.provider();
        provider = new CountingProvider(real);
        device = NativeDevice.open(provider);
        pd = device.allocatePd();
        cache = AddressHandleCache.builder().leakDetection(LeakDetection.PARANOID).build();
        gidIndex = NativeDevice.gidIndex();
    }

    @AfterEach
    void close() {
        if (cache != null) {
            cache.close();
            assertEquals(0, cache.stats().leaksReported(), "every handle closed before the cache");
        }
        if (pd != null) {
            pd.close();
        }
        if (device != null) {
            device.close();
        }
    }

    private AddressHandleAttributes peer(Gid gid) {
        return AddressHandleAttributes.builder().dgid(gid).sgidIndex(gidIndex).build();
    }

    @Test
    void discoversTheDeviceWithItsPortsGidsAndMaxAh() {
        DeviceAttributes a = device.attributes();
        assertEquals("native", provider.name());
        assertTrue(a.maxAh() > 0, "max_ah " + a.maxAh());
        assertTrue(a.portCount() >= 1);
        PortAttributes port = device.port(1);
        assertEquals(PortAttributes.STATE_ACTIVE, port.state(), port.stateName());
        assertTrue(port.gidTableLength() > gidIndex);
        Gid own = device.gid(1, gidIndex);
        assertTrue(!own.isZero(), "GID[" + gidIndex + "] is empty");
        if (NativeDevice.inVm()) {
            assertEquals("rxe0", device.name());
            assertEquals(PortAttributes.LINK_LAYER_ETHERNET, port.linkLayer());
            assertEquals(Gid.parse("::ffff:" + System.getenv("EFA_AH_VM_LOCAL_IP")), own);
            assertTrue(!device.isEfa());
        }
        NativeDevice.figure(String.format("device %s: vendor_id 0x%x, max_ah %d, ports %d, gid_tbl_len %d, active_mtu %d",
                a.name(), a.vendorId(), a.maxAh(), a.portCount(), port.gidTableLength(), port.activeMtu()));
    }

    /*
     * A thousand invented peers on RoCE; on EFA only real GIDs take an AH (NativeDevice.peers), so
     * there the peers are this host's EFA devices' GIDs, often one: the figure names how many.
     */
    @Test
    void fourThreadsOnAThousandPeersMakeOneNativeCreatePerPeer() throws Exception {
        int threads = 4;
        int repeats = 5;
        List<Gid> peers = NativeDevice.peers(device, 1000);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CyclicBarrier start = new CyclicBarrier(threads);
        List<Future<List<AddressHandle>>> results = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int offset = t * 250;
            results.add(pool.submit(() -> {
                start.await();
                List<AddressHandle> held = new ArrayList<>();
                for (int r = 0; r < repeats; r++) {
                    for (int i = 0; i < peers.size(); i++) {
                        AddressHandle h = cache.acquire(pd, peer(peers.get((i + offset) % peers.size())));
                        h.nativeHandle();
                        held.add(h);
                    }
                }
                return held;
            }));
        }
        List<AddressHandle> all = new ArrayList<>();
        for (Future<List<AddressHandle>> f : results) {
            all.addAll(f.get(20, TimeUnit.MINUTES));
        }
        pool.shutdown();
        assertEquals(peers.size(), provider.creates.get(), "ibv_create_ah calls == distinct keys");
        long createsBeforeTiming = provider.creates.get();
        CacheStats s = cache.stats();
        assertEquals(threads * repeats * peers.size(), s.requests());
        assertEquals(peers.size(), cache.inspection().liveEntries());
        // The hit path, timed alone: acquire + close of a key another handle keeps alive, through a
        // cache with the default (sampled) leak detection; this test's own cache tracks every handle.
        AddressHandleAttributes hot = peer(peers.get(0));
        double hitNanos;
        try (AddressHandleCache timed = AddressHandleCache.builder().leakDetection(LeakDetection.SAMPLED).build();
             AddressHandle keep = timed.acquire(pd, hot)) {
            int n = 200_000;
            for (int i = 0; i < n; i++) {
                timed.acquire(pd, hot).close(); // warm-up
            }
            long t0 = System.nanoTime();
            for (int i = 0; i < n; i++) {
                timed.acquire(pd, hot).close();
            }
            hitNanos = (System.nanoTime() - t0) / (double) n;
            assertTrue(keep.nativeHandle() != 0);
        }
        assertEquals(createsBeforeTiming + 1, provider.creates.get(), "the timed cache made one AH of its own");
        all.forEach(AddressHandle::close);
        assertEquals(peers.size() + 1, provider.destroys.get(),
                "every AH destroyed exactly once at the end (plus the timed cache's own)");
        assertEquals(0, cache.inspection().liveEntries());
        NativeDevice.figure(String.format("%s: native ibv_create_ah mean %.1f µs, ibv_destroy_ah mean %.1f µs "
                        + "(%d peers); cache hit (acquire+close, sampled leak detection) %.0f ns, in the same run",
                device.name(), provider.createNanos.get() / 1e3 / (peers.size() + 1),
                provider.destroyNanos.get() / 1e3 / (peers.size() + 1), peers.size(), hitNanos));
    }

    @Test
    void fieldsThatMatterOnRoceGiveDistinctAhs() {
        Assumptions.assumeFalse(device.isEfa(), "EFA keys AHs by GID alone");
        AddressHandleAttributes base = peer(NativeDevice.peers(device, 1).get(0));
        List<AddressHandleAttributes> variants = new ArrayList<>(List.of(base, base.toBuilder().hopLimit(5).build(),
                base.toBuilder().trafficClass(32).build()));
        int second = secondIpv4Gid();
        if (second >= 0) {
            variants.add(base.toBuilder().sgidIndex(second).build());
        }
        List<AddressHandle> handles = new ArrayList<>();
        for (AddressHandleAttributes v : variants) {
            handles.add(cache.acquire(pd, v));
            handles.add(cache.acquire(pd, v));
        }
        assertEquals(variants.size(), provider.creates.get());
        for (int i = 2; i < handles.size(); i += 2) {
            assertNotEquals(handles.get(0).nativeHandle(), handles.get(i).nativeHandle());
            assertEquals(handles.get(i).nativeHandle(), handles.get(i + 1).nativeHandle());
        }
        handles.forEach(AddressHandle::close);
        assertEquals(variants.size(), provider.destroys.get());
    }

    private int secondIpv4Gid() {
        String clients = System.getenv("EFA_AH_VM_CLIENT_IPS");
        if (clients == null || clients.isBlank()) {
            return -1;
        }
        return NativeDevice.indexOf(device, 1, Gid.parse("::ffff:" + clients.trim().split("\\s+")[0]));
    }

    @Test
    void kernelErrorsSurfaceTypedAndLeaveNothingBehind() {
        Assumptions.assumeTrue(NativeDevice.inVm(), "needs the VM's unreachable 10.9.200.0/24");
        VerbsException e = assertThrows(VerbsException.class,
                () -> cache.acquire(pd, peer(Gid.parse("::ffff:10.9.200.1"))));
        assertNotEquals(Errno.UNKNOWN, e.errno(), e.getMessage());
        assertEquals("ibv_create_ah", e.operation());
        NativeDevice.figure("AH to a GID with no neighbour: " + e.getMessage());
        assertEquals(0, cache.inspection().liveEntries());
        assertEquals(0, cache.inspection().liveHandles());
        assertEquals(1, cache.stats().createFailures());
        // The failure left nothing stuck: the same cache and PD still work.
        try (AddressHandle ok = cache.acquire(pd, peer(NativeDevice.peers(device, 1).get(0)))) {
            ok.nativeHandle();
        }
    }

    @Test
    void badSgidIndexIsRefusedBeforeOrByTheKernel() {
        int tableLength = device.port(1).gidTableLength();
        AddressHandleAttributes base = peer(NativeDevice.peers(device, 1).get(0));
        long before = provider.creates.get();
        // Beyond the GID table (or, for tables longer than the 8-bit field, beyond the field).
        IllegalArgumentException range = assertThrows(IllegalArgumentException.class, () -> cache.acquire(pd,
                base.toBuilder().sgidIndex(tableLength <= 255 ? tableLength : 256).build()));
        assertTrue(range.getMessage().startsWith("sgid_index: "), range.getMessage());
        assertEquals(before, provider.creates.get(), "out of range never reaches the kernel");
        // In range but an empty slot of the table: the kernel refuses, and the refusal is typed.
        int empty = -1;
        for (int i = Math.min(255, tableLength - 1); i > gidIndex && empty < 0; i--) {
            try {
                if (device.gid(1, i).isZero()) {
                    empty = i;
                }
            } catch (VerbsException emptySlot) {
                empty = i;
            }
        }
        Assumptions.assumeTrue(empty >= 0, "no empty GID slot below 256");
        int index = empty;
        VerbsException e = assertThrows(VerbsException.class,
                () -> cache.acquire(pd, base.toBuilder().sgidIndex(index).build()));
        assertNotEquals(Errno.UNKNOWN, e.errno(), e.getMessage());
        NativeDevice.figure("AH from the empty GID slot " + index + ": " + e.getMessage());
        assertEquals(0, cache.inspection().liveEntries());
        assertEquals(0, cache.inspection().liveHandles());
    }

    @Test
    void anAhOnADeallocatedPdIsRefusedWithoutReachingTheKernel() {
        ProtectionDomain gone = device.allocatePd();
        gone.close();
        long before = provider.creates.get();
        assertThrows(IllegalStateException.class, () -> cache.acquire(gone, peer(NativeDevice.peers(device, 1).get(0))));
        assertThrows(IllegalStateException.class, () -> gone.createAh(peer(NativeDevice.peers(device, 1).get(0))));
        assertEquals(before, provider.creates.get());
    }

    @Test
    void aPdWithAnAhIsBusyInTheKernelToo() {
        ProtectionDomain other = device.allocatePd();
        HardwareAddressHandle ah = other.createAh(peer(NativeDevice.peers(device, 1).get(0)));
        assertEquals(Errno.EBUSY, assertThrows(VerbsException.class, other::close).errno());
        ah.destroy();
        other.close();
    }

    @Test
    void tenThousandDatagramsUpToThePathMtuThroughCachedAhs() {
        int second = secondIpv4Gid();
        Assumptions.assumeTrue(second >= 0 || !NativeDevice.inVm(), "needs a second local GID");
        UdEndpoint.Options options = UdEndpoint.Options.defaults().withSgidIndex(gidIndex);
        try (UdEndpoint a = UdEndpoint.open(pd, cache, options);
             UdEndpoint b = UdEndpoint.open(pd, cache, second >= 0 ? options.withSgidIndex(second) : options)) {
            int mtu = a.maxMessageSize();
            long t0 = System.nanoTime();
            try (AddressHandle toB = cache.acquire(pd, peer(b.address().gid()))) {
                for (int i = 0; i < 10_000; i++) {
                    int size = 1 + (i * 97) % mtu;
                    byte[] sent = new byte[size];
                    for (int j = 0; j < size; j++) {
                        sent[j] = (byte) (i + j * 3);
                    }
                    a.send(toB, b.address(), ByteBuffer.wrap(sent));
                    Datagram d = b.receive(30, TimeUnit.SECONDS);
                    assertNotNull(d, "datagram " + i + " of " + size + " bytes");
                    assertArrayEquals(sent, d.payload(), "payload " + i);
                    assertEquals(a.address().qpn(), d.sourceQpn());
                    assertEquals(a.address().gid(), d.sourceGid());
                }
                assertTrue(a.flush(30, TimeUnit.SECONDS));
            }
            NativeDevice.figure(String.format("UD on %s: 10,000 datagrams of 1..%d bytes verified in %.1f s",
                    device.name(), mtu, (System.nanoTime() - t0) / 1e9));
        }
        assertEquals(1, provider.creates.get(), "one AH for 10,000 sends");
    }

    @Test
    void aServerAnswersSixteenClientsThroughSixteenReturnPathAhs() {
        String clientIps = System.getenv("EFA_AH_VM_CLIENT_IPS");
        Assumptions.assumeTrue(clientIps != null, "needs 16 local GIDs (the VM's client addresses)");
        UdEndpoint.Options options = UdEndpoint.Options.defaults().withSgidIndex(gidIndex).withDepths(32, 64);
        List<UdEndpoint> clients = new ArrayList<>();
        List<AddressHandle> toServer = new ArrayList<>();
        try (UdEndpoint server = UdEndpoint.open(pd, cache, options)) {
            try {
                for (String ip : clientIps.trim().split("\\s+")) {
                    int index = NativeDevice.indexOf(device, 1, Gid.parse("::ffff:" + ip));
                    assertTrue(index >= 0, "GID of " + ip);
                    UdEndpoint c = UdEndpoint.open(pd, cache, options.withSgidIndex(index));
                    clients.add(c);
                    toServer.add(cache.acquire(pd, AddressHandleAttributes.builder().dgid(server.address().gid())
                            .sgidIndex(index).build()));
                }
                assertEquals(16, clients.size());
                long before = provider.creates.get();
                for (int round = 0; round < 10; round++) {
                    for (int c = 0; c < 16; c++) {
                        clients.get(c).send(toServer.get(c), server.address(), ByteBuffer.wrap(new byte[] {(byte) c, (byte) round}));
                    }
                    for (int i = 0; i < 16; i++) {
                        Datagram d = server.receive(30, TimeUnit.SECONDS);
                        assertNotNull(d, "round " + round);
                        server.reply(d, ByteBuffer.wrap(new byte[] {d.payload()[0], d.payload()[1], 7}));
                    }
                    for (int c = 0; c < 16; c++) {
                        Datagram answer = clients.get(c).receive(30, TimeUnit.SECONDS);
                        assertNotNull(answer, "client " + c + " round " + round);
                        assertArrayEquals(new byte[] {(byte) c, (byte) round, 7}, answer.payload());
                    }
                }
                assertEquals(16, provider.creates.get() - before, "16 return-path AHs for 160 replies");
                assertTrue(server.flush(30, TimeUnit.SECONDS));
            } finally {
                toServer.forEach(AddressHandle::close);
                clients.forEach(UdEndpoint::close);
            }
        }
    }

    @Test
    void efaReportsAStableAhnAndTheCacheKeepsCreatesToDistinctGids() {
        Assumptions.assumeTrue(device.attributes().vendorId() == DeviceAttributes.AMAZON_VENDOR_ID,
                "EFA-only: vendor id is 0x" + Integer.toHexString(device.attributes().vendorId()) + ", not 0x1d0f");
        List<Gid> peers = NativeDevice.peers(device, 64);
        List<AddressHandle> handles = new ArrayList<>();
        for (int r = 0; r < 3; r++) {
            for (Gid g : peers) {
                handles.add(cache.acquire(pd, AddressHandleAttributes.forGid(g)));
            }
        }
        assertEquals(peers.size(), provider.creates.get());
        for (int i = 0; i < peers.size(); i++) {
            int ahn = handles.get(i).ahn();
            assertTrue(ahn >= 0 && ahn <= 0xFFFF, "AHN " + ahn);
            assertEquals(ahn, handles.get(i + peers.size()).ahn());
            assertEquals(ahn, handles.get(i).ahn(), "stable while live");
        }
        handles.forEach(AddressHandle::close);
        // Two native creates for one (PD, GID), without the cache: the same AHN with the driver's
        // AH cache, a refusal on new hardware without it, a second AHN on older hardware.
        HardwareAddressHandle first = pd.createAh(AddressHandleAttributes.forGid(peers.get(0)));
        try {
            HardwareAddressHandle second = pd.createAh(AddressHandleAttributes.forGid(peers.get(0)));
            NativeDevice.figure("EFA duplicate create: AHN " + first.ahn() + " then " + second.ahn()
                    + (first.ahn() == second.ahn() ? " (driver AH cache)" : " (legacy device)"));
            second.destroy();
        } catch (VerbsException e) {
            assertEquals(Errno.EINVAL, e.errno(), e.getMessage());
            NativeDevice.figure("EFA duplicate create refused: " + e.getMessage() + " (no driver AH cache)");
        } finally {
            first.destroy();
        }
    }
}
