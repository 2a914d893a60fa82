package org.efaah.roce;

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
import java.util.function.Supplier;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.fixture.LogCapture;
import org.efaah.health.HealthCheck;
import org.efaah.health.HealthReport;
import org.efaah.health.HealthStatus;
import org.efaah.internal.BackgroundReader;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.Errno;
import org.efaah.verbs.ForwardingVerbsProvider;
import org.efaah.verbs.Gid;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.efaah.verbs.spi.NetworkChange;
import org.junit.jupiter.api.Test;

/**
 * Issue 28 case 6 (kind: readers outlive errors), case 8 (an interrupted dump is retried) and the
 * false alarm of the network reader's stop from an interrupted thread, on the network reader (the
 * device's event reader is checked in {@code org.efaah.verbs.BackgroundReadersTest}). Its health
 * is the subscription's, and the cache's health report shows it.
 */
class NetworkReaderTest {
    private static final Gid PEER = Gid.parse("::ffff:10.9.1.250");

    /** The mock, with reads of network changes that fail while told to. */
    static final class FailingReads extends ForwardingVerbsProvider {
        final MockVerbsProvider mock;
        final AtomicBoolean failNetwork = new AtomicBoolean();
        /** Dumps still to be answered as interrupted (NLM_F_DUMP_INTR). */
        final AtomicInteger interruptDumps = new AtomicInteger();
        final AtomicInteger linkDumps = new AtomicInteger();

        FailingReads(MockVerbsProvider mock) {
            super(mock);
            this.mock = mock;
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

    /** Waits (bounded) until the check named {@code network_reader} of {@code health} is what is awaited. */
    private static HealthCheck await(Supplier<List<HealthCheck>> health, Predicate<HealthCheck> until) throws Exception {
        HealthCheck last = null;
        for (int i = 0; i < 1000; i++) {
            last = health.get().stream().filter(c -> c.name().equals("network_reader")).findFirst().orElse(null);
            if (last != null && until.test(last)) {
                return last;
            }
            TimeUnit.MILLISECONDS.sleep(10);
        }
        throw new AssertionError("network_reader never became what was awaited; last " + last);
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
            RoceNetwork.Subscription subscription = RoceNetwork.subscribe(device, events::add);
            Supplier<List<HealthCheck>> health = () -> subscription.health().stream().toList();
            NetworkWatchers.awaitTablesRead(provider, 10);
            HealthCheck up = await(health, c -> true);
            assertEquals(HealthStatus.UP, up.status());
            assertEquals(device.name(), up.subject());
            provider.failNetwork.set(true);
            HealthCheck degraded = await(health, c -> c.status() == HealthStatus.DEGRADED);
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
            await(health, c -> c.status() == HealthStatus.UP);
            assertEquals(1, log.messages(Level.WARN).size(), log.messages(Level.WARN).toString());
            subscription.close();
            assertTrue(subscription.health().isEmpty(), "an ended subscription hears no reader");
        }
    }

    @Test
    void theCachesHealthShowsTheNetworkReaderItsAhsFollow() throws Exception {
        FailingReads provider = new FailingReads(roce());
        try (LogCapture log = LogCapture.of(BackgroundReader.class);
             Device device = Device.openFirst(provider);
             ProtectionDomain pd = device.allocatePd();
             AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED).build()) {
            cache.acquire(pd, AddressHandleAttributes.builder().dgid(PEER).sgidIndex(0).build()).close();
            Supplier<List<HealthCheck>> health = () -> cache.inspection().health().checks();
            NetworkWatchers.awaitTablesRead(provider, 10);
            assertEquals(HealthStatus.UP, await(health, c -> true).status());
            provider.failNetwork.set(true);
            HealthCheck degraded = await(health, c -> c.status() == HealthStatus.DEGRADED);
            assertTrue(degraded.message().contains("EIO"), degraded.message());
            assertEquals(device.name(), degraded.subject());
            HealthReport report = cache.inspection().health();
            assertEquals(HealthStatus.DEGRADED, report.status(), report.toString());
            provider.failNetwork.set(false);
            await(health, c -> c.status() == HealthStatus.UP);
            assertEquals(1, log.messages(Level.WARN).size(), log.messages(Level.WARN).toString());
        }
    }

    @Test
    void anInterruptedDumpIsAskedForAgain() throws Exception {
        FailingReads provider = new FailingReads(roce());
        provider.interruptDumps.set(1);
        try (Device device = Device.openFirst(provider)) {
            RoceNetwork.subscribe(device, e -> { });
            NetworkWatchers.awaitTablesRead(provider, 10);
            assertEquals(2, provider.linkDumps.get(), "the interrupted link dump was asked for again");
        }
    }

    @Test
    void stoppingTheNetworkReaderFromAnInterruptedThreadRaisesNoAlarm() throws Exception {
        MockVerbsProvider mock = roce();
        for (int round = 0; round < 3; round++) {
            boolean stillInterrupted;
            try (LogCapture watcher = LogCapture.of(RoceNetwork.class);
                 LogCapture reader = LogCapture.of(BackgroundReader.class)) {
                Device device = Device.openFirst(mock);
                RoceNetwork.subscribe(device, e -> { });
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
