package org.efaah.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

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
                try (AddressHandle byAhn = f.cache.acquireByAhn(f.pd, 0)) {
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
            assertNull(f.cache.acquireByAhn(f.pd, 5));
            AddressHandle h = f.cache.acquire(f.pd, MockFixture.peer(1));
            int ahn = h.ahn();
            h.close(); // the last reference: the AH is destroyed, and its AHN forgotten
            assertNull(f.cache.acquireByAhn(f.pd, ahn));
            assertThrows(IllegalArgumentException.class, () -> f.cache.acquireByAhn(f.pd, 0xFFFF));
            assertThrows(IllegalArgumentException.class, () -> f.cache.acquireByAhn(f.pd, -1));
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
                try (AddressHandle found = f.cache.acquireByAhn(f.pd, ahn)) {
                    assertEquals(MockFixture.peer(2).dgid(), found.dgid());
                }
                assertNull(f.cache.acquireByAhn(other, ahn));
            }
        }
    }
}
