package org.efaah.cache;

import static org.efaah.cache.MockFixture.peer;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.efaah.verbs.mock.MockConfig;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** An acquire of key K while K's hardware AH is being destroyed, on a strict device. */
@ExtendWith(CacheInvariants.class)
class CreateDestroyRaceTest {

    private static final long SLOW = TimeUnit.MILLISECONDS.toNanos(150);

    @Test
    void acquireDuringDestroyWaitsAndCreatesAnew() throws Exception {
        MockConfig slowDestroy = MockFixture.strictDevice().destroyLatencyNanos(SLOW).build();
        try (MockFixture f = new MockFixture(slowDestroy)) {
            AddressHandle first = f.cache.acquire(f.pd, peer(1));
            CompletableFuture<Void> closing = CompletableFuture.runAsync(first::close);
            // Wait until the destroy has reached the device and is sleeping there.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (f.mock.counters().destroyCalls() == 0 && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            assertEquals(1, f.mock.counters().destroyCalls());
            long start = System.nanoTime();
            try (AddressHandle second = f.cache.acquire(f.pd, peer(1))) {
                assertTrue(System.nanoTime() - start > SLOW / 3, "the acquire waited for the destroy");
                // The device counts the destroy inside the entry lock; the closing future completes
                // only after close() returns, which may be after this thread has run on.
                assertEquals(1, f.mock.counters().hardwareDestroys(), "the destroy finished before the new create");
                assertNotNull(second.toString());
                second.nativeHandle();
                assertEquals(2, f.mock.counters().hardwareCreates(), "a new AH, not the destroyed one");
                assertEquals(0, f.mock.counters().duplicatesRefused());
                assertEquals(1, f.mock.counters().liveAhs());
            }
            closing.get(5, TimeUnit.SECONDS);
        }
    }

    @RepeatedTest(20)
    void closeAndReacquireRacesNeverDuplicateOrDangle() throws Exception {
        MockConfig slow = MockFixture.strictDevice().createLatencyNanos(20_000).destroyLatencyNanos(20_000).build();
        try (MockFixture f = new MockFixture(slow, LeakDetection.DISABLED)) {
            Runnable churn = () -> {
                for (int i = 0; i < 200; i++) {
                    try (AddressHandle h = f.cache.acquire(f.pd, peer(1))) {
                        h.nativeHandle();
                    }
                }
            };
            CompletableFuture<Void> a = CompletableFuture.runAsync(churn);
            CompletableFuture<Void> b = CompletableFuture.runAsync(churn);
            churn.run();
            a.get(30, TimeUnit.SECONDS);
            b.get(30, TimeUnit.SECONDS);
            assertEquals(0, f.mock.counters().duplicatesRefused());
            assertEquals(0, f.mock.counters().liveAhs());
            assertEquals(f.mock.counters().hardwareCreates(), f.mock.counters().hardwareDestroys());
            assertEquals(0, f.cache.inspection().liveHandles());
        }
    }
}
