package org.efaah.bench;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
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

/**
 * The hit path: acquire and close a key whose entry another handle keeps alive, so no device
 * call happens. One thread (the contention figures are in {@link ContentionBench}).
 *
 * <p>Two ways to use a handle. "In place" is the try-with-resources idiom around a send: the
 * caller takes the handle's native AH for the post and closes it, so the handle need not outlive
 * the call and the JIT may keep it in registers (Java 17's escape analysis does, when no path of
 * the compiled code lets it out). "Kept" hands the handle itself to a Blackhole, as a caller that
 * stores it does: then it is a heap object. The baseline hands out its shared slot either way.
 *
 * <p>{@link #floor} is the least any hit can cost, measured beside it: one concurrent map read and
 * an atomic increment and decrement of a plain counter, with no handle and no checks.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class HitPathBench {
    private Device device;
    private ProtectionDomain pdDisabled;
    private ProtectionDomain pdSampled;
    private ProtectionDomain pdBaseline;
    private AddressHandleCache disabled;
    private AddressHandleCache sampled;
    private AddressHandleCache noStats;
    private ProtectionDomain pdNoStats;
    private AddressHandle keepNoStats;
    private LockedAhTable baseline;
    private AddressHandleAttributes key;
    private AddressHandle keepDisabled;
    private AddressHandle keepSampled;
    private LockedAhTable.Slot keepBaseline;
    private ConcurrentHashMap<Object, AtomicInteger> floorTable;

    @Setup
    public void setUp() {
        device = Device.openFirst(new MockVerbsProvider(MockConfig.builder().createLatencyNanos(0).build()));
        // One PD per contender: the strict mock refuses a second AH for the same (PD, GID).
        pdDisabled = device.allocatePd();
        pdSampled = device.allocatePd();
        pdBaseline = device.allocatePd();
        pdNoStats = device.allocatePd();
        disabled = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED).build();
        sampled = AddressHandleCache.builder().leakDetection(LeakDetection.SAMPLED).build();
        noStats = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED).recordStats(false).build();
        baseline = new LockedAhTable();
        key = Keys.key(1);
        keepDisabled = disabled.acquire(pdDisabled, key);
        keepSampled = sampled.acquire(pdSampled, key);
        keepNoStats = noStats.acquire(pdNoStats, key);
        keepBaseline = baseline.acquire(pdBaseline, key);
        floorTable = new ConcurrentHashMap<>();
        // The floor's map holds as many keys as the caches do (one), under the same key (the dgid).
        floorTable.put(key.dgid(), new AtomicInteger(1));
    }

    @TearDown
    public void tearDown() {
        keepDisabled.close();
        keepSampled.close();
        keepNoStats.close();
        noStats.close();
        baseline.release(keepBaseline);
        disabled.close();
        sampled.close();
        device.close();
    }

    @Benchmark
    public int floor() {
        AtomicInteger refs = floorTable.get(key.dgid());
        refs.incrementAndGet();
        return refs.decrementAndGet();
    }

    @Benchmark
    public void efaAhDisabledInPlace(Blackhole bh) {
        try (AddressHandle h = disabled.acquire(pdDisabled, key)) {
            bh.consume(h.nativeHandle());
        }
    }

    @Benchmark
    public void efaAhSampledInPlace(Blackhole bh) {
        try (AddressHandle h = sampled.acquire(pdSampled, key)) {
            bh.consume(h.nativeHandle());
        }
    }

    /** What recording statistics costs a hit: DISABLED, built with {@code recordStats(false)}. */
    @Benchmark
    public void efaAhDisabledNoStatsInPlace(Blackhole bh) {
        try (AddressHandle h = noStats.acquire(pdNoStats, key)) {
            bh.consume(h.nativeHandle());
        }
    }

    @Benchmark
    public void baselineInPlace(Blackhole bh) {
        LockedAhTable.Slot s = baseline.acquire(pdBaseline, key);
        bh.consume(s.hardware.nativeHandle());
        baseline.release(s);
    }

    @Benchmark
    public void efaAhDisabled(Blackhole bh) {
        try (AddressHandle h = disabled.acquire(pdDisabled, key)) {
            bh.consume(h);
        }
    }

    @Benchmark
    public void efaAhSampled(Blackhole bh) {
        try (AddressHandle h = sampled.acquire(pdSampled, key)) {
            bh.consume(h);
        }
    }

    @Benchmark
    public void baseline(Blackhole bh) {
        LockedAhTable.Slot s = baseline.acquire(pdBaseline, key);
        bh.consume(s);
        baseline.release(s);
    }
}
