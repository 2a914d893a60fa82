package org.efaah.roce;

import org.efaah.verbs.Device;
import org.efaah.verbs.ForwardingVerbsProvider;
import org.efaah.verbs.Gid;
import org.efaah.verbs.spi.VerbsProvider;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockNetwork;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 20 items 1 and 2, the watcher's side, on the mock's network: what each link and neighbour change
 * means for a RoCE port, the one reader per provider, its stop, and the setting.
 */
class NetworkWatcherTest {
    private static final Gid PEER = Gid.parse("::ffff:10.9.1.250");
    private static final Gid OTHER = Gid.parse("::ffff:10.9.1.249");

    @AfterEach
    void clearProperty() {
        System.clearProperty(NetworkWatcher.PROPERTY);
    }

    private static MockVerbsProvider roce(int devices) {
        return new MockVerbsProvider(MockConfig.builder().efa(false).deviceCount(devices).build());
    }

    private static NetworkEvent next(BlockingQueue<NetworkEvent> events) throws InterruptedException {
        NetworkEvent e = events.poll(10, TimeUnit.SECONDS);
        assertNotNull(e, "no network event within 10 s");
        return e;
    }

    private static boolean readerThreadAlive() {
        return Thread.getAllStackTraces().keySet().stream().anyMatch(t -> t.getName().equals("efa-ah-network") && t.isAlive());
    }

    @Test
    void eachChangeThatMakesAhsStaleIsHeardOnItsPortAndTheOthersAreNot() throws Exception {
        MockVerbsProvider mock = roce(1);
        MockNetwork net = mock.network();
        net.setNeighbour(0, PEER, "02:00:0a:09:01:fa");
        net.setNeighbour(0, OTHER, "02:00:0a:09:01:f9");
        BlockingQueue<NetworkEvent> events = new LinkedBlockingQueue<>();
        try (Device device = Device.openFirst(mock)) {
            RoceNetwork.subscribe(device, events::add);
            NetworkWatchers.awaitTablesRead(mock, 10);
            assertTrue(events.isEmpty(), "reading the tables is no change: " + events);

            net.setNeighbour(0, PEER, "02:00:0a:09:ff:fa");
            NetworkEvent moved = next(events);
            assertEquals(NetworkEvent.Kind.NEIGHBOUR_CHANGED, moved.kind());
            assertEquals(PEER, moved.dgid());
            assertEquals(1, moved.portNum());
            assertEquals(MockNetwork.ifindex(0), moved.netdev());
            assertTrue(moved.device() == device);
            assertEquals("lladdr 02:00:0a:09:01:fa -> 02:00:0a:09:ff:fa", moved.detail());

            // A refresh with the same MAC means nothing: the next event heard is the deletion after it.
            net.setNeighbour(0, PEER, "02:00:0a:09:ff:fa");
            assertTrue(net.deleteNeighbour(0, OTHER));
            NetworkEvent deleted = next(events);
            assertEquals(NetworkEvent.Kind.NEIGHBOUR_DELETED, deleted.kind());
            assertEquals(OTHER, deleted.dgid());

            net.setLink(0, 9000, true);
            NetworkEvent mtu = next(events);
            assertEquals(NetworkEvent.Kind.NETDEV_CHANGED, mtu.kind());
            assertNull(mtu.dgid());
            assertEquals("mocketh0 mtu 1500 -> 9000", mtu.detail());
            net.setLink(0, 9000, false);
            assertEquals("mocketh0 down", next(events).detail());
            // Coming up again changes no address: nothing; the lost notifications after it are heard.
            net.setLink(0, 9000, true);
            ch.qos.logback.classic.Logger log = (ch.qos.logback.classic.Logger) org.slf4j.LoggerFactory
                    .getLogger(RoceNetwork.class);
            ch.qos.logback.core.read.ListAppender<ch.qos.logback.classic.spi.ILoggingEvent> warnings =
                    new ch.qos.logback.core.read.ListAppender<>();
            warnings.start();
            log.addAppender(warnings);
            log.setAdditive(false);
            try {
                net.loseNotifications();
                NetworkEvent resync = next(events);
                assertEquals(NetworkEvent.Kind.RESYNC, resync.kind());
                assertEquals(1, resync.portNum());
            } finally {
                log.detachAppender(warnings);
                log.setAdditive(true);
            }
            assertEquals(1, warnings.list.size(), warnings.list.toString());
            assertTrue(warnings.list.get(0).getFormattedMessage().startsWith("network notifications were lost"));
            // After a loss the tables are read again; a change after that is judged against them.
            NetworkWatchers.awaitTablesRead(mock, 10);
            net.setNeighbour(0, PEER, "02:00:0a:09:ee:fa");
            assertEquals("lladdr 02:00:0a:09:ff:fa -> 02:00:0a:09:ee:fa", next(events).detail());
            assertTrue(events.isEmpty(), events.toString());
        }
    }

