package org.efaah.cache;

import static org.efaah.cache.MockFixture.peer;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.util.Map;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import javax.management.openmbean.TabularData;
import org.efaah.verbs.Errno;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Issue 10 item 5: counters-only stats with minus() and per-cause/per-errno counts; the MXBean. */
@ExtendWith(CacheInvariants.class)
class StatsTest {

    @Test
    void minusGivesWhatHappenedBetweenTwoSnapshots() {
        try (FaultyFixture f = FaultyFixture.withRetention(MockFixture.strictDevice().maxAh(2).build(), 3600, 100)) {
            f.cache.acquire(f.pd, peer(1)).close();
            CacheStats before = f.cache.stats();
            f.cache.acquire(f.pd, peer(1)).close();
            f.cache.acquire(f.pd, peer(2)).close();
            f.cache.acquire(f.pd, peer(3)).close(); // evicts peer 1
            f.provider.failNextCreate(new OutOfMemoryError("test"));
            assertThrows(OutOfMemoryError.class, () -> f.cache.acquire(f.pd, peer(4)));
            CacheStats d = f.cache.stats().minus(before);
            assertEquals(1, d.hits());
            assertEquals(3, d.misses());
            assertEquals(2, d.hardwareCreates());
            assertEquals(1, d.revived());
            assertEquals(3, d.retained());
            assertEquals(1, d.destroysBy(RemovalCause.EVICTED_ENOMEM));
            assertEquals(1, d.evictions());
            assertEquals(Map.of(Errno.UNKNOWN, 1L), d.createFailuresByErrno(), "an Error carries no errno");
            assertEquals(0, f.cache.stats().minus(f.cache.stats()).requests());
        }
    }

    @Test
    void createFailuresAreCountedPerErrno() {
        try (FaultyFixture f = new FaultyFixture(MockFixture.strictDevice().maxAh(1).build(), AddressHandleCache.builder())) {
            AddressHandle a = f.cache.acquire(f.pd, peer(1));
            for (int i = 0; i < 3; i++) {
                assertThrows(org.efaah.verbs.VerbsException.class, () -> f.cache.acquire(f.pd, peer(2)));
            }
            f.provider.failNextCreate(new org.efaah.verbs.VerbsException("ibv_create_ah", Errno.ETIMEDOUT, "test"));
            assertThrows(org.efaah.verbs.VerbsException.class, () -> f.cache.acquire(f.pd, peer(3)));
            CacheStats s = f.cache.stats();
            assertEquals(3, s.createFailures(Errno.ENOMEM));
            assertEquals(1, s.createFailures(Errno.ETIMEDOUT));
            assertEquals(4, s.createFailures());
            a.close();
        }
    }

    @Test
    void statsCanBeTurnedOff() {
        try (FaultyFixture f = new FaultyFixture(MockFixture.strictDevice().build(), AddressHandleCache.builder().recordStats(false))) {
            f.cache.acquire(f.pd, peer(1)).close();
            assertEquals(0, f.cache.stats().requests());
            assertEquals(0, f.cache.inspection().liveEntries(), "cache queries still answer");
        }
    }

    @Test
    void theMxBeanShowsTheSnapshotUnderTheGivenNameUntilTheCacheCloses() throws Exception {
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        ObjectName name;
        try (FaultyFixture f = FaultyFixture.withRetention(3600, 100)) {
            name = f.cache.inspection().registerMXBean("org.efaah:type=AddressHandleCache,name=statsTest");
            AddressHandle h = f.cache.acquire(f.pd, peer(1));
            f.cache.acquire(f.pd, peer(1)).close();
            assertEquals(1L, server.getAttribute(name, "Hits"));
            assertEquals(1L, server.getAttribute(name, "Misses"));
            assertEquals(1L, server.getAttribute(name, "LiveEntries"));
            assertEquals(1L, server.getAttribute(name, "LiveHandles"));
            h.close();
            assertEquals(1L, server.getAttribute(name, "RetainedEntries"));
            f.cache.invalidateAll();
            assertEquals(1L, server.getAttribute(name, "Invalidated"));
            TabularData byCause = (TabularData) server.getAttribute(name, "DestroysByCause");
            assertEquals(1, byCause.size());
            assertThrows(IllegalArgumentException.class,
                    () -> f.cache.inspection().registerMXBean("org.efaah:type=AddressHandleCache,name=statsTest"), "taken");
            assertThrows(IllegalArgumentException.class, () -> f.cache.inspection().registerMXBean("no colon"));
        }
        assertTrue(!server.isRegistered(name), "unregistered at cache close");
    }
}
