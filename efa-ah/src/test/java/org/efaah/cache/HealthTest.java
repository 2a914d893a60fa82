package org.efaah.cache;

import static org.efaah.cache.MockFixture.peer;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;
import java.util.stream.Collectors;
import org.efaah.fixture.LogCapture;
import org.efaah.health.HealthCheck;
import org.efaah.health.HealthReport;
import org.efaah.health.HealthStatus;
import org.efaah.verbs.Device;
import org.efaah.verbs.DeviceEvent;
import org.efaah.verbs.Errno;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.mock.MockConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Issue 18 item 1: the health report goes through each reason on the mock, with its figure. */
@ExtendWith(CacheInvariants.class)
class HealthTest {

    private static HealthCheck reason(HealthReport r, String name) {
        return r.reasons().stream().filter(c -> c.name().equals(name)).findFirst()
                .orElseThrow(() -> new AssertionError("no reason " + name + " in " + r));
    }

    private static String names(HealthReport r) {
        return r.reasons().stream().map(HealthCheck::name).collect(Collectors.joining(","));
    }

    @Test
    void aFreshCacheIsUpWithItsFigures() {
        try (MockFixture f = new MockFixture()) {
            f.cache.acquire(f.pd, peer(1)).close();
            HealthReport r = f.cache.inspection().health();
            assertEquals(HealthStatus.UP, r.status(), r::toString);
            assertEquals("", names(r));
            assertTrue(r.checks().stream().anyMatch(c -> c.name().equals("ah_usage")
                    && c.limit() == MockConfig.DEFAULT_MAX_AH), r::toString);
            assertTrue(r.checks().stream().anyMatch(c -> c.name().equals("port_state") && c.value() == 4), r::toString);
        }
    }

    @Test
    void deviceFatalIsDown() throws InterruptedException {
        try (MockFixture f = new MockFixture(); LogCapture logs = LogCapture.of(Device.class, AddressHandleCache.class)) {
            AddressHandle held = f.cache.acquire(f.pd, peer(1));
            f.mock.raiseEvent(f.device.name(), DeviceEvent.Kind.DEVICE_FATAL, 0);
            // The device turns fatal before its listeners run: wait for the cache's, which logs.
            for (int i = 0; i < 500 && logs.lines().stream().noneMatch(m -> m.contains("AH(s) invalidated")); i++) {
                Thread.sleep(10);
            }
            held.close();
            HealthReport r = f.cache.inspection().health();
            assertEquals(HealthStatus.DOWN, r.status(), r::toString);
            assertEquals("device_fatal", names(r));
            assertTrue(logs.lines().stream().anyMatch(m -> m.startsWith("ERROR") && m.contains("DEVICE_FATAL on "
                    + f.device.name() + ": 1 AH(s) invalidated")), logs.lines()::toString);
        }
    }

    @Test
    void aPortThatIsNotActiveIsDownThoughNoEventCame() {
        try (MockFixture f = new MockFixture()) {
            f.cache.acquire(f.pd, peer(1)).close();
            f.mock.setPortState(f.device.name(), 1); // DOWN, as an EFA port: no event
            HealthReport r = f.cache.inspection().health();
            assertEquals(HealthStatus.DOWN, r.status(), r::toString);
            HealthCheck port = reason(r, "port_state");
            assertEquals(1, port.value());
            assertEquals(f.device.name() + " port 1", port.subject());
            assertTrue(port.message().contains("PORT_DOWN (1)"), port.message());
            f.mock.setPortState(f.device.name(), 4);
            assertEquals(HealthStatus.UP, f.cache.inspection().health().status());
        }
    }

    @Test
    void ahsNearMaxAhAreDegradedAndAtMaxAhDown() {
        try (MockFixture f = new MockFixture(MockFixture.strictDevice().maxAh(10).build())) {
            List<AddressHandle> held = new ArrayList<>();
            for (int i = 1; i <= 9; i++) {
                held.add(f.cache.acquire(f.pd, peer(i)));
            }
            HealthReport r = f.cache.inspection().health();
            assertEquals(HealthStatus.DEGRADED, r.status(), r::toString);
            HealthCheck usage = reason(r, "ah_usage");
            assertEquals(9, usage.value());
            assertEquals(10, usage.limit());
            assertTrue(usage.message().contains("DEGRADED from 9 (90%), DOWN at 10"), usage.message());
            held.add(f.cache.acquire(f.pd, peer(10)));
            assertEquals(HealthStatus.DOWN, f.cache.inspection().health().status());
            held.forEach(AddressHandle::close);
            assertEquals(HealthStatus.UP, f.cache.inspection().health().status());
        }
    }

    @Test
    void pdsAtMaxPdAreDown() {
        try (MockFixture f = new MockFixture(MockFixture.strictDevice().maxPd(2).build())) {
            f.cache.acquire(f.pd, peer(1)).close();
            try (var second = f.device.allocatePd()) {
                HealthReport r = f.cache.inspection().health();
                assertEquals(HealthStatus.DOWN, r.status(), r::toString);
                assertEquals(2, reason(r, "pd_usage").value());
            }
        }
    }

    @Test
    void createFailuresInTheWindowAreDegradedByErrno() {
        FakeTicker ticker = new FakeTicker();
        try (MockFixture f = new MockFixture()) {
            AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED).ticker(ticker)
                    .build();
            f.mock.failNextCreates(2, Errno.ETIMEDOUT);
            assertThrows(VerbsException.class, () -> cache.acquire(f.pd, peer(1)));
            assertThrows(VerbsException.class, () -> cache.acquire(f.pd, peer(1)));
            HealthReport r = cache.inspection().health();
            assertEquals(HealthStatus.DEGRADED, r.status(), r::toString);
            HealthCheck failures = reason(r, "create_failures");
            assertEquals("ETIMEDOUT", failures.subject());
            assertEquals(2, failures.value());
            ticker.advance(61_000_000_000L);
            assertEquals(HealthStatus.UP, cache.inspection().health().status(), "a minute later the failures are out of the window");
            cache.close();
        }
    }

    @Test
    void undestroyedAhsAndLeaksAreDegraded() {
        try (MockFixture f = new MockFixture(); LogCapture logs = LogCapture.of(AddressHandleCache.class)) {
            f.mock.failNextDestroys(1, Errno.EIO);
            f.cache.acquire(f.pd, peer(1)).close();
            HealthReport r = f.cache.inspection().health();
            assertEquals(HealthStatus.DEGRADED, r.status(), r::toString);
            assertEquals(1, reason(r, "undestroyed_ahs").value());
            assertTrue(logs.lines().stream().anyMatch(m -> m.contains("destroy of")), logs.lines()::toString);
        }
    }

    @Test
    void aClosedCacheIsDown() {
        AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED).build();
        cache.close();
        assertEquals("cache_open", names(cache.inspection().health()));
        assertEquals(HealthStatus.DOWN, cache.inspection().health().status());
    }

    @Test
    void theReportSurvivesJmxOpenData() {
        try (MockFixture f = new MockFixture(MockFixture.strictDevice().maxAh(2).build())) {
            AddressHandle a = f.cache.acquire(f.pd, peer(1));
            HealthReport r = f.cache.inspection().health();
            assertEquals(r, HealthReport.from(r.toCompositeData()));
            a.close();
        }
    }

    /** A ticker the test moves. */
    static final class FakeTicker implements LongSupplier {
        private volatile long now = 1;

        void advance(long nanos) {
            now += nanos;
        }

        @Override
        public long getAsLong() {
            return now;
        }
    }
}
