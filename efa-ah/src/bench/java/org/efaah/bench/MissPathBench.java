package org.efaah.bench;

import java.util.concurrent.TimeUnit;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.HardwareAddressHandle;
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
 * The miss path on a zero-latency mock: acquire a key nobody holds (a hardware create) and close
 * it (the last reference, so a hardware destroy). {@link #provider} is the same create and destroy
 * straight on the PD, with no cache: the difference is what the cache itself adds to a miss.
 *
 * <p>Keys rotate over a ring so the maps see different hashes, as with real peers; every acquire
 * is still a miss, since the previous close destroyed the key's AH.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class MissPathBench {
    private static final int RING = 1024;

    private Device device;
    private ProtectionDomain pdEfaAh;
    private ProtectionDomain pdBaseline;
    private ProtectionDomain pdProvider;
    private AddressHandleCache cache;
    private LockedAhTable baseline;
    private AddressHandleAttributes[] keys;
    private int next;

    @Setup
    public void setUp() {
        device = Device.openFirst(new MockVerbsProvider(MockConfig.builder()
                .createLatencyNanos(0).destroyLatencyNanos(0).build()));
        pdEfaAh = device.allocatePd();
        pdBaseline = device.allocatePd();
        pdProvider = device.allocatePd();
        cache = AddressHandleCache.create(LeakDetection.DISABLED);
        baseline = new LockedAhTable();
        keys = Keys.keys(RING);
    }

    @TearDown
    public void tearDown() {
        cache.close();
        device.close();
    }

    private AddressHandleAttributes nextKey() {
        return keys[next++ & (RING - 1)];
    }

    @Benchmark
    public void efaAh(Blackhole bh) {
        try (AddressHandle h = cache.acquire(pdEfaAh, nextKey())) {
            bh.consume(h);
        }
    }

    @Benchmark
    public void baseline(Blackhole bh) {
        LockedAhTable.Slot s = baseline.acquire(pdBaseline, nextKey());
        bh.consume(s);
        baseline.release(s);
    }

    @Benchmark
    public void provider(Blackhole bh) {
        HardwareAddressHandle hw = pdProvider.createAh(nextKey());
        bh.consume(hw);
        hw.destroy();
    }

    /**
     * The same three on {@link NullVerbsProvider}. The mock's own create and destroy cost several
     * hundred ns and vary by as much, which buries the overhead (a difference of two such
     * figures) in noise; the null provider keeps nothing, so what is left is mostly the cache's.
     */
    @State(Scope.Benchmark)
    public static class OnNullProvider {
        private Device device;
        private ProtectionDomain pdEfaAh;
        private ProtectionDomain pdBaseline;
        private ProtectionDomain pdProvider;
        private AddressHandleCache cache;
        private LockedAhTable baseline;
        private AddressHandleAttributes[] keys;
        private int next;

        @Setup
        public void setUp() {
            device = Device.openFirst(new NullVerbsProvider());
            pdEfaAh = device.allocatePd();
            pdBaseline = device.allocatePd();
            pdProvider = device.allocatePd();
            cache = AddressHandleCache.create(LeakDetection.DISABLED);
            baseline = new LockedAhTable();
            keys = Keys.keys(RING);
        }

        @TearDown
        public void tearDown() {
            cache.close();
            device.close();
        }

        private AddressHandleAttributes nextKey() {
            return keys[next++ & (RING - 1)];
        }
    }

    @Benchmark
    public void efaAhOnNullProvider(OnNullProvider s, Blackhole bh) {
        try (AddressHandle h = s.cache.acquire(s.pdEfaAh, s.nextKey())) {
            bh.consume(h);
        }
    }

    @Benchmark
    public void baselineOnNullProvider(OnNullProvider s, Blackhole bh) {
        LockedAhTable.Slot slot = s.baseline.acquire(s.pdBaseline, s.nextKey());
        bh.consume(slot);
        s.baseline.release(slot);
    }

    @Benchmark
    public void providerOnNullProvider(OnNullProvider s, Blackhole bh) {
        HardwareAddressHandle hw = s.pdProvider.createAh(s.nextKey());
        bh.consume(hw);
        hw.destroy();
    }
}
