package org.efaah.bench;

import java.util.concurrent.TimeUnit;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.infra.Blackhole;
import org.openjdk.jmh.infra.ThreadParams;

/**
 * Hits under contention; run with {@code -t N} (scripts/bench runs 1, 2, 4 and 8). Every key is
 * held by a keeper handle, so all operations are hits. Figures are ns per operation per thread.
 * Each hit uses its handle in place, as around a send (see {@link HitPathBench}).
 *
 * <ul>
 *   <li>{@code hot*}: every thread acquires and closes the same key, so all of them update one
 *       entry's reference count (efa-ah) or take one lock (baseline).
 *   <li>{@code spread*}: {@value #SPREAD_KEYS} keys, each thread cycling over its own slice, so
 *       efa-ah threads share no entry while the baseline's still share its lock.
 * </ul>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class ContentionBench {
    static final int SPREAD_KEYS = 10_000;

    private Device device;
    private ProtectionDomain pdEfaAh;
    private ProtectionDomain pdBaseline;
    private AddressHandleCache cache;
    private LockedAhTable baseline;
    private AddressHandleAttributes[] keys;
    private AddressHandle[] keepers;
    private LockedAhTable.Slot[] baselineKeepers;

    @Setup
    public void setUp() {
        device = Device.openFirst(new MockVerbsProvider(MockConfig.builder()
                .createLatencyNanos(0).maxAh(65536).build()));
        pdEfaAh = device.allocatePd();
        pdBaseline = device.allocatePd();
        cache = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED).build();
        baseline = new LockedAhTable();
        keys = Keys.keys(SPREAD_KEYS);
        keepers = new AddressHandle[SPREAD_KEYS];
        baselineKeepers = new LockedAhTable.Slot[SPREAD_KEYS];
        for (int i = 0; i < SPREAD_KEYS; i++) {
            keepers[i] = cache.acquire(pdEfaAh, keys[i]);
            baselineKeepers[i] = baseline.acquire(pdBaseline, keys[i]);
        }
    }

    @TearDown
    public void tearDown() {
        for (int i = 0; i < SPREAD_KEYS; i++) {
            keepers[i].close();
            baseline.release(baselineKeepers[i]);
        }
        cache.close();
        device.close();
    }

    /** This thread's slice of the spread keys. */
    @State(Scope.Thread)
    public static class Slice {
        int from;
        int length;
        int i;

        @Setup
        public void setUp(ThreadParams threads) {
            int n = threads.getThreadCount();
            int t = threads.getThreadIndex();
            from = (int) ((long) SPREAD_KEYS * t / n);
            length = (int) ((long) SPREAD_KEYS * (t + 1) / n) - from;
        }

        int next() {
            int k = from + i;
            if (++i == length) {
                i = 0;
            }
            return k;
        }
    }

    @Benchmark
    public void hotEfaAh(Blackhole bh) {
        try (AddressHandle h = cache.acquire(pdEfaAh, keys[0])) {
            bh.consume(h.nativeHandle());
        }
    }

    @Benchmark
    public void hotBaseline(Blackhole bh) {
        LockedAhTable.Slot s = baseline.acquire(pdBaseline, keys[0]);
        bh.consume(s.hardware.nativeHandle());
        baseline.release(s);
    }

    @Benchmark
    public void spreadEfaAh(Slice slice, Blackhole bh) {
        try (AddressHandle h = cache.acquire(pdEfaAh, keys[slice.next()])) {
            bh.consume(h.nativeHandle());
        }
    }

    @Benchmark
    public void spreadBaseline(Slice slice, Blackhole bh) {
        LockedAhTable.Slot s = baseline.acquire(pdBaseline, keys[slice.next()]);
        bh.consume(s.hardware.nativeHandle());
        baseline.release(s);
    }
}
