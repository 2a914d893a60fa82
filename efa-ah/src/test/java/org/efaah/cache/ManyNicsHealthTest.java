package org.efaah.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import javax.management.ObjectName;
import javax.management.openmbean.CompositeData;
import org.efaah.fixture.LogCapture;
import org.efaah.health.HealthCheck;
import org.efaah.health.HealthReport;
import org.efaah.health.HealthStatus;
import org.efaah.health.HealthThresholds;
import org.efaah.metrics.AddressHandleCacheMetrics;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.DeviceEvent;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;

/**
 * Issue 34 item 4: a host of many NICs (32 EFA devices, as a p5). A DOWN device is DOWN in its own
 * report and DEGRADED in the cache's, which is DOWN only when every device is; the cache's report,
 * its MXBean's Health attribute and the Micrometer gauge agree.
 */
class ManyNicsHealthTest {
    private static final int DEVICES = 32;

    @Test
    void oneDownDeviceOf32DegradesTheCacheAndAllDownIsDown() throws Exception {
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().deviceCount(DEVICES).build());
        List<Device> devices = new ArrayList<>();
        List<ProtectionDomain> pds = new ArrayList<>();
        ObjectName name = new ObjectName("org.efaah:type=AddressHandleCache,name=manyNics");
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (AddressHandleCache cache = AddressHandleCacheMetrics.monitor(registry, AddressHandleCache.builder()
                .leakDetection(LeakDetection.DISABLED).build(), "main")) {
            cache.inspection().registerMXBean(name.toString());
            for (String n : mock.deviceNames()) {
                Device d = Device.open(mock, n);
                devices.add(d);
                ProtectionDomain pd = d.allocatePd();
                pds.add(pd);
                cache.acquire(pd, AddressHandleAttributes.forGid("fe80::1")).close();
            }
            assertEquals(DEVICES, devices.size());
            expect(cache, registry, name, HealthStatus.UP, 0);

            mock.setPortState(devices.get(7).name(), 1); // PORT_DOWN, as EFA says it: no event
            HealthReport own = devices.get(7).health(HealthThresholds.DEFAULTS);
            assertEquals(HealthStatus.DOWN, own.status(), own::toString);
            HealthReport r = expect(cache, registry, name, HealthStatus.DEGRADED, 1);
            assertTrue(r.checks().stream().anyMatch(c -> c.name().equals("port_state")
                    && c.subject().startsWith(devices.get(7).name()) && c.status() == HealthStatus.DEGRADED
                    && c.message().contains("DOWN for the device")), r::toString);

            try (LogCapture logs = LogCapture.of(Device.class, AddressHandleCache.class)) {
                mock.raiseEvent(devices.get(9).name(), DeviceEvent.Kind.DEVICE_FATAL, 0);
                for (int i = 0; i < 1000 && !devices.get(9).isFatal(); i++) {
                    Thread.sleep(10);
                }
                assertTrue(devices.get(9).isFatal());
                expect(cache, registry, name, HealthStatus.DEGRADED, 2);
            }

            for (Device d : devices) {
                mock.setPortState(d.name(), 1);
            }
            HealthReport all = expect(cache, registry, name, HealthStatus.DOWN, DEVICES);
            assertTrue(all.checks().stream().anyMatch(c -> c.name().equals("port_state") && c.status() == HealthStatus.DOWN),
                    all::toString);
        } finally {
            pds.forEach(ProtectionDomain::close);
            devices.forEach(Device::close);
        }
    }

    private static HealthReport expect(AddressHandleCache cache, SimpleMeterRegistry registry, ObjectName name,
                                       HealthStatus status, int down) throws Exception {
        HealthReport r = cache.inspection().health();
        assertEquals(status, r.status(), r::toString);
        HealthCheck summary = r.checks().stream().filter(c -> c.name().equals("devices_down")).findFirst().orElseThrow();
        assertEquals(down, summary.value(), r::toString);
        assertEquals(DEVICES, summary.limit(), r::toString);
        CompositeData jmx = (CompositeData) ManagementFactory.getPlatformMBeanServer().getAttribute(name, "Health");
        assertEquals(status.name(), jmx.get("status"));
        assertEquals(status.ordinal(), registry.get("efa_ah.health").gauge().value(), 0.0);
        return r;
    }
}
