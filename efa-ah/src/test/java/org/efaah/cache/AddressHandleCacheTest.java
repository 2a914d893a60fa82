package org.efaah.cache;

import static org.efaah.cache.MockFixture.peer;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.efaah.fixture.LogCapture;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Errno;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockCounters;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(LogCapture.Quiet.class)
@ExtendWith(CacheInvariants.class)
class AddressHandleCacheTest {

    @Test
    void manyAcquiresOfOnePeerMakeOneHardwareAh() {
        try (MockFixture f = new MockFixture()) {
            List<AddressHandle> handles = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                handles.add(f.cache.acquire(f.pd, peer(1)));
            }
            assertEquals(1, f.mock.counters().hardwareCreates());
            assertEquals(0, f.mock.counters().duplicatesRefused());
            int ahn = handles.get(0).ahn();
            handles.forEach(h -> assertEquals(ahn, h.ahn()));
            CacheStats s = f.cache.stats();
            assertEquals(9, s.hits());
            assertEquals(1, s.misses());
            assertEquals(10, f.cache.inspection().liveHandles());
            assertEquals(1, f.cache.inspection().liveEntries());
            for (int i = 0; i < 9; i++) {
                handles.get(i).close();
            }
            assertEquals(1, f.mock.counters().liveAhs(), "still referenced by one handle");
            handles.get(9).close();
            assertEquals(0, f.mock.counters().liveAhs(), "destroyed with the last reference");
            assertEquals(1, f.mock.counters().hardwareDestroys());
            assertEquals(0, f.cache.inspection().liveEntries());
            assertEquals(0, f.cache.inspection().liveHandles());
        }
    }

    @Test
    void closeIsIdempotentPerHandleAndAClosedHandleRefusesUse() {
        try (MockFixture f = new MockFixture()) {
            AddressHandle a = f.cache.acquire(f.pd, peer(1));
            AddressHandle b = f.cache.acquire(f.pd, peer(1));
            a.close();
            a.close();
            a.close();
            assertTrue(a.isClosed());
            assertEquals(1, f.mock.counters().liveAhs(), "a's repeated close must not drop b's reference");
            assertThrows(IllegalStateException.class, a::nativeHandle);
            assertThrows(IllegalStateException.class, a::ahn);
            assertEquals(0, b.ahn());
            b.close();
            assertEquals(0, f.mock.counters().liveAhs());
        }
    }

    @Test
    void efaKeysByGidAlone() {
        try (MockFixture f = new MockFixture()) {
            AddressHandleAttributes base = peer(1);
            try (AddressHandle a = f.cache.acquire(f.pd, base);
                 AddressHandle b = f.cache.acquire(f.pd, base.toBuilder().hopLimit(1).trafficClass(3).flowLabel(9).build())) {
                assertEquals(a.ahn(), b.ahn());
                assertEquals(1, f.mock.counters().hardwareCreates());
                assertEquals(f.pd.device().resolve(base), b.attributes(), "the hardware AH keeps its creator's attributes");
            }
        }
    }

    @Test
    void otherProvidersKeyByEveryField() {
        MockConfig roce = MockFixture.strictDevice().efa(false).gidTableLength(4).build();
        try (MockFixture f = new MockFixture(roce)) {
            AddressHandleAttributes base = peer(1);
            List<AddressHandleAttributes> variants = List.of(base, base.toBuilder().sgidIndex(1).build(),
                    base.toBuilder().hopLimit(1).build(), base.toBuilder().trafficClass(1).build(),
                    base.toBuilder().flowLabel(1).build(), base.toBuilder().sl(1).build(),
                    base.toBuilder().staticRate(1).build(), base.toBuilder().srcPathBits(1).build(),
                    base.toBuilder().dlid(1).build());
            List<AddressHandle> handles = new ArrayList<>();
            for (AddressHandleAttributes v : variants) {
                handles.add(f.cache.acquire(f.pd, v));
                handles.add(f.cache.acquire(f.pd, v));
            }
            assertEquals(variants.size(), f.mock.counters().hardwareCreates());
            assertEquals(0, f.mock.counters().duplicatesRefused());
            for (int i = 0; i < handles.size(); i += 2) {
                assertEquals(handles.get(i).nativeHandle(), handles.get(i + 1).nativeHandle());
                if (i > 0) {
                    assertNotEquals(handles.get(0).nativeHandle(), handles.get(i).nativeHandle());
                }
            }
            handles.forEach(AddressHandle::close);
            assertEquals(0, f.mock.counters().liveAhs());
        }
    }

    @Test
    void differentPdsNeverShareAnAh() {
        try (MockFixture f = new MockFixture()) {
            try (ProtectionDomain other = f.device.allocatePd()) {
                AddressHandle a = f.cache.acquire(f.pd, peer(1));
                AddressHandle b = f.cache.acquire(other, peer(1));
                assertNotEquals(a.nativeHandle(), b.nativeHandle());
                assertSame(other, b.pd());
                assertEquals(2, f.mock.counters().hardwareCreates());
                a.close();
                b.close();
            }
        }
    }

    @Test
    void validationHappensBeforeTheProvider() {
        try (MockFixture f = new MockFixture()) {
            assertEquals("pd", assertThrows(NullPointerException.class, () -> f.cache.acquire(null, peer(1))).getMessage());
            assertEquals("attributes", assertThrows(NullPointerException.class,
                    () -> f.cache.acquire(f.pd, null)).getMessage());
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> f.cache.acquire(f.pd, peer(1).toBuilder().portNum(2).build()));
            assertTrue(e.getMessage().startsWith("port_num: 2"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class,
                    () -> f.cache.acquire(f.pd, peer(1).toBuilder().sgidIndex(1).build()));
            assertTrue(e.getMessage().contains("valid 0..0"), e.getMessage());
            // Also when the GID is already cached: EFA ignores the field, but it is still invalid.
            try (AddressHandle h = f.cache.acquire(f.pd, peer(1))) {
                assertThrows(IllegalArgumentException.class,
                        () -> f.cache.acquire(f.pd, peer(1).toBuilder().sgidIndex(5).build()));
                assertNotNull(h);
            }
            assertEquals(1, f.mock.counters().createCalls());
        }
    }

    @Test
    void aFailedCreateIsForgottenAndRetried() {
        try (MockFixture f = new MockFixture()) {
            f.mock.failNextCreates(1, Errno.ENOMEM);
            VerbsException e = assertThrows(VerbsException.class, () -> f.cache.acquire(f.pd, peer(1)));
            assertEquals(Errno.ENOMEM, e.errno());
            assertEquals(0, f.cache.inspection().liveEntries());
            assertEquals(0, f.cache.inspection().liveHandles());
            assertEquals(1, f.cache.stats().createFailures());
            try (AddressHandle h = f.cache.acquire(f.pd, peer(1))) {
                assertEquals(0, h.ahn());
            }
            assertEquals(0, f.mock.counters().liveAhs());
        }
    }

    @Test
    void everyWaiterOnAFailingCreateGetsTheSameErrno() throws Exception {
        MockConfig slow = MockFixture.strictDevice().createLatencyNanos(TimeUnit.MILLISECONDS.toNanos(200)).build();
        try (MockFixture f = new MockFixture(slow)) {
            f.mock.failNextCreates(1, Errno.ETIME);
            int threads = 6;
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            CountDownLatch start = new CountDownLatch(1);
            List<Future<Errno>> results = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                results.add(pool.submit(() -> {
                    start.await();
                    try (AddressHandle h = f.cache.acquire(f.pd, peer(1))) {
                        return null;
                    } catch (VerbsException e) {
                        return e.errno();
                    }
                }));
            }
            start.countDown();
            for (Future<Errno> r : results) {
                assertEquals(Errno.ETIME, r.get(10, TimeUnit.SECONDS));
            }
            pool.shutdown();
            assertEquals(1, f.mock.counters().createCalls(), "waiters must not pile onto the device");
            assertEquals(0, f.cache.inspection().liveHandles());
            try (AddressHandle h = f.cache.acquire(f.pd, peer(1))) {
                assertEquals(2, f.mock.counters().createCalls());
            }
        }
    }

    @Test
    void aFailedDestroyKeepsTheAhForReuseAndCloseRetries() {
        try (MockFixture f = new MockFixture()) {
            AddressHandle a = f.cache.acquire(f.pd, peer(1));
            int ahn = a.ahn();
            f.mock.failNextDestroys(1, Errno.EIO);
            a.close();
            assertEquals(1, f.cache.stats().destroyFailures());
            assertEquals(1, f.mock.counters().liveAhs(), "the AH still exists after a failed destroy");
            AddressHandle b = f.cache.acquire(f.pd, peer(1));
            assertEquals(ahn, b.ahn(), "the kept AH is reused, not duplicated");
            assertEquals(1, f.mock.counters().hardwareCreates());
            assertEquals(0, f.mock.counters().duplicatesRefused());
            b.close();
            assertEquals(0, f.mock.counters().liveAhs());
            // A failure that persists until close is retried there.
            AddressHandle c = f.cache.acquire(f.pd, peer(2));
            f.mock.failNextDestroys(1, Errno.EIO);
            c.close();
            assertEquals(1, f.mock.counters().liveAhs());
        }
    }

    @Test
    void closingTheCacheDestroysEveryAhOnceAndReportsOpenHandles() {
        MockFixture f = new MockFixture();
        AddressHandle a = f.cache.acquire(f.pd, peer(1));
        AddressHandle b = f.cache.acquire(f.pd, peer(1));
        AddressHandle c = f.cache.acquire(f.pd, peer(2));
        f.cache.close();
        MockCounters m = f.mock.counters();
        assertEquals(2, m.hardwareDestroys());
        assertEquals(0, m.liveAhs());
        assertEquals(3, f.cache.stats().leaksReported());
        assertThrows(IllegalStateException.class, a::nativeHandle);
        a.close();
        b.close();
        c.close();
        f.cache.close();
        assertEquals(2, f.mock.counters().destroyCalls(), "nothing destroyed twice");
        assertThrows(IllegalStateException.class, () -> f.cache.acquire(f.pd, peer(1)));
        f.pd.close();
        f.device.close();
    }

    @Test
    void aPdHoldingCachedAhsRefusesDeallocation() {
        try (MockFixture f = new MockFixture()) {
            ProtectionDomain pd = f.device.allocatePd();
            AddressHandle h = f.cache.acquire(pd, peer(1));
            assertEquals(Errno.EBUSY, assertThrows(VerbsException.class, pd::close).errno());
            assertFalse(pd.isClosed());
            h.close();
            pd.close();
            assertThrows(IllegalStateException.class, () -> f.cache.acquire(pd, peer(1)));
            assertEquals(0, f.cache.inspection().liveHandles());
        }
    }

    @Test
    void strictDeviceWithoutTheCacheRefusesWhatTheCacheAvoids() {
        try (MockFixture f = new MockFixture(MockFixture.strictDevice().build())) {
            var first = f.pd.createAh(peer(1));
            assertEquals(Errno.EINVAL, assertThrows(VerbsException.class, () -> f.pd.createAh(peer(1))).errno());
            first.destroy();
            try (AddressHandle a = f.cache.acquire(f.pd, peer(1)); AddressHandle b = f.cache.acquire(f.pd, peer(1))) {
                assertEquals(a.ahn(), b.ahn());
            }
            assertEquals(1, f.mock.counters().duplicatesRefused(), "only the uncached attempt was refused");
        }
    }

    @Test
    void garbageCollectedHandlesAreReportedWithoutFreeingTheAh() throws InterruptedException {
        try (MockFixture f = new MockFixture()) {
            acquireAndDrop(f);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (f.cache.stats().leaksReported() == 0 && System.nanoTime() < deadline) {
                System.gc();
                Thread.sleep(20);
            }
            assertEquals(1, f.cache.stats().leaksReported());
            assertEquals(1, f.mock.counters().liveAhs(), "a leak is reported, never freed by the collector");
        }
    }

    private static void acquireAndDrop(MockFixture f) {
        f.cache.acquire(f.pd, peer(7));
    }

    @Test
    void closedHandlesAreNotReportedAsLeaks() throws InterruptedException {
        try (MockFixture f = new MockFixture()) {
            for (int i = 0; i < 100; i++) {
                f.cache.acquire(f.pd, peer(i % 3 + 1)).close();
            }
            for (int i = 0; i < 5; i++) {
                System.gc();
                Thread.sleep(20);
            }
            assertEquals(0, f.cache.stats().leaksReported());
        }
    }

    @Test
    void statsRecordCreateTimes() {
        MockConfig slow = MockFixture.strictDevice().createLatencyNanos(TimeUnit.MILLISECONDS.toNanos(2)).build();
        try (MockFixture f = new MockFixture(slow)) {
            for (int i = 0; i < 3; i++) {
                f.cache.acquire(f.pd, peer(i + 1)).close();
            }
            CacheStats s = f.cache.stats();
            assertEquals(3, s.hardwareCreates());
            assertEquals(3, s.hardwareDestroys());
            assertEquals(1, f.cache.inspection().peakEntries());
            assertTrue(s.maxCreateNanos() >= TimeUnit.MILLISECONDS.toNanos(2), "max " + s.maxCreateNanos());
            assertTrue(s.totalCreateNanos() >= 3 * TimeUnit.MILLISECONDS.toNanos(2));
        }
    }
}
