package org.efaah.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The seeded randomized multi-threaded check of the cache with faults injected, as CI runs it. */
class StressRunTest {

    @Test
    void eightThreadsWithFaultsKeepEveryInvariant() throws InterruptedException {
        StressRun.Result r = new StressRun(new StressRun.Settings(8, 32, 2, TimeUnit.SECONDS.toNanos(5), 2_000_000,
                20261129L, 0.02, 2_000)).run();
        assertEquals(java.util.List.of(), r.violations());
        assertTrue(r.injectedFailures() > 0, "faults were injected");
        assertTrue(r.cache().destroyFailures() > 0, "destroy faults were injected");
        assertTrue(r.cache().hits() > r.cache().misses(), "the run exercised hits");
        assertEquals(0, r.device().liveAhs());
        assertEquals(0, r.device().duplicatesRefused());
    }

    @Test
    void manyKeysFewThreadsNoLatency() throws InterruptedException {
        StressRun.Result r = new StressRun(new StressRun.Settings(3, 2_000, 3, TimeUnit.SECONDS.toNanos(3), 1_000_000,
                5, 0.01, 0)).run();
        assertEquals(java.util.List.of(), r.violations());
        assertEquals(r.device().hardwareCreates(), r.device().hardwareDestroys());
    }
}
