package org.efaah.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.efaah.roce.NetworkEvent;
import org.efaah.roce.NetworkWatchers;
import org.efaah.roce.RoceNetwork;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.Gid;
import org.efaah.verbs.HardwareAddressHandle;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.mock.DuplicatePolicy;
import org.efaah.verbs.mock.MockNetwork;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Issue 20 item 2 on the mock's RoCE device: the cache follows the network by itself. A
 * neighbour's new MAC or deletion invalidates the AHs to it (in every PD), the netdev's MTU or
 * link those of the port, a refresh with the same MAC nothing; the next acquire creates one AH
 * with the current MAC. Before issue 20 the cache revived the old AH (no invalidation came).
 */
@ExtendWith(CacheInvariants.class)
class NetworkInvalidationTest {
    private static final Gid PEER = Gid.parse("::ffff:10.9.1.250");
    private static final Gid OTHER = Gid.parse("::ffff:10.9.1.249");

    private MockVerbsProvider mock;
    private MockNetwork net;
    private Device device;
    private ProtectionDomain pd;
    private ProtectionDomain pd2;
    private AddressHandleCache cache;
    /** Heard after the cache's listener (added by its first acquire): what is here, the cache has done. */
    private final BlockingQueue<NetworkEvent> heard = new LinkedBlockingQueue<>();

    @BeforeEach
    void open() throws Exception {
        // rxe makes a new AH per ibv_create_ah, whatever AHs to the destination exist (no duplicate refusal).
        mock = new MockVerbsProvider(MockFixture.strictDevice().efa(false).duplicatePolicy(DuplicatePolicy.LEGACY).build());
        net = mock.network();
        net.setNeighbour(0, PEER, "02:00:0a:09:01:fa");
        net.setNeighbour(0, OTHER, "02:00:0a:09:01:f9");
        device = Device.openFirst(mock);
        pd = device.allocatePd();
        pd2 = device.allocatePd();
        cache = AddressHandleCache.builder().leakDetection(LeakDetection.PARANOID)
                .retention(RetentionPolicy.idle(Duration.ofHours(1), 64)).build();
    }

    @AfterEach
    void close() {
        cache.close();
        pd.close();
        pd2.close();
        device.close();
    }

    private static AddressHandleAttributes peer(Gid gid) {
        return AddressHandleAttributes.builder().dgid(gid).sgidIndex(0).build();
    }

    /** Acquires and closes (the AH stays retained); returns its hardware AH. */
    private HardwareAddressHandle retain(ProtectionDomain in, Gid gid) {
        try (AddressHandle h = cache.acquire(in, peer(gid))) {
            return h.hardware();
        }
    }

    private void listenAfterTheCache() throws InterruptedException {
        RoceNetwork.subscribe(device, heard::add);
        NetworkWatchers.awaitTablesRead(mock, 10);
    }

    private NetworkEvent next() throws InterruptedException {
        NetworkEvent e = heard.poll(10, TimeUnit.SECONDS);
        assertNotNull(e, "no network event within 10 s");
        return e;
    }

    @Test
    void aNeighboursNewMacMakesTheNextAcquireCreateOneAhWithIt() throws Exception {
        HardwareAddressHandle old = retain(pd, PEER);
        HardwareAddressHandle oldInPd2 = retain(pd2, PEER);
        HardwareAddressHandle other = retain(pd, OTHER);
        assertEquals("02:00:0a:09:01:fa", net.lladdrOf(old.nativeHandle()));
        listenAfterTheCache();
        CacheStats before = cache.stats();
        long creates = mock.counters().hardwareCreates();

        net.setNeighbour(0, PEER, "02:00:0a:09:ff:fa");
        assertEquals(NetworkEvent.Kind.NEIGHBOUR_CHANGED, next().kind());
        assertTrue(old.isDestroyed() && oldInPd2.isDestroyed(), "the retained AHs to the peer, in both PDs");
        try (AddressHandle fresh = cache.acquire(pd, peer(PEER)); AddressHandle b = cache.acquire(pd, peer(OTHER))) {
            assertNotSame(old, fresh.hardware());
            assertEquals("02:00:0a:09:ff:fa", net.lladdrOf(fresh.nativeHandle()), "made with the new MAC");
            assertSame(other, b.hardware(), "another peer's AH is not invalidated");
        }
        CacheStats delta = cache.stats().minus(before);
        assertEquals(1, delta.hardwareCreates(), "exactly one fresh AH");
        assertEquals(creates + 1, mock.counters().hardwareCreates());
        assertEquals(2, delta.invalidated());
        assertEquals(2, delta.networkInvalidated());
        assertEquals(2, delta.destroysBy(RemovalCause.INVALIDATED));
    }