    @Test
    void aChangeBeforeTheTablesAreReadCountsAsAChange() throws Exception {
        MockVerbsProvider mock = roce(1);
        BlockingQueue<NetworkEvent> events = new LinkedBlockingQueue<>();
        try (Device device = Device.openFirst(mock)) {
            // The channel opens at subscribe; the reader asks for the dumps only once its thread runs,
            // so this notification is read before the tables: an AH may have resolved the entry's old MAC.
            synchronized (mock.network()) {
                RoceNetwork.subscribe(device, events::add);
                mock.network().setNeighbour(0, PEER, "02:00:0a:09:01:fa");
            }
            NetworkEvent e = next(events);
            assertEquals(NetworkEvent.Kind.NEIGHBOUR_CHANGED, e.kind());
            assertTrue(e.detail().endsWith("changed while the neighbours were read"), e.detail());
        }
    }

    @Test
    void oneReaderServesEveryDeviceAndStopsWithTheLastPromptly() throws Exception {
        MockVerbsProvider mock = roce(2);
        Device a = Device.open(mock, "roce_0");
        Device b = Device.open(mock, "roce_1");
        BlockingQueue<NetworkEvent> onA = new LinkedBlockingQueue<>();
        BlockingQueue<NetworkEvent> onB = new LinkedBlockingQueue<>();
        RoceNetwork.subscribe(a, onA::add);
        RoceNetwork.subscribe(b, onB::add);
        assertEquals(1, mock.network().openChannels(), "one channel, one reader, for both devices");
        assertEquals(1, Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().equals("efa-ah-network")).count());
        NetworkWatchers.awaitTablesRead(mock, 10);
        mock.network().setLink(1, 4000, true);
        assertEquals(b, next(onB).device());
        mock.network().setLink(0, 4000, true);
        assertEquals(a, next(onA).device());
        assertTrue(onB.isEmpty(), "roce_0's netdev is not roce_1's: " + onB);

