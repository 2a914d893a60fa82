package org.efaah.cache;

import static org.efaah.cache.MockFixture.peer;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanInfo;
import javax.management.MBeanOperationInfo;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import javax.management.openmbean.CompositeData;
import org.efaah.health.HealthReport;
import org.efaah.health.HealthStatus;
import org.efaah.verbs.Gid;
import org.efaah.verbs.ProtectionDomain;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Issue 18 items 2 and 3: a look inside the cache, and the MXBean's descriptions and operations. */
@ExtendWith(CacheInvariants.class)
class EntriesTest {

    @Test
    void entriesShowKeyReferencesAgeAndIdleTime() {
        HealthTest.FakeTicker ticker = new HealthTest.FakeTicker();
        try (MockFixture f = new MockFixture()) {
            AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED).ticker(ticker)
                    .retention(RetentionPolicy.idle(Duration.ofHours(1), 100)).build();
            AddressHandle a = cache.acquire(f.pd, peer(1));
            AddressHandle a2 = a.duplicate();
            cache.acquire(f.pd, peer(2)).close();
            ticker.advance(5_000);

            List<AddressHandleEntry> rows = cache.inspection().entries(e -> true, 10);
            assertEquals(2, rows.size());
            AddressHandleEntry one = rows.stream().filter(r -> r.dgid().equals(peer(1).dgid())).findFirst().orElseThrow();
            assertEquals(f.device.name(), one.device());
            assertEquals(AddressHandleEntry.pdId(f.pd), one.pd());
            assertEquals(2, one.references());
            assertEquals("LIVE", one.state());
            assertEquals(5_000, one.ageNanos());
            assertEquals(0, one.idleNanos());
            assertFalse(one.invalidated());
            assertEquals(a.hardware().ahn(), one.ahn());
            AddressHandleEntry two = rows.stream().filter(r -> r.dgid().equals(peer(2).dgid())).findFirst().orElseThrow();
            assertEquals(0, two.references());
            assertEquals(5_000, two.idleNanos());

            cache.invalidate(f.pd, peer(1).dgid());
            AddressHandleEntry stale = cache.inspection().entries(CacheMXBeanAdapter.filter("", "", "fe80::1"), 10).get(0);
            assertTrue(stale.invalidated());
            assertEquals(2, stale.references());
            a.close();
            a2.close();
            assertEquals(List.of(), cache.inspection().entries(CacheMXBeanAdapter.filter("", "", "fe80::1"), 10));
            cache.close();
        }
    }

    @Test
    void aLimitAndAFilterBoundTheListing() {
        try (MockFixture f = new MockFixture(MockFixture.strictDevice().maxAh(4096).build(),
                LeakDetection.DISABLED)) {
            ProtectionDomain other = f.device.allocatePd();
            List<AddressHandle> held = new java.util.ArrayList<>();
            for (int i = 1; i <= 100; i++) {
                held.add(f.cache.acquire(f.pd, peer(i)));
                held.add(f.cache.acquire(other, peer(i)));
            }
            assertEquals(7, f.cache.inspection().entries(e -> true, 7).size());
            assertThrows(NullPointerException.class, () -> f.cache.inspection().entries(null, 7), "a null filter");
            String otherId = AddressHandleEntry.pdId(other);
            List<AddressHandleEntry> ofOther = f.cache.inspection().entries(r -> r.pd().equals(otherId), 1000);
            assertEquals(100, ofOther.size());
            assertTrue(ofOther.stream().allMatch(r -> r.pd().equals(otherId)));
            Gid seven = Gid.parse("fe80::7");
            assertEquals(2, f.cache.inspection().entries(r -> r.device().equals(f.device.name()) && seven.equals(r.dgid()),
                    1000).size());
            // The MXBean operation's text filter (what the CLI's entries command sends): blank matches
            // any, the PD id in any case, the GID in any IPv6 spelling.
            List<AddressHandleEntry> byText = f.cache.inspection().entries(CacheMXBeanAdapter.filter(null, otherId, null), 1000);
            assertEquals(100, byText.size());
            assertTrue(byText.stream().allMatch(r -> r.pd().equals(otherId)));
            assertEquals(100, f.cache.inspection().entries(CacheMXBeanAdapter.filter(" ", " " + otherId.toUpperCase()
                    + " ", ""), 1000).size());
            assertEquals(2, f.cache.inspection().entries(CacheMXBeanAdapter.filter(f.device.name(), "", "fe80:0:0::7"),
                    1000).size());
            assertEquals(0, f.cache.inspection().entries(CacheMXBeanAdapter.filter("efa_9", null, null), 1000).size());
            int[] calls = {0};
            assertEquals(7, f.cache.inspection().entries(r -> ++calls[0] > 0, 7).size());
            assertEquals(7, calls[0], "the filter is not called once the limit is reached");
            IllegalStateException thrown = assertThrows(IllegalStateException.class,
                    () -> f.cache.inspection().entries(r -> {
                        throw new IllegalStateException("filter failed");
                    }, 10));
            assertEquals("filter failed", thrown.getMessage(), "what the filter throws, the listing throws");
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> f.cache.inspection().entries(r -> true, 0));
            assertEquals("limit: 0 is out of range; valid 1..1000000", e.getMessage());
            held.forEach(AddressHandle::close);
            f.cache.invalidate(other);
            other.close();
        }
    }

    @Test
    void theMXBeanDescribesItselfAndHasOperations() throws Exception {
        try (MockFixture f = new MockFixture(MockFixture.strictDevice().build(), LeakDetection.DISABLED)) {
            AddressHandle a = f.cache.acquire(f.pd, peer(1));
            ObjectName name = f.cache.inspection().registerMXBean("org.efaah:type=AddressHandleCache,name=EntriesTest");
            MBeanServer server = ManagementFactory.getPlatformMBeanServer();
            MBeanInfo info = server.getMBeanInfo(name);
            for (MBeanAttributeInfo attr : info.getAttributes()) {
                assertFalse(attr.getDescription().equals(attr.getName()), "attribute " + attr.getName() + " is described");
            }
            MBeanOperationInfo entries = Arrays.stream(info.getOperations()).filter(o -> o.getName().equals("entries"))
                    .findFirst().orElseThrow();
            assertEquals(List.of("limit", "device", "pd", "dgid"),
                    Arrays.stream(entries.getSignature()).map(p -> p.getName()).toList());

            assertEquals("UP", server.getAttribute(name, "HealthStatus"));
            HealthReport health = HealthReport.from((CompositeData) server.getAttribute(name, "Health"));
            assertEquals(HealthStatus.UP, health.status());

            CompositeData[] rows = (CompositeData[]) server.invoke(name, "entries", new Object[] {10, "", "", "fe80::1"},
                    new String[] {"int", String.class.getName(), String.class.getName(), String.class.getName()});
            assertEquals(1, rows.length);
            assertEquals("fe80::1", rows[0].get("dgid"));
            assertEquals(1, rows[0].get("references"));

            assertEquals(1, server.invoke(name, "invalidateAll", new Object[0], new String[0]));
            a.close();
            assertEquals(0L, server.getAttribute(name, "LiveEntries"));
        }
    }
}