    @Test
    void aRefreshWithTheSameMacInvalidatesNothingAndADeletionDoes() throws Exception {
        HardwareAddressHandle kept = retain(pd, PEER);
        HardwareAddressHandle other = retain(pd, OTHER);
        listenAfterTheCache();
        CacheStats before = cache.stats();
        net.setNeighbour(0, PEER, "02:00:0a:09:01:fa"); // same MAC: e.g. REACHABLE again after STALE
        assertTrue(net.deleteNeighbour(0, OTHER));
        NetworkEvent e = next();
        assertEquals(NetworkEvent.Kind.NEIGHBOUR_DELETED, e.kind(), "the refresh before it was not an event");
        assertTrue(heard.isEmpty());
        assertTrue(other.isDestroyed());
        try (AddressHandle h = cache.acquire(pd, peer(PEER))) {
            assertSame(kept, h.hardware(), "a refresh keeps the AH");
        }
        CacheStats delta = cache.stats().minus(before);
        assertEquals(0, delta.hardwareCreates());
        assertEquals(1, delta.networkInvalidated());
    }

    @Test
    void theNetdevsMtuOrLinkDownInvalidatesThePortWhileHeldHandlesKeepTheirAh() throws Exception {
        HardwareAddressHandle retained = retain(pd, OTHER);
        AddressHandle held = cache.acquire(pd, peer(PEER));
        HardwareAddressHandle heldHw = held.hardware();
        listenAfterTheCache();
        CacheStats before = cache.stats();
        net.setLink(0, 9000, true);
        assertEquals(NetworkEvent.Kind.NETDEV_CHANGED, next().kind());
        assertTrue(retained.isDestroyed());
        assertSame(heldHw, held.hardware(), "a held handle keeps its AH");
        assertFalse(heldHw.isDestroyed());
        try (AddressHandle fresh = cache.acquire(pd, peer(PEER))) {
            assertNotSame(heldHw, fresh.hardware());
        }
        held.close();
        assertTrue(heldHw.isDestroyed(), "destroyed at its last close");
        net.setLink(0, 9000, false);
        assertEquals("mocketh0 down", next().detail());
        CacheStats delta = cache.stats().minus(before);
        assertEquals(3, delta.networkInvalidated(), "2 at the MTU change, the fresh one at the link down");
        assertEquals(delta.invalidated(), delta.networkInvalidated());
    }

    @Test
    void closingTheCacheLeavesTheNetworkReader() throws Exception {
        retain(pd, PEER);
        assertTrue(NetworkWatchers.watches(device));
        cache.close();
        assertFalse(NetworkWatchers.watches(device), "the cache was the device's only network subscription");
        assertFalse(NetworkWatchers.running(mock));
        assertEquals(0, net.openChannels());
    }

    @Test
    void anEfaDeviceNeverStartsTheReader() {
        try (MockFixture f = new MockFixture()) {
            f.cache.acquire(f.pd, MockFixture.peer(1)).close();
            assertFalse(NetworkWatchers.watches(f.device));
            assertEquals(0, f.mock.network().openChannels());
        }
    }
}
