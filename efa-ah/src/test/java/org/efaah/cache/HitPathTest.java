package org.efaah.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import org.efaah.verbs.AddressHandleAttributes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The lock-free hit path skips validation only for an attributes object the device validated
 * before ({@code Device.hasValidated}); any other object, even one with the same key, is checked
 * before it can share the AH. And the per-caller handle stays safe: closed means refused, close once.
 */
@ExtendWith(CacheInvariants.class)
class HitPathTest {
    @Test
    void aHitWithOtherAttributesOfTheSameDgidIsStillValidated() {
        try (MockFixture f = new MockFixture(MockFixture.strictDevice().build(), LeakDetection.DISABLED)) {
            AddressHandleAttributes good = MockFixture.peer(1);
            try (AddressHandle keep = f.cache.acquire(f.pd, good)) {
                // Same dgid, so the same EFA key and a live entry, but port 2 does not exist.
                AddressHandleAttributes badPort = good.toBuilder().portNum(2).build();
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                        () -> f.cache.acquire(f.pd, badPort));
                assertTrue(e.getMessage().startsWith("port_num: 2 is out of range"), e.getMessage());
                AddressHandleAttributes badSgid = good.toBuilder().sgidIndex(5).build();
                e = assertThrows(IllegalArgumentException.class, () -> f.cache.acquire(f.pd, badSgid));
                assertTrue(e.getMessage().startsWith("sgid_index: 5 is out of range"), e.getMessage());
                assertEquals(1, f.cache.inspection().liveHandles(), "a refused acquire must take no reference");
                // An equal but distinct object is valid and shares the AH.
                try (AddressHandle again = f.cache.acquire(f.pd, MockFixture.peer(1))) {
                    assertEquals(keep.nativeHandle(), again.nativeHandle());
                }
            }
            assertEquals(1, f.mock.counters().createCalls());
        }
    }

    @Test
    void aHandleClosedByManyThreadsAtOnceReleasesOneReference() throws Exception {
        try (MockFixture f = new MockFixture(MockFixture.strictDevice().build(), LeakDetection.DISABLED)) {
            AddressHandle keep = f.cache.acquire(f.pd, MockFixture.peer(1));
            for (int round = 0; round < 200; round++) {
                AddressHandle h = f.cache.acquire(f.pd, MockFixture.peer(1));
                CountDownLatch start = new CountDownLatch(1);
                Thread[] closers = new Thread[4];
                for (int i = 0; i < closers.length; i++) {
                    closers[i] = new Thread(() -> {
                        try {
                            start.await();
                        } catch (InterruptedException e) {
                            return;
                        }
                        h.close();
                    });
                    closers[i].start();
                }
                start.countDown();
                for (Thread t : closers) {
                    t.join();
                }
                assertTrue(h.isClosed());
                assertThrows(IllegalStateException.class, h::nativeHandle);
                assertEquals(1, f.cache.inspection().liveHandles(), "round " + round);
            }
            assertFalse(keep.isClosed());
            keep.nativeHandle();
            keep.close();
            assertEquals(0, f.mock.counters().liveAhs());
        }
    }
}
