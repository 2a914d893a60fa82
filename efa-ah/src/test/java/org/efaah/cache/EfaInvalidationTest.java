package org.efaah.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.efaah.fixture.LogCapture;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.DeviceEvent;
import org.efaah.verbs.Gid;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockCounters;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 16 item 6: invalidation on EFA, which holds one AH per (PD, GID) on new hardware. A held
 * AH that was invalidated is the one a new acquire gets; it goes at its last close, and the next
 * acquire makes one new AH. No acquire fails because of an invalidation. Before the fix the
 * acquire after the invalidation failed with EINVAL ("device already holds AHN 0").
 */
@ExtendWith(CacheInvariants.class)
class EfaInvalidationTest {
    private static final AddressHandleAttributes PEER = AddressHandleAttributes.forGid("fe80::7:6");

    private static FaultyFixture fixture(boolean retention) {
        MockConfig strict = MockFixture.strictDevice().build();
        return retention ? FaultyFixture.withRetention(strict, 3600, 100)
                : new FaultyFixture(strict, AddressHandleCache.builder().leakDetection(LeakDetection.PARANOID));
    }

    @ParameterizedTest(name = "retention {0}")
    @ValueSource(booleans = {false, true})
    void anInvalidatedAhStillHeldIsTheOneANewAcquireGetsAndGoesAtItsLastClose(boolean retention) {
        try (FaultyFixture f = fixture(retention)) {
            assertTrue(f.device.isEfa());
            AddressHandle r1 = f.cache.acquire(f.pd, PEER);
            Gid gid = r1.dgid();
            assertEquals(1, f.cache.invalidate(f.pd, gid));
            AddressHandle r2 = f.cache.acquire(f.pd, PEER);
            assertEquals(r1.nativeHandle(), r2.nativeHandle(), "the AH the device allows");
            AddressHandle byAhn = f.cache.acquireByAhn(f.pd, r1.ahn(), f.cache.ahnReuseMark());
            assertNotNull(byAhn, "found by its AHN too");
            assertEquals(1, f.provider.mock.counters().hardwareCreates());
            r1.close();
            byAhn.close();
            assertEquals(1, f.provider.mock.counters().liveAhs(), "still held by r2");
            r2.close();
            assertEquals(0, f.provider.mock.counters().liveAhs(), "destroyed at its last close, even with retention");
            assertEquals(0, f.cache.inspection().retainedEntries());
            try (AddressHandle r3 = f.cache.acquire(f.pd, PEER)) {
                r3.nativeHandle();
            }
            MockCounters m = f.provider.mock.counters();
            assertEquals(2, m.hardwareCreates(), "exactly one new hardware AH after the last old handle closed");
            assertEquals(0, m.duplicatesRefused());
            assertEquals(0, f.cache.stats().createFailures(), "no acquire failed");
            assertEquals(1, f.cache.stats().destroysBy(RemovalCause.INVALIDATED));
        }
    }

    /** A PORT_ACTIVE (which real EFA never raises) leaves every peer with open handles reachable. */
    @ParameterizedTest(name = "retention {0}")
    @ValueSource(booleans = {false, true})
    void aPortEventOnEfaBreaksNoPeerWithOpenHandles(boolean retention) {
        try (FaultyFixture f = fixture(retention); LogCapture log = LogCapture.of(AddressHandleCache.class)) {
            AddressHandle held = f.cache.acquire(f.pd, PEER);
            AddressHandle other = f.cache.acquire(f.pd, AddressHandleAttributes.forGid("fe80::7:7"));
            f.cache.onDeviceEvent(new DeviceEvent(f.device, DeviceEvent.Kind.PORT_ACTIVE, 1));
            for (int i = 0; i < 3; i++) {
                try (AddressHandle again = f.cache.acquire(f.pd, PEER);
                     AddressHandle otherAgain = f.cache.acquire(f.pd, AddressHandleAttributes.forGid("fe80::7:7"))) {
                    assertEquals(held.nativeHandle(), again.nativeHandle());
                    assertEquals(other.nativeHandle(), otherAgain.nativeHandle());
                }
            }
            held.close();
            other.close();
            assertEquals(0, f.cache.stats().createFailures());
            assertEquals(0, f.provider.mock.counters().duplicatesRefused());
            assertEquals(0, f.provider.mock.counters().liveAhs(), "both went at their last close");
        }
    }
}
