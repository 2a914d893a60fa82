package org.efaah.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.CacheStats;
import org.efaah.cache.LeakDetection;
import org.efaah.cache.RemovalCause;
import org.efaah.cache.RetentionPolicy;
import org.efaah.fixture.CountingProvider;
import org.efaah.ud.UdEndpoint;
import org.efaah.roce.NetworkEvent;
import org.efaah.roce.NetworkWatchers;
import org.efaah.roce.RoceNetwork;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.Gid;
import org.efaah.verbs.HardwareAddressHandle;
import org.efaah.verbs.ProtectionDomain;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Issue 20 done-when, in the soft-RoCE VM: the cache follows the kernel's neighbour table and
 * veth0 through the real rtnetlink, with no call from the test. {@code ip neigh replace} of a
 * peer to a new MAC invalidates its AH, the next acquire makes exactly one {@code ibv_create_ah}
 * whose send goes out; a refresh with the same MAC makes none; {@code ip link set veth0 mtu}
 * invalidates port 1. Needs root and the VM's veth0 (scripts/rxe-vm.d/guest.sh); skips elsewhere.
 */
@Tag("native")
class NetworkFollowingNativeTest {
    private static final String NETDEV = "veth0";

    /** An event, when the listener after the cache's heard it, and the cache's network-invalidated count then. */
    record Heard(NetworkEvent event, long nanos, long networkInvalidated) {
    }

    private static void assumeVm() {
        NativeDevice.provider();
        Assumptions.assumeTrue(NativeDevice.inVm(), "changes the VM's neighbours and veth0: runs only in scripts/rxe-vm");
    }

    private static AddressHandleCache retainingCache() {
        return AddressHandleCache.builder().leakDetection(LeakDetection.PARANOID)
                .retention(RetentionPolicy.idle(Duration.ofHours(1), 1024)).build();
    }

    private static AddressHandleAttributes peer(Gid gid) {
        return AddressHandleAttributes.builder().dgid(gid).sgidIndex(NativeDevice.gidIndex()).build();
    }

    /** Call after the cache's first acquire on the device: what this listener hears, the cache has handled. */
    private static BlockingQueue<Heard> listen(Device device, AddressHandleCache cache) {
        BlockingQueue<Heard> log = new LinkedBlockingQueue<>();
        RoceNetwork.subscribe(device, e -> log.add(new Heard(e, System.nanoTime(), cache.stats().networkInvalidated())));
        return log;
    }

