package org.efaah.roce;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.efaah.fixture.LogCapture;
import org.efaah.health.HealthStatus;
import org.efaah.internal.BackgroundReader;
import org.efaah.verbs.Device;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;

/**
 * Attack round, item 1: Subscription.health's claim about RESYNC while the network reader's reads
 * fail: one at each try (not once at the end), so AHs made meanwhile do not outlive the next try.
 */
class ResyncWhileFailingTest {

    @Test
    void listenersHearAResyncAtEachTryWhileReadsFail() throws Exception {
        NetworkReaderTest.FailingReads provider = new NetworkReaderTest.FailingReads(
                new MockVerbsProvider(MockConfig.builder().efa(false).deviceCount(1).build()));
        AtomicInteger resyncs = new AtomicInteger();
        try (LogCapture log = LogCapture.of(BackgroundReader.class);
             Device device = Device.openFirst(provider);
             RoceNetwork.Subscription s = RoceNetwork.subscribe(device, e -> {
                 if (e.kind() == NetworkEvent.Kind.RESYNC) {
                     resyncs.incrementAndGet();
                 }
             })) {
            NetworkWatchers.awaitTablesRead(provider, 10);
            assertEquals(0, resyncs.get());
            provider.failNetwork.set(true);
            for (int i = 0; i < 1000 && resyncs.get() < 3; i++) {
                TimeUnit.MILLISECONDS.sleep(10); // tries after 10, 20, 40 ms...
            }
            assertTrue(resyncs.get() >= 3, "RESYNCs while failing: " + resyncs.get());
            assertEquals(HealthStatus.DEGRADED, s.health().orElseThrow().status());
            provider.failNetwork.set(false);
            NetworkWatchers.awaitTablesRead(provider, 10);
            for (int i = 0; i < 1000 && s.health().orElseThrow().status() != HealthStatus.UP; i++) {
                TimeUnit.MILLISECONDS.sleep(10);
            }
            int settled = resyncs.get();
            TimeUnit.MILLISECONDS.sleep(100);
            assertEquals(settled, resyncs.get(), "none once it reads again");
        }
    }
}
