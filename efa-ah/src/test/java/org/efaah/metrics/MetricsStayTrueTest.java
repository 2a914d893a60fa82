package org.efaah.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.micrometer.core.instrument.MockClock;
import io.micrometer.core.instrument.simple.SimpleConfig;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/** Issue 18, metrics that stay true: each case here failed before the binder listened to the cache. */
class MetricsStayTrueTest {

    private static AddressHandleCache newCache() {
        return AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED).build();
    }

    private static void acquireAndClose(AddressHandleCache cache, ProtectionDomain pd, String gid) {
        cache.acquire(pd, AddressHandleAttributes.forGid(gid)).close();
    }

    @Test
    void rebindingUnderTheSameNameAfterCloseShowsTheNewCache() {
        Logger micrometer = (Logger) LoggerFactory.getLogger("io.micrometer");
        ListAppender<ILoggingEvent> logs = new ListAppender<>();
        logs.start();
        micrometer.addAppender(logs);
        try (Device device = Device.openFirst(new MockVerbsProvider())) {
            ProtectionDomain pd = device.allocatePd();
            SimpleMeterRegistry registry = new SimpleMeterRegistry();
            AddressHandleCache first = AddressHandleCacheMetrics.monitor(registry, newCache(), "main");
            acquireAndClose(first, pd, "fe80::1");
            first.close();

            AddressHandleCache second = AddressHandleCacheMetrics.monitor(registry, newCache(), "main");
            acquireAndClose(second, pd, "fe80::1");
            acquireAndClose(second, pd, "fe80::2");
            acquireAndClose(second, pd, "fe80::3");

            assertEquals(3.0, registry.get("efa_ah.creates").tag("cache", "main").functionCounter().count());
            assertEquals(3.0, registry.get("cache.puts").tag("cache", "main").functionCounter().count());
            assertEquals(3.0, registry.get("cache.gets").tag("result", "miss").functionCounter().count());
            second.close();
            assertEquals("", registry.getMetersAsString(), "a closed cache's meters are removed");
            pd.close();
        } finally {
            micrometer.detachAppender(logs);
        }
        assertEquals(List.of(), logs.list.stream().map(ILoggingEvent::getFormattedMessage).toList(),
                "Micrometer warned of nothing (no meter registered twice)");
    }

    @Test
    void bindingRacingCloseLeavesNoMeter() throws Exception {
        for (int round = 0; round < 200; round++) {
            SimpleMeterRegistry registry = new SimpleMeterRegistry();
            AddressHandleCache cache = newCache();
            Thread closer = new Thread(cache::close);
            closer.start();
            AddressHandleCacheMetrics.monitor(registry, cache, "race");
            closer.join();
            assertEquals("", registry.getMetersAsString(), "round " + round);
        }
    }

    @Test
    void aClosedCacheRegistersNothing() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        AddressHandleCache cache = newCache();
        cache.close();
        AddressHandleCacheMetrics.monitor(registry, cache, "gone");
        assertTrue(registry.getMeters().isEmpty(), () -> registry.getMetersAsString());
    }

    @Test
    void errnoSeriesAppearOnlyOnceTheirErrnoOccurs() {
        try (Device device = Device.openFirst(new MockVerbsProvider(MockConfig.builder().maxAh(1).build()))) {
            ProtectionDomain pd = device.allocatePd();
            SimpleMeterRegistry registry = new SimpleMeterRegistry();
            AddressHandleCache cache = AddressHandleCacheMetrics.monitor(registry, newCache(), "main");
            assertTrue(registry.find("efa_ah.create.failures").meters().isEmpty(), "no errno series before a failure");

            AddressHandle held = cache.acquire(pd, AddressHandleAttributes.forGid("fe80::1"));
            assertThrows(VerbsException.class, () -> cache.acquire(pd, AddressHandleAttributes.forGid("fe80::2")));

            assertEquals(1, registry.find("efa_ah.create.failures").meters().size());
            assertEquals(1.0, registry.get("efa_ah.create.failures").tag("errno", "ENOMEM").functionCounter().count());
            assertEquals(1.0, registry.get("cache.load").tag("result", "failure").functionCounter().count());
            assertEquals(1.0, registry.get("cache.load").tag("result", "success").functionCounter().count());
            held.close();
            cache.close();
            pd.close();
        }
    }

    @Test
    void errnosSeenBeforeBindingAreThereAtOnce() {
        try (Device device = Device.openFirst(new MockVerbsProvider(MockConfig.builder().maxAh(1).build()))) {
            ProtectionDomain pd = device.allocatePd();
            AddressHandleCache cache = newCache();
            AddressHandle held = cache.acquire(pd, AddressHandleAttributes.forGid("fe80::1"));
            assertThrows(VerbsException.class, () -> cache.acquire(pd, AddressHandleAttributes.forGid("fe80::2")));
            SimpleMeterRegistry registry = new SimpleMeterRegistry();
            AddressHandleCacheMetrics.monitor(registry, cache, "main");
            assertEquals(1.0, registry.get("efa_ah.create.failures").tag("errno", "ENOMEM").functionCounter().count());
            held.close();
            cache.close();
            pd.close();
        }
    }

    @Test
    void theMaxCreateTimeDecays() {
        MockClock clock = new MockClock();
        SimpleMeterRegistry registry = new SimpleMeterRegistry(SimpleConfig.DEFAULT, clock);
        MockConfig config = MockConfig.builder().createLatencyNanos(TimeUnit.MILLISECONDS.toNanos(2)).build();
        try (Device device = Device.openFirst(new MockVerbsProvider(config))) {
            ProtectionDomain pd = device.allocatePd();
            AddressHandleCache cache = AddressHandleCacheMetrics.monitor(registry, newCache(), "main");
            acquireAndClose(cache, pd, "fe80::1");
            double max = registry.get("efa_ah.create.time.max").gauge().value(); // seconds, the base unit
            assertTrue(max >= 0.002, "max " + max + " s covers the 2 ms create");

            clock.add(Duration.ofMinutes(3));
            assertEquals(0.0, registry.get("efa_ah.create.time.max").gauge().value(),
                    "three minutes without a create: the max decayed");
            cache.close();
            pd.close();
        }
    }

    @Test
    void theCaffeineBindersLoadMetersArePresent() {
        try (Device device = Device.openFirst(new MockVerbsProvider())) {
            ProtectionDomain pd = device.allocatePd();
            SimpleMeterRegistry registry = new SimpleMeterRegistry();
            AddressHandleCache cache = AddressHandleCacheMetrics.monitor(registry, newCache(), "main");
            acquireAndClose(cache, pd, "fe80::1");
            assertEquals(1.0, registry.get("cache.load").tags("cache", "main", "result", "success")
                    .functionCounter().count());
            assertEquals(0.0, registry.get("cache.load").tags("cache", "main", "result", "failure")
                    .functionCounter().count());
            double loadSeconds = registry.get("cache.load.duration").timeGauge().value(TimeUnit.SECONDS);
            assertEquals(cache.stats().totalCreateNanos() / 1e9, loadSeconds, 1e-9);
            cache.close();
            pd.close();
        }
    }

    @Test
    void theHealthGaugeFollowsTheReport() {
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().maxAh(10).build());
        try (Device device = Device.openFirst(mock)) {
            ProtectionDomain pd = device.allocatePd();
            SimpleMeterRegistry registry = new SimpleMeterRegistry();
            AddressHandleCache cache = AddressHandleCacheMetrics.monitor(registry, newCache(), "main");
            AddressHandle held = cache.acquire(pd, AddressHandleAttributes.forGid("fe80::1"));
            assertEquals(0.0, registry.get("efa_ah.health").gauge().value(), "UP");
            mock.setPortState(device.name(), 1);
            assertEquals(2.0, registry.get("efa_ah.health").gauge().value(), "DOWN: port 1 is not active");
            mock.setPortState(device.name(), 4);
            assertEquals(0.0, registry.get("efa_ah.health").gauge().value());
            held.close();
            cache.close();
            pd.close();
        }
    }

    @Test
    void aListenerThatThrowsLeavesTheCacheWorking() {
        try (Device device = Device.openFirst(new MockVerbsProvider())) {
            ProtectionDomain pd = device.allocatePd();
            AddressHandleCache cache = newCache();
            Logger cacheLog = (Logger) LoggerFactory.getLogger(AddressHandleCache.class);
            ListAppender<ILoggingEvent> logs = new ListAppender<>();
            logs.start();
            cacheLog.addAppender(logs);
            cacheLog.setAdditive(false);
            try {
                cache.inspection().addListener(new org.efaah.cache.AddressHandleCacheListener() {
                    @Override
                    public void created(long nanos) {
                        throw new IllegalStateException("listener bug");
                    }
                });
                acquireAndClose(cache, pd, "fe80::1");
                assertEquals(1, cache.stats().hardwareCreates());
                assertEquals(0, cache.inspection().liveEntries());
            } finally {
                cacheLog.detachAppender(logs);
                cacheLog.setAdditive(true);
            }
            assertEquals(1, logs.list.size());
            assertTrue(logs.list.get(0).getFormattedMessage().contains("AddressHandleCacheListener"),
                    logs.list.get(0).getFormattedMessage());
            cache.close();
            pd.close();
        }
    }

    @Test
    void aCollectedCachesBinderLetsGo() {
        AddressHandleCacheMetrics binder = new AddressHandleCacheMetrics(newCache(), "x", List.of());
        System.gc();
        assertNull(binder.size() == null ? null : binder.size(), "size is null or the cache still lived");
    }
}