        // The reader waits with no event to come; each close returns at once, the last stops it.
        assertTimeoutPreemptively(Duration.ofSeconds(3), () -> {
            a.close();
            assertTrue(NetworkWatchers.running(mock), "roce_1 still listens");
            b.close();
        });
        assertFalse(NetworkWatchers.running(mock));
        assertFalse(readerThreadAlive());
        assertEquals(0, mock.network().openChannels(), "the channel is freed");
    }

    @Test
    void closingTheDeviceEndsItsSubscriptionBeforeTheContextGoes() throws Exception {
        MockVerbsProvider mock = roce(1);
        java.util.concurrent.atomic.AtomicInteger channelsAtContextClose = new java.util.concurrent.atomic.AtomicInteger(-1);
        VerbsProvider provider = new ForwardingVerbsProvider(mock) {
            @Override
            public void closeDevice(long context) {
                channelsAtContextClose.set(mock.network().openChannels());
                super.closeDevice(context);
            }
        };
        Device device = Device.openFirst(provider);
        RoceNetwork.Subscription subscription = RoceNetwork.subscribe(device, e -> { });
        NetworkWatchers.awaitTablesRead(provider, 10);
        assertTrue(subscription.health().isPresent());
        device.close();
        assertEquals(0, channelsAtContextClose.get(), "the reader had freed its channel when ibv_close_device ran");
        assertFalse(NetworkWatchers.watches(device), "the closed device is in no watcher");
        assertFalse(NetworkWatchers.running(provider));
        assertTrue(subscription.health().isEmpty());
        subscription.close(); // after the device's close: harmless
        assertThrows(IllegalStateException.class, () -> RoceNetwork.subscribe(device, e -> { }));
    }

    @Test
    void providersOfOneNetworkShareOneReader() throws Exception {
        MockVerbsProvider mock = roce(1);
        VerbsProvider first = new ForwardingVerbsProvider(mock) { };
        VerbsProvider second = new ForwardingVerbsProvider(mock) { };
        BlockingQueue<NetworkEvent> onFirst = new LinkedBlockingQueue<>();
        BlockingQueue<NetworkEvent> onSecond = new LinkedBlockingQueue<>();
        try (Device a = Device.openFirst(first); Device b = Device.openFirst(second)) {
            RoceNetwork.subscribe(a, onFirst::add);
            RoceNetwork.subscribe(b, onSecond::add);
            assertEquals(1, mock.network().openChannels(), "one reader for the two providers of one network");
            NetworkWatchers.awaitTablesRead(second, 10);
            mock.network().setLink(0, 1400, true);
            assertEquals(a, next(onFirst).device());
            assertEquals(b, next(onSecond).device());
        }
        assertEquals(0, mock.network().openChannels());
    }

    @Test
    void removingTheLastListenerStopsTheReaderAndANewOneStartsItAgain() throws Exception {
        MockVerbsProvider mock = roce(1);
        try (Device device = Device.openFirst(mock)) {
            RoceNetwork.Subscription subscription = RoceNetwork.subscribe(device, e -> { });
            assertTrue(NetworkWatchers.watches(device));
            subscription.close();
            assertFalse(NetworkWatchers.watches(device));
            assertFalse(NetworkWatchers.running(mock));
            assertEquals(0, mock.network().openChannels());
            BlockingQueue<NetworkEvent> events = new LinkedBlockingQueue<>();
            RoceNetwork.subscribe(device, events::add);
            NetworkWatchers.awaitTablesRead(mock, 10);
            mock.network().setLink(0, 1400, true);
            assertEquals(NetworkEvent.Kind.NETDEV_CHANGED, next(events).kind());
        }
    }

    @Test
    void theSettingIsThePropertyThenTheEnvironmentThenOn() {
        assertTrue(NetworkWatcher.enabled(null, null));
        assertFalse(NetworkWatcher.enabled(null, "FALSE"));
        assertTrue(NetworkWatcher.enabled("true", "false"), "the property comes first");
        assertFalse(NetworkWatcher.enabled(" false ", null));
        assertTrue(NetworkWatcher.enabled("", "true"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> NetworkWatcher.enabled(null, "0"));
        assertEquals("EFA_AH_NETWORK_WATCH: '0' is not a choice; valid true, false", e.getMessage());
    }

    @Test
    void neverStartedForEfaNorWhenTurnedOff() throws Exception {
        MockVerbsProvider efa = new MockVerbsProvider();
        try (Device device = Device.openFirst(efa)) {
            RoceNetwork.subscribe(device, e -> { });
            assertFalse(NetworkWatchers.watches(device), "EFA resolves nothing on the host");
            assertEquals(0, efa.network().openChannels());
        }
        MockVerbsProvider mock = roce(1);
        System.setProperty(NetworkWatcher.PROPERTY, "false");
        try (Device device = Device.openFirst(mock)) {
            RoceNetwork.subscribe(device, e -> { });
            assertFalse(NetworkWatchers.watches(device));
            assertEquals(0, mock.network().openChannels());
            System.setProperty(NetworkWatcher.PROPERTY, "maybe");
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> RoceNetwork.subscribe(device, x -> { }));
            assertEquals("efaah.network.watch: 'maybe' is not a choice; valid true, false", e.getMessage());
        }
    }
}
