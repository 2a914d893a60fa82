package org.efaah.cache;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Millions of random operations over eight threads on the mock, every invariant of
 * {@link RandomWorkload} checked. The count comes from {@value #PROPERTY}: the default run (and so
 * CI) does {@value #CI_OPERATIONS}; {@code scripts/soak [operations] [seed]} runs longer.
 */
class SoakTest {
    static final String PROPERTY = "efaah.soak.operations";
    static final long CI_OPERATIONS = 10_000_000;

    @Test
    void randomOperationsOverEightThreadsKeepEveryInvariant() throws Exception {
        long operations = Long.getLong(PROPERTY, CI_OPERATIONS);
        long seed = Long.getLong("efaah.soak.seed", 20260603L);
        // Generous: a soak that is merely slow on a loaded machine is not a failure of the cache,
        // but one that never ends is.
        long timeout = TimeUnit.SECONDS.toNanos(120) + operations * 2_000;
        RandomWorkload.Report r = new RandomWorkload(new RandomWorkload.Settings(8, operations, 16, 24, 0, 0, 0.01, 0.01,
                seed, timeout)).run();
        System.out.printf("soak: %,d operations (%,d acquires, %,d failed with injected errnos), 8 threads, "
                        + "%,d hardware creates, %,d injected destroy failures, %.1f s, %,.0f ops/s, seed %d%n",
                r.operations(), r.acquires(), r.failedAcquires(), r.device().hardwareCreates(),
                r.injectedDestroyFailures(), r.elapsedNanos() / 1e9, r.operations() / (r.elapsedNanos() / 1e9), seed);
        assertTrue(r.device().hardwareCreates() > 1000, "the soak churned AHs: " + r.device());
        assertTrue(r.injectedDestroyFailures() > 0 && r.injectedCreateFailures() > 0, "faults were injected");
    }
}
