package org.efaah.verbs;

import org.efaah.internal.BackgroundReader;
import org.efaah.verbs.spi.AsyncEvent;
import org.efaah.verbs.spi.NetworkChange;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;
import org.efaah.health.HealthCheck;
import org.efaah.health.HealthStatus;
import org.efaah.health.HealthThresholds;
import org.efaah.fixture.LogCapture;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;

/**
 * Issue 28 case 6 (kind: readers outlive errors), case 8 (an interrupted dump is retried) and the
 * false alarm of the network reader's stop from an interrupted thread: the async-event reader
 * and the network watcher, one {@link BackgroundReader} shape.
 */
class BackgroundReadersTest {
    private static final Gid PEER = Gid.parse("::ffff:10.9.1.250");

    /** The mock, with reads of events and network changes that fail while told to. */
    static final class FailingReads extends ForwardingVerbsProvider {
        final MockVerbsProvider mock;
        final AtomicBoolean failEvents = new AtomicBoolean();
        final AtomicBoolean failNetwork = new AtomicBoolean();
        /** Dumps still to be answered as interrupted (NLM_F_DUMP_INTR). */
        final AtomicInteger interruptDumps = new AtomicInteger();
        final AtomicInteger linkDumps = new AtomicInteger();

        FailingReads(MockVerbsProvider mock) {
            super(mock);
            this.mock = mock;
        }

        @Override
        public List<AsyncEvent> awaitAsyncEvents(long channel, int timeoutMillis) {
            if (failEvents.get()) {
                throw new VerbsException("ibv_get_async_event", Errno.EIO, "injected");
            }
            return super.awaitAsyncEvents(channel, timeoutMillis);
        }

        @Override
        public void requestNetworkDump(long channel, boolean links) {
            if (links) {
                linkDumps.incrementAndGet();
            }
            super.requestNetworkDump(channel, links);
        }

        @Override
        public List<NetworkChange> awaitNetworkChanges(long channel, int timeoutMillis) {
            if (failNetwork.get()) {
                throw new VerbsException("recvmsg", Errno.EIO, "injected recvmsg");
            }
            List<NetworkChange> changes = new ArrayList<>(super.awaitNetworkChanges(channel, timeoutMillis));
            for (int i = 0; i < changes.size(); i++) {
                if (changes.get(i).type() == NetworkChange.Type.DUMP_DONE && interruptDumps.getAndDecrement() > 0) {
                    changes.set(i, NetworkChange.mark(NetworkChange.Type.DUMP_INTERRUPTED));
                }
            }
            return changes;
        }
    }

    private static HealthCheck await(Device device, String check, Predicate<HealthCheck> until) throws Exception {
        HealthCheck last = null;
        for (int i = 0; i < 1000; i++) {
            last = device.health(HealthThresholds.DEFAULTS).checks().stream()
                    .filter(c -> c.name().equals(check)).findFirst().orElse(null);
            if (last != null && until.test(last)) {
                return last;
            }
            TimeUnit.MILLISECONDS.sleep(10);
        }
        throw new AssertionError(check + " never became what was awaited; last " + last);
    }

    @Test
    void theEventReaderOutlivesAFailedReadSaysDegradedWithTheCauseAndRecovers() throws Exception {
        FailingReads provider = new FailingReads(new MockVerbsProvider());
        BlockingQueue<DeviceEvent> events = new LinkedBlockingQueue<>();
        try (LogCapture log = LogCapture.of(BackgroundReader.class);
             Device device = Device.openFirst(provider)) {
            device.addEventListener(events::add);
            assertEquals(HealthStatus.UP, await(device, "event_reader", c -> true).status());
            provider.failEvents.set(true);
            HealthCheck degraded = await(device, "event_reader", c -> c.status() == HealthStatus.DEGRADED);
            assertTrue(degraded.message().contains("EIO"), degraded.message());
            assertEquals(HealthStatus.DEGRADED, device.health(HealthThresholds.DEFAULTS).status());
            provider.failEvents.set(false);
            provider.mock.raiseEvent(device.name(), DeviceEvent.Kind.PORT_ACTIVE, 1);
            DeviceEvent e = events.poll(10, TimeUnit.SECONDS);
            assertNotNull(e, "an event after the failed reads is delivered");
            assertEquals(DeviceEvent.Kind.PORT_ACTIVE, e.kind());
            await(device, "event_reader", c -> c.status() == HealthStatus.UP);
            assertEquals(1, log.messages(Level.WARN).size(), "one warning for the run of failures: "
                    + log.messages(Level.WARN));
        }
    }

