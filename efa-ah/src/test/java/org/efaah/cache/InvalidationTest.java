package org.efaah.cache;

import static org.efaah.cache.MockFixture.peer;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.efaah.fixture.LogCapture;
import org.efaah.verbs.DeviceEvent;
import org.efaah.verbs.HardwareAddressHandle;
import org.efaah.verbs.mock.DuplicatePolicy;
import org.efaah.verbs.mock.MockConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Issue 10 item 3, the cache side: invalidation by call and by device event, on a device whose
 * AHs can go stale (a RoCE one: rxe, mlx5). EFA's invalidation is {@link EfaInvalidationTest}'s.
 */
@ExtendWith(LogCapture.Quiet.class)
@ExtendWith(CacheInvariants.class)
class InvalidationTest {
    /** A RoCE device, which takes a second AH for a destination while the first is held. */
    static final MockConfig ROCE = MockFixture.strictDevice().efa(false).duplicatePolicy(DuplicatePolicy.LEGACY).build();

    @Test
    void aHandleOutKeepsItsAhNewAcquiresGetAFreshOneAndTheOldGoesAtItsLastClose() {
        try (FaultyFixture f = FaultyFixture.withRetention(ROCE, 3600, 100)) {
            AddressHandle old = f.cache.acquire(f.pd, peer(1));
            AddressHandle oldTwin = old.duplicate();
            HardwareAddressHandle oldHw = old.hardware();
            assertEquals(1, f.cache.invalidate(f.pd, peer(1).dgid()));
            AddressHandle fresh = f.cache.acquire(f.pd, peer(1));
            assertNotEquals(oldHw, fresh.hardware(), "a fresh AH after the invalidation");
            assertEquals(oldHw, old.hardware(), "the handle out keeps its AH");
            AddressHandle thirdOfOld = old.duplicate();
            assertEquals(oldHw, thirdOfOld.hardware(), "a duplicate of a handle out works");
            old.close();
            oldTwin.close();
            assertTrue(!oldHw.isDestroyed());
            thirdOfOld.close();
            assertTrue(oldHw.isDestroyed(), "destroyed at its last close, not retained");
            assertEquals(1, f.cache.stats().destroysBy(RemovalCause.INVALIDATED));
            long freshNative = fresh.nativeHandle();
            fresh.close();
            try (AddressHandle again = f.cache.acquire(f.pd, peer(1))) {
                assertEquals(freshNative, again.nativeHandle(), "the fresh one is retained");
            }
            assertEquals(1, f.cache.stats().invalidated());
        }
    }

    @Test
    void aRetainedAhIsDestroyedAtOnce() {
        try (FaultyFixture f = FaultyFixture.withRetention(3600, 100)) {
            f.cache.acquire(f.pd, peer(1)).close();
            f.cache.acquire(f.pd, peer(2)).close();
            assertEquals(2, f.cache.invalidateAll());
            assertEquals(0, f.provider.mock.counters().liveAhs());
            assertEquals(0, f.cache.inspection().retainedEntries());
            assertEquals(2, f.cache.stats().destroysBy(RemovalCause.INVALIDATED));
            f.cache.acquire(f.pd, peer(1)).close();
            assertEquals(3, f.provider.mock.counters().hardwareCreates());
        }
    }

    @Test
    void invalidateMatchesOnlyItsPdAndGid() {
        try (FaultyFixture f = FaultyFixture.withRetention(3600, 100)) {
            var other = f.device.allocatePd();
            try {
                f.cache.acquire(f.pd, peer(1)).close();
                f.cache.acquire(f.pd, peer(2)).close();
                f.cache.acquire(other, peer(1)).close();
                assertEquals(1, f.cache.invalidate(f.pd, peer(1).dgid()));
                assertEquals(2, f.provider.mock.counters().liveAhs());
                assertEquals(0, f.cache.invalidate(f.pd, peer(1).dgid()), "nothing left to invalidate");
                assertEquals(1, f.cache.invalidate(other));
                assertEquals(1, f.provider.mock.counters().liveAhs());
                assertEquals(1, f.cache.invalidatePort(f.device, 1));
                assertEquals(0, f.provider.mock.counters().liveAhs());
                other.close(); // nothing of it is kept any more
                other = null;
            } finally {
                f.cache.close();
                if (other != null) {
                    other.close();
                }
            }
        }
    }

    @Test
    void gidChangeAndPortEventsInvalidateThatPort() {
        for (DeviceEvent.Kind kind : new DeviceEvent.Kind[] {DeviceEvent.Kind.GID_CHANGE, DeviceEvent.Kind.PORT_ERR,
                DeviceEvent.Kind.PORT_ACTIVE}) {
            try (FaultyFixture f = FaultyFixture.withRetention(ROCE, 3600, 100)) {
                AddressHandle held = f.cache.acquire(f.pd, peer(1));
                f.cache.acquire(f.pd, peer(2)).close();
                f.cache.onDeviceEvent(new DeviceEvent(f.device, kind, 1));
                assertEquals(2, f.cache.stats().invalidated(), kind.name());
                assertEquals(1, f.provider.mock.counters().liveAhs(), "the retained one went at once");
                try (AddressHandle fresh = f.cache.acquire(f.pd, peer(1))) {
                    assertNotEquals(held.hardware(), fresh.hardware());
                }
                held.close();
            }
        }
    }

