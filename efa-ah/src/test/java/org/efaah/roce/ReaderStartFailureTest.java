package org.efaah.roce;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import org.efaah.fixture.LogCapture;
import org.efaah.health.HealthCheck;
import org.efaah.health.HealthStatus;
import org.efaah.verbs.Device;
import org.efaah.verbs.Errno;
import org.efaah.verbs.ForwardingVerbsProvider;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;

/**
 * Attack round, item 1: the network reader cannot open its channel (socket(NETLINK_ROUTE)
 * failing, say EACCES). The subscription then follows nothing, and its health says so (DEGRADED)
 * rather than nothing, as for a provider without network changes; the next subscription tries again.
 */
class ReaderStartFailureTest {

    @Test
    void aReaderThatCouldNotStartShowsInTheSubscriptionsHealth() throws Exception {
        AtomicBoolean refuse = new AtomicBoolean(true);
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().efa(false).deviceCount(1).build());
        ForwardingVerbsProvider provider = new ForwardingVerbsProvider(mock) {
            @Override
            public long openNetworkChanges() {
                if (refuse.get()) {
                    throw new VerbsException("socket(NETLINK_ROUTE)", Errno.EACCES, "injected");
                }
                return super.openNetworkChanges();
            }
        };
        try (LogCapture log = LogCapture.of(RoceNetwork.class);
             Device device = Device.openFirst(provider);
             RoceNetwork.Subscription s = RoceNetwork.subscribe(device, e -> { })) {
            assertEquals(1, log.count(Level.WARN, "network changes unavailable"), log.lines().toString());
            Optional<HealthCheck> health = s.health();
            assertTrue(health.isPresent() && health.get().status() == HealthStatus.DEGRADED,
                    "a RoCE subscription that hears nothing because its reader failed to start: " + health);
            assertTrue(health.get().message().contains("EACCES"), health.get().message());
            refuse.set(false);
            try (RoceNetwork.Subscription again = RoceNetwork.subscribe(device, e -> { })) {
                NetworkWatchers.awaitTablesRead(provider, 10);
                assertEquals(HealthStatus.UP, s.health().orElseThrow().status(), "the first hears the reader the second started");
                assertEquals(HealthStatus.UP, again.health().orElseThrow().status());
            }
        }
    }
}