    private static MockVerbsProvider roce() {
        return new MockVerbsProvider(MockConfig.builder().efa(false).deviceCount(1).build());
    }

    @Test
    void theNetworkReaderOutlivesAFailedReadResyncsAndHearsLaterChanges() throws Exception {
        FailingReads provider = new FailingReads(roce());
        provider.mock.network().setNeighbour(0, PEER, "02:00:0a:09:01:fa");
        BlockingQueue<NetworkEvent> events = new LinkedBlockingQueue<>();
        try (LogCapture log = LogCapture.of(BackgroundReader.class);
             Device device = Device.openFirst(provider)) {
            device.addNetworkListener(events::add);
            NetworkWatchers.awaitTablesRead(provider, 10);
            assertEquals(HealthStatus.UP, await(device, "network_reader", c -> true).status());
            provider.failNetwork.set(true);
            HealthCheck degraded = await(device, "network_reader", c -> c.status() == HealthStatus.DEGRADED);
            assertTrue(degraded.message().contains("EIO"), degraded.message());
            provider.failNetwork.set(false);
            NetworkEvent resync = events.poll(10, TimeUnit.SECONDS);
            assertNotNull(resync, "changes missed while failing are made up for");
            assertEquals(NetworkEvent.Kind.RESYNC, resync.kind());
            NetworkWatchers.awaitTablesRead(provider, 10);
            provider.mock.network().setNeighbour(0, PEER, "02:00:0a:09:ff:fa");
            NetworkEvent moved = events.poll(10, TimeUnit.SECONDS);
            // A further RESYNC may come first (under load the reader can fail once more before the
            // switch is seen): a resync is always allowed, the change must still follow.
            while (moved != null && moved.kind() == NetworkEvent.Kind.RESYNC) {
                moved = events.poll(10, TimeUnit.SECONDS);
            }
            assertNotNull(moved, "a neighbour change after the failure is heard");
            assertEquals(NetworkEvent.Kind.NEIGHBOUR_CHANGED, moved.kind());
            await(device, "network_reader", c -> c.status() == HealthStatus.UP);
            assertEquals(1, log.messages(Level.WARN).size(), log.messages(Level.WARN).toString());
        }
    }

    @Test
    void anInterruptedDumpIsAskedForAgain() throws Exception {
        FailingReads provider = new FailingReads(roce());
        provider.interruptDumps.set(1);
        try (Device device = Device.openFirst(provider)) {
            device.addNetworkListener(e -> { });
            NetworkWatchers.awaitTablesRead(provider, 10);
            assertEquals(2, provider.linkDumps.get(), "the interrupted link dump was asked for again");
        }
    }

    @Test
    void stoppingTheNetworkReaderFromAnInterruptedThreadRaisesNoAlarm() throws Exception {
        MockVerbsProvider mock = roce();
        for (int round = 0; round < 3; round++) {
            boolean stillInterrupted;
            try (LogCapture watcher = LogCapture.of(NetworkWatcher.class);
                 LogCapture reader = LogCapture.of(BackgroundReader.class)) {
                Device device = Device.openFirst(mock);
                device.addNetworkListener(e -> { });
                NetworkWatchers.awaitTablesRead(mock, 10);
                Thread.currentThread().interrupt();
                try {
                    device.close();
                } finally {
                    stillInterrupted = Thread.interrupted();
                }
                assertEquals(List.of(), watcher.messages(Level.ERROR));
                assertEquals(List.of(), reader.messages(Level.WARN));
            }
            assertTrue(stillInterrupted, "the caller's interrupt status is kept");
            for (int i = 0; i < 500 && NetworkWatchers.running(mock); i++) {
                TimeUnit.MILLISECONDS.sleep(10);
            }
            assertFalse(NetworkWatchers.running(mock), "the reader ended");
        }
    }
}