    @Test
    void otherEventsAndOtherPortsChangeNothing() {
        try (FaultyFixture f = FaultyFixture.withRetention(3600, 100)) {
            f.cache.acquire(f.pd, peer(1)).close();
            f.cache.onDeviceEvent(new DeviceEvent(f.device, DeviceEvent.Kind.GID_CHANGE, 2));
            f.cache.onDeviceEvent(new DeviceEvent(f.device, DeviceEvent.Kind.LID_CHANGE, 1));
            f.cache.onDeviceEvent(new DeviceEvent(f.device, DeviceEvent.Kind.QP_FATAL, 0));
            assertEquals(0, f.cache.stats().invalidated());
            assertEquals(1, f.provider.mock.counters().liveAhs());
        }
    }

    @Test
    void afterDeviceFatalAcquiresFailClearlyAndCloseStillWorks() {
        FaultyFixture f = FaultyFixture.withRetention(3600, 100);
        AddressHandle held = f.cache.acquire(f.pd, peer(1));
        f.cache.acquire(f.pd, peer(2)).close();
        f.cache.onDeviceEvent(new DeviceEvent(f.device, DeviceEvent.Kind.DEVICE_FATAL, 0));
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> f.cache.acquire(f.pd, peer(1)));
        assertTrue(e.getMessage().contains("DEVICE_FATAL") && e.getMessage().contains(f.device.name()), e.getMessage());
        assertThrows(IllegalStateException.class, () -> f.cache.acquire(f.pd, peer(3)));
        held.close();
        assertEquals(0, f.provider.mock.counters().liveAhs());
        f.cache.close();
        f.pd.close();
        f.device.close();
    }

    /**
     * Issue 22, seen item: an invalidation that meets an entry while its create is in progress,
     * and the create then fails: the entry was counted as invalidated though no AH was ever made,
     * and could stay in the detached set until close. Counted only once its AH exists.
     */
    @Test
    void anEntryInvalidatedWhileItsCreateFailsIsNeitherCountedNorKept() throws Exception {
        try (FaultyFixture f = FaultyFixture.withRetention(ROCE, 3600, 100)) {
            java.util.concurrent.CountDownLatch gate = new java.util.concurrent.CountDownLatch(1);
            java.util.concurrent.CountDownLatch entered = new java.util.concurrent.CountDownLatch(1);
            f.provider.createGate = gate;
            f.provider.createEntered = entered;
            java.util.concurrent.CompletableFuture<Throwable> acquire = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                try {
                    f.cache.acquire(f.pd, peer(1)).close();
                    return null;
                } catch (Throwable t) {
                    return t;
                }
            });
            assertTrue(entered.await(10, java.util.concurrent.TimeUnit.SECONDS));
            assertEquals(1, f.cache.invalidate(f.pd, peer(1).dgid()), "the entry being created is invalidated");
            f.provider.failNextCreate(new org.efaah.verbs.VerbsException("ibv_create_ah", org.efaah.verbs.Errno.ETIMEDOUT, "test"));
            f.provider.createEntered = null;
            f.provider.createGate = null;
            gate.countDown();
            Throwable failed = acquire.get(10, java.util.concurrent.TimeUnit.SECONDS);
            assertTrue(failed instanceof org.efaah.verbs.VerbsException, String.valueOf(failed));
            assertEquals(0, f.cache.stats().invalidated(), "no AH was made, none invalidated");
            assertTrue(f.cache.detached.isEmpty());
            try (AddressHandle h = f.cache.acquire(f.pd, peer(1))) {
                h.nativeHandle();
            }
        }
    }

    /** The same race when the create succeeds: counted once, the AH reaches its acquirer and goes at its close. */
    @Test
    void anEntryInvalidatedWhileCreatedIsCountedOnceAndGoesAtItsLastClose() throws Exception {
        try (FaultyFixture f = FaultyFixture.withRetention(ROCE, 3600, 100)) {
            java.util.concurrent.CountDownLatch gate = new java.util.concurrent.CountDownLatch(1);
            java.util.concurrent.CountDownLatch entered = new java.util.concurrent.CountDownLatch(1);
            f.provider.createGate = gate;
            f.provider.createEntered = entered;
            java.util.concurrent.CompletableFuture<AddressHandle> acquire =
                    java.util.concurrent.CompletableFuture.supplyAsync(() -> f.cache.acquire(f.pd, peer(1)));
            assertTrue(entered.await(10, java.util.concurrent.TimeUnit.SECONDS));
            assertEquals(1, f.cache.invalidate(f.pd, peer(1).dgid()));
            f.provider.createEntered = null;
            f.provider.createGate = null;
            gate.countDown();
            AddressHandle h = acquire.get(10, java.util.concurrent.TimeUnit.SECONDS);
            h.nativeHandle(); // began before the invalidation returned: may get that AH
            assertEquals(1, f.cache.stats().invalidated());
            h.close();
            assertEquals(0, f.provider.mock.counters().liveAhs(), "destroyed at its last close, not retained");
            assertEquals(1, f.cache.stats().destroysBy(RemovalCause.INVALIDATED));
            assertEquals(0, f.cache.inspection().retainedEntries());
            assertTrue(f.cache.detached.isEmpty());
        }
    }
}
