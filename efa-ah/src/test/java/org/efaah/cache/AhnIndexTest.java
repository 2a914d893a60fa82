package org.efaah.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.efaah.verbs.ProtectionDomain;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Issue 9 item 2: the cache finds a live AH by (PD, AHN) as a hit, without a device call. */
@ExtendWith(CacheInvariants.class)
class AhnIndexTest {

    @Test
    void aLiveAhIsFoundByItsAhnAsAHitAndAhnZeroIsANumber() {
        try (MockFixture f = new MockFixture()) {
            try (AddressHandle first = f.cache.acquire(f.pd, MockFixture.peer(1))) {
                assertEquals(0, first.ahn(), "the mock hands out AHN 0 first");
                long creates = f.mock.counters().createCalls();
                long hits = f.cache.stats().hits();
                try (AddressHandle byAhn = f.cache.acquireByAhn(f.pd, 0, f.cache.ahnReuseMark())) {
                    assertNotNull(byAhn);
                    assertSame(first.hardware(), byAhn.hardware());
                    assertEquals(first.dgid(), byAhn.dgid());
                }
                assertEquals(creates, f.mock.counters().createCalls(), "no device call");
                assertEquals(hits + 1, f.cache.stats().hits());
            }
        }
    }

    @Test
    void anAhnWithoutALiveAhIsNullAnd0xFFFFIsRefused() {
        try (MockFixture f = new MockFixture()) {
            assertNull(f.cache.acquireByAhn(f.pd, 5, f.cache.ahnReuseMark()));
            org.junit.jupiter.api.Assertions.assertThrows(NullPointerException.class,
                    () -> f.cache.acquireByAhn(null, 5, f.cache.ahnReuseMark()), "a null PD");
            AddressHandle h = f.cache.acquire(f.pd, MockFixture.peer(1));
            int ahn = h.ahn();
            h.close(); // the last reference: the AH is destroyed, and its AHN forgotten
            assertNull(f.cache.acquireByAhn(f.pd, ahn, f.cache.ahnReuseMark()));
            long mark = f.cache.ahnReuseMark();
            assertThrows(IllegalArgumentException.class, () -> f.cache.acquireByAhn(f.pd, 0xFFFF, mark));
            assertThrows(IllegalArgumentException.class, () -> f.cache.acquireByAhn(f.pd, -1, mark));
        }
    }

    @Test
    void aReusedAhnNamesTheNewAhAndAnotherPdsAhnsAreNotSeen() {
        try (MockFixture f = new MockFixture(MockFixture.strictDevice().build())) {
            AddressHandle old = f.cache.acquire(f.pd, MockFixture.peer(1));
            int ahn = old.ahn();
            old.close();
            try (AddressHandle fresh = f.cache.acquire(f.pd, MockFixture.peer(2));
                 ProtectionDomain other = f.device.allocatePd()) {
                assertEquals(ahn, fresh.ahn(), "the mock reuses the lowest free AHN");
                try (AddressHandle found = f.cache.acquireByAhn(f.pd, ahn, f.cache.ahnReuseMark())) {
                    assertEquals(MockFixture.peer(2).dgid(), found.dgid());
                }
                assertNull(f.cache.acquireByAhn(other, ahn, f.cache.ahnReuseMark()));
            }
        }
    }

    /**
     * Issue 28 case 11 (the sender at arrival): a look-up with a mark vouches only for AHNs that
     * were not given to a new AH after it; first uses of a number and other numbers are untouched.
     */
    @Test
    void anAhnGivenAgainAfterTheMarkIsNotVouchedForOthersAre() {
        try (MockFixture f = new MockFixture(MockFixture.strictDevice().build())) {
            long before = f.cache.ahnReuseMark();
            AddressHandle old = f.cache.acquire(f.pd, MockFixture.peer(1));
            int ahn = old.ahn();
            try (AddressHandle steady = f.cache.acquire(f.pd, MockFixture.peer(3))) {
                try (AddressHandle found = f.cache.acquireByAhn(f.pd, ahn, before)) {
                    assertSame(old.hardware(), found.hardware(), "a first use of a number is no reuse");
                }
                old.close();
                try (AddressHandle fresh = f.cache.acquire(f.pd, MockFixture.peer(2))) {
                    assertEquals(ahn, fresh.ahn(), "the mock reuses the lowest free AHN");
                    assertTrue(f.cache.ahnReuseMark() > before);
                    assertNull(f.cache.acquireByAhn(f.pd, ahn, before), "old's or fresh's: cannot be told");
                    try (AddressHandle now = f.cache.acquireByAhn(f.pd, ahn, f.cache.ahnReuseMark())) {
                        assertSame(fresh.hardware(), now.hardware());
                    }
                    try (AddressHandle other = f.cache.acquireByAhn(f.pd, steady.ahn(), before)) {
                        assertSame(steady.hardware(), other.hardware(), "another number's reuse changes nothing");
                    }
                }
            }
            long now = f.cache.ahnReuseMark();
            IllegalArgumentException ahead = assertThrows(IllegalArgumentException.class,
                    () -> f.cache.acquireByAhn(f.pd, ahn, now + 1));
            assertEquals("ahnReuseMark: " + (now + 1) + " is out of range; valid 0.." + now
                    + " (a value ahnReuseMark() returned)", ahead.getMessage());
            assertThrows(IllegalArgumentException.class, () -> f.cache.acquireByAhn(f.pd, ahn, -1));
        }
    }
}
