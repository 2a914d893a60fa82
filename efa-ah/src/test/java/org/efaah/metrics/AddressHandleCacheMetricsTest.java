package org.efaah.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.cache.RetentionPolicy;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;

/** Issue 10 item 5: the Micrometer binder reads the cache's snapshot under cache.* and efa_ah.* names. */
class AddressHandleCacheMetricsTest {

    @Test
    void metersFollowTheCache() {
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().maxAh(1).build());
        try (Device device = Device.openFirst(mock)) {
            ProtectionDomain pd = device.allocatePd();
            AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED)
                    .retention(RetentionPolicy.idle(java.time.Duration.ofHours(1), 10)).build();
            SimpleMeterRegistry registry = new SimpleMeterRegistry();
            AddressHandleCacheMetrics.monitor(registry, cache, "main", "app", "test");
            AddressHandle a = cache.acquire(pd, AddressHandleAttributes.forGid("fe80::1"));
            cache.acquire(pd, AddressHandleAttributes.forGid("fe80::1")).close();
            a.close();
            cache.acquire(pd, AddressHandleAttributes.forGid("fe80::2")).close(); // evicts fe80::1 at max_ah 1

            assertEquals(1.0, registry.get("cache.gets").tags("cache", "main", "result", "hit", "app", "test")
                    .functionCounter().count());
            assertEquals(2.0, registry.get("cache.gets").tag("result", "miss").functionCounter().count());
            assertEquals(2.0, registry.get("cache.puts").functionCounter().count());
            assertEquals(1.0, registry.get("cache.evictions").functionCounter().count());
            assertEquals(1.0, registry.get("cache.size").gauge().value());
            assertEquals(1.0, registry.get("efa_ah.destroys").tag("cause", "EVICTED_ENOMEM").functionCounter().count());
            assertEquals(2.0, registry.get("efa_ah.retained").functionCounter().count());
            assertEquals(1.0, registry.get("efa_ah.retained.entries").gauge().value());
            assertEquals(0.0, registry.get("efa_ah.handles").gauge().value());
            assertEquals(0, registry.find("efa_ah.create.failures").meters().size(), "no errno series before a failure");
            cache.close();
            pd.close();
        }
    }
}
