package org.efaah.verbs.mock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.HardwareAddressHandle;
import org.efaah.verbs.ProtectionDomain;
import org.junit.jupiter.api.Test;

/**
 * The mock's admin queue ({@link MockConfig#adminQueueDepth()}): a device works on at most that
 * many AH creates at once, so concurrent creates cannot finish sooner than the queue allows. The
 * assertions are lower bounds on elapsed time, which a slow machine cannot break.
 */
class MockAdminQueueTest {
    private static final long LATENCY_NANOS = 30_000_000;

    /** Wall time of {@code threads} concurrent creates of distinct AHs, one per thread. */
    private static long concurrentCreates(int depth, int threads) throws Exception {
        MockConfig config = MockConfig.builder().createLatencyNanos(LATENCY_NANOS).adminQueueDepth(depth).build();
        try (Device device = Device.openFirst(new MockVerbsProvider(config))) {
            ProtectionDomain pd = device.allocatePd();
            CountDownLatch start = new CountDownLatch(1);
            AtomicReference<Throwable> failure = new AtomicReference<>();
            List<HardwareAddressHandle> made = java.util.Collections.synchronizedList(new ArrayList<>());
            List<Thread> workers = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                AddressHandleAttributes peer = AddressHandleAttributes.forGid("fe80::" + (i + 1));
                Thread t = new Thread(() -> {
                    try {
                        start.await();
                        made.add(pd.createAh(peer));
                    } catch (Throwable e) {
                        failure.set(e);
                    }
                });
                t.start();
                workers.add(t);
            }
            long t0 = System.nanoTime();
            start.countDown();
            for (Thread t : workers) {
                t.join();
            }
            long elapsed = System.nanoTime() - t0;
            if (failure.get() != null) {
                throw new AssertionError(failure.get());
            }
            assertEquals(threads, made.size());
            for (HardwareAddressHandle ah : made) {
                ah.destroy();
            }
            pd.close();
            return elapsed;
        }
    }

    @Test
    void aDepthOneDeviceRunsOneCreateAtATime() throws Exception {
        long elapsed = concurrentCreates(1, 4);
        assertTrue(elapsed >= 4 * LATENCY_NANOS, "4 creates on a depth-1 queue took " + elapsed / 1e6 + " ms");
    }

    @Test
    void aDepthTwoDeviceRunsTwoCreatesAtATime() throws Exception {
        long elapsed = concurrentCreates(2, 4);
        assertTrue(elapsed >= 2 * LATENCY_NANOS, "4 creates on a depth-2 queue took " + elapsed / 1e6 + " ms");
    }

    @Test
    void theDepthIsCheckedAndReadFromItsProperty() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> MockConfig.builder().adminQueueDepth(-1).build());
        assertEquals("adminQueueDepth: -1 is out of range; valid 0..4096", e.getMessage());
        assertEquals(0, MockConfig.defaults().adminQueueDepth(), "no limit unless asked for");
        System.setProperty(MockConfig.PROPERTY_PREFIX + "adminQueueDepth", "4");
        try {
            assertEquals(4, MockConfig.fromSystemProperties().adminQueueDepth());
            assertEquals(4, MockConfig.fromSystemProperties().toBuilder().build().adminQueueDepth());
        } finally {
            System.clearProperty(MockConfig.PROPERTY_PREFIX + "adminQueueDepth");
        }
    }
}
