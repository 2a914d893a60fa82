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

    /**
     * Issue 29 item 7, stress --provider native: no fault can be injected into a real device, and it
     * refuses AHs to GIDs that do not exist (EFA: EINVAL), so the peers are the GIDs of the device's
     * port 1 (at most --peers). A mock stands in for the device here; it is driven as a real one is.
     */
    @Test
    void onAnotherProviderNoFaultIsInjectedAndThePeersAreTheDevicesGids() {
        org.efaah.verbs.mock.MockVerbsProvider device = new org.efaah.verbs.mock.MockVerbsProvider(
                org.efaah.verbs.mock.MockConfig.builder().gidTableLength(3).build());
        StressRun.Result r = new StressRun(new StressRun.Settings(4, 64, 2, TimeUnit.SECONDS.toNanos(2), 100_000, 3, 0,
                0)).runOn(device);
        assertEquals(java.util.List.of(), r.violations());
        assertEquals(3, r.peers(), "the port's 3 GIDs, not 64 invented ones");
        assertEquals(0, r.injectedFailures());
        assertEquals(null, r.device(), "a real device's table cannot be read");
        assertTrue(r.acquires() > 0 && r.cache().hits() > 0, "the run exercised the cache");
        assertEquals(r.cache().hardwareCreates(), r.cache().hardwareDestroys());
        assertEquals(r.cache().hardwareCreates(), device.counters().hardwareCreates(), "every create reached the device");
        assertEquals(0, device.counters().liveAhs());
        // At most --peers of them.
        assertEquals(2, new StressRun(new StressRun.Settings(1, 2, 1, TimeUnit.SECONDS.toNanos(1), 1_000, 3, 0, 0))
                .runOn(device).peers());
    }
}