    private static Heard await(BlockingQueue<Heard> log, Predicate<NetworkEvent> which, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        for (;;) {
            Heard h = log.poll(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            assertNotNull(h, what + " not heard within 20 s");
            if (which.test(h.event())) {
                return h;
            }
        }
    }

    private static String ip(Gid gid) {
        byte[] b = gid.toBytes();
        return (b[12] & 0xff) + "." + (b[13] & 0xff) + "." + (b[14] & 0xff) + "." + (b[15] & 0xff);
    }

    private static String macOf(Gid gid) { // as scripts/rxe-vm's neigh.batch sets it
        byte[] b = gid.toBytes();
        return String.format("02:00:0a:09:%02x:%02x", b[14] & 0xff, b[15] & 0xff);
    }

    private static long neigh(Gid gid, String mac, String nud) throws Exception {
        return DeviceEventsNativeTest.run("ip", "neigh", "replace", ip(gid), "lladdr", mac, "dev", NETDEV, "nud", nud);
    }

    @Test
    void aNeighboursNewMacIsFollowedWithoutTheApplicationAndARefreshIsNot() throws Exception {
        assumeVm();
        List<Gid> peers = NativeDevice.peers(500);
        Gid moved = peers.get(499); // ::ffff:10.9.2.250
        Gid other = peers.get(498);
        String newMac = "02:00:0a:09:ee:fa";
        CountingProvider provider = new CountingProvider(NativeDevice.provider());
        Device device = NativeDevice.open(provider);
        ProtectionDomain pd = device.allocatePd();
        AddressHandleCache cache = retainingCache();
        UdEndpoint endpoint = UdEndpoint.open(pd, cache, UdEndpoint.Options.defaults().withSgidIndex(NativeDevice.gidIndex()));
        boolean replaced = false;
        try {
            HardwareAddressHandle oldAh;
            HardwareAddressHandle otherAh;
            try (AddressHandle a = cache.acquire(pd, peer(moved)); AddressHandle b = cache.acquire(pd, peer(other))) {
                oldAh = a.hardware();
                otherAh = b.hardware();
            }
            assertEquals(2, cache.inspection().retainedEntries());
            BlockingQueue<Heard> log = listen(device, cache);
            long t0 = System.nanoTime();
            NetworkWatchers.awaitTablesRead(provider, 60);
            double readMillis = (System.nanoTime() - t0) / 1e6;
            CacheStats before = cache.stats();
            long creates = provider.creates.get();

            long start = System.nanoTime();
            long ipNanos = neigh(moved, newMac, "permanent");
            replaced = true;
            Heard changed = await(log, e -> e.kind() == NetworkEvent.Kind.NEIGHBOUR_CHANGED && e.dgid().equals(moved),
                    "the new MAC of " + ip(moved));
            assertEquals(1, changed.event().portNum());
            assertEquals("lladdr " + macOf(moved) + " -> " + newMac, changed.event().detail());
            assertEquals(before.networkInvalidated() + 1, changed.networkInvalidated(), "the moved peer's retained AH");
            assertTrue(oldAh.isDestroyed(), "the retained AH to the moved peer, destroyed at once");

            HardwareAddressHandle freshAh;
            try (AddressHandle fresh = cache.acquire(pd, peer(moved)); AddressHandle b = cache.acquire(pd, peer(other))) {
                freshAh = fresh.hardware();
                assertNotSame(oldAh, freshAh);
                assertSame(otherAh, b.hardware(), "another peer's AH is not invalidated");
                endpoint.send(fresh, 1, UdEndpoint.DEFAULT_QKEY, ByteBuffer.wrap(new byte[16]));
                assertTrue(endpoint.flush(30, TimeUnit.SECONDS), "a send through the fresh AH completes");
            }
            CacheStats delta = cache.stats().minus(before);
            assertEquals(1, delta.hardwareCreates(), "exactly one fresh AH");
            assertEquals(creates + 1, provider.creates.get(), "exactly one ibv_create_ah call");
            assertEquals(1, delta.invalidated());
            assertEquals(1, delta.networkInvalidated());
            assertEquals(1, delta.destroysBy(RemovalCause.INVALIDATED));
            long ipReturned = start + ipNanos;
            NativeDevice.figure(String.format("AH cache on %s follows the network: `ip neigh replace %s lladdr %s` ->"
                            + " RTM_NEWNEIGH -> the peer's retained AH invalidated %.1f ms after the command's start, %.1f ms"
                            + " after its return (negative: before; the command itself, exec included, took %.1f ms); next"
                            + " acquires of it and of another peer made %d hardware create(s) (%d ibv_create_ah call(s)), a UD"
                            + " send through the fresh AH completed; no call from the test (tables of %s read in %.0f ms)",
                    device.name(), ip(moved), newMac, (changed.nanos() - start) / 1e6, (changed.nanos() - ipReturned) / 1e6,
                    ipNanos / 1e6, delta.hardwareCreates(), provider.creates.get() - creates, NETDEV, readMillis));

            // The same MAC with another state (REACHABLE, then PERMANENT again): notifications, no change.
            CacheStats beforeRefresh = cache.stats();
            neigh(moved, newMac, "reachable");
            neigh(moved, newMac, "permanent");
            // A change of another peer after them: once it is heard, the refreshes were read too.
            neigh(other, "02:00:0a:09:ee:f9", "permanent");
            Heard sentinel = await(log, e -> e.dgid() != null && e.dgid().equals(other), "the other peer's change");
            assertEquals(NetworkEvent.Kind.NEIGHBOUR_CHANGED, sentinel.event().kind());
            try (AddressHandle again = cache.acquire(pd, peer(moved))) {
                assertSame(freshAh, again.hardware(), "a refresh with the same MAC keeps the AH");
            }
            CacheStats refresh = cache.stats().minus(beforeRefresh);
            assertEquals(0, refresh.hardwareCreates(), "no new AH for the refreshes");
            assertEquals(1, refresh.networkInvalidated(), "only the other peer's AH");
            assertEquals(creates + 1, provider.creates.get());
            NativeDevice.figure(String.format("AH cache on %s: `ip neigh replace %s lladdr %s nud reachable` then `nud"
                    + " permanent` (same MAC): %d new AHs, %d invalidated", device.name(), ip(moved), newMac,
                    refresh.hardwareCreates(), refresh.networkInvalidated() - 1));
        } finally {
            endpoint.close();
            cache.close();
            pd.close();
            device.close();
            if (replaced) {
                neigh(moved, macOf(moved), "permanent");
                neigh(other, macOf(other), "permanent");
            }
        }
    }

    @Test
    void anMtuChangeOfTheNetdevInvalidatesPortOneWhileHeldHandlesKeepTheirAhs() throws Exception {
        assumeVm();
        List<Gid> peers = NativeDevice.peers(8);
        CountingProvider provider = new CountingProvider(NativeDevice.provider());
        Device device = NativeDevice.open(provider);
        ProtectionDomain pd = device.allocatePd();
        AddressHandleCache cache = retainingCache();
        String mtu = Files.readString(Path.of("/sys/class/net", NETDEV, "mtu")).trim();
        boolean changed = false;
        try {
            List<AddressHandle> held = new ArrayList<>();
            for (Gid g : peers.subList(0, 4)) {
                held.add(cache.acquire(pd, peer(g)));
            }
            List<HardwareAddressHandle> retained = new ArrayList<>();
            for (Gid g : peers.subList(4, 8)) {
                try (AddressHandle h = cache.acquire(pd, peer(g))) {
                    retained.add(h.hardware());
                }
            }
            BlockingQueue<Heard> log = listen(device, cache);
            NetworkWatchers.awaitTablesRead(provider, 60);
            CacheStats before = cache.stats();
            long start = System.nanoTime();
            long ipNanos = DeviceEventsNativeTest.run("ip", "link", "set", NETDEV, "mtu", "1400");
            changed = true;
            Heard heard = await(log, e -> e.kind() == NetworkEvent.Kind.NETDEV_CHANGED, "the MTU change of " + NETDEV);
            assertEquals(1, heard.event().portNum());
            assertTrue(heard.event().detail().contains("mtu " + mtu + " -> 1400"), heard.event().detail());
            CacheStats delta = cache.stats().minus(before);
            assertEquals(8, delta.networkInvalidated(), "port 1's 4 held and 4 retained AHs");
            retained.forEach(hw -> assertTrue(hw.isDestroyed(), "retained " + hw));
            for (AddressHandle h : held) {
                assertFalse(h.hardware().isDestroyed(), "a held handle keeps its AH");
            }
            long creates = provider.creates.get();
            try (AddressHandle fresh = cache.acquire(pd, peer(peers.get(0)))) {
                assertNotSame(held.get(0).hardware(), fresh.hardware());
            }
            assertEquals(creates + 1, provider.creates.get());
            held.forEach(AddressHandle::close);
            NativeDevice.figure(String.format("AH cache on %s: `ip link set %s mtu 1400` (was %s) -> RTM_NEWLINK -> port 1's"
                            + " %d AHs (4 held, 4 retained) invalidated %.1f ms after the command's start, %.1f ms after its"
                            + " return (the command took %.1f ms)", device.name(), NETDEV, mtu, delta.networkInvalidated(),
                    (heard.nanos() - start) / 1e6, (heard.nanos() - start - ipNanos) / 1e6, ipNanos / 1e6));
        } finally {
            cache.close();
            pd.close();
            device.close();
            if (changed) {
                DeviceEventsNativeTest.run("ip", "link", "set", NETDEV, "mtu", mtu);
            }
        }
    }
}
