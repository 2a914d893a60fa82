package org.efaah.bench;

import java.util.concurrent.TimeUnit;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.HardwareAddressHandle;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.spi.VerbsProvider;
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
 * The miss path: acquire a key nobody holds (a hardware create) and close it (the last reference,
 * so a hardware destroy). {@link #provider} is the same create and destroy straight on the PD,
 * with no cache: the difference is what the cache itself adds to a miss.
 *
 * <p>Each figure twice: on a zero-latency mock, and on {@link NullVerbsProvider}
 * ({@code ...OnNullProvider}). The mock's own create and destroy cost several hundred ns and vary
 * by as much, which buries the overhead (a difference of two such figures) in noise; the null
 * provider keeps nothing, so what is left is mostly the cache's.
 *
 * <p>Keys rotate over a ring so the maps see different hashes, as with real peers; every acquire
 * is still a miss, since the previous close destroyed the key's AH.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class MissPathBench {
    private static final int RING = 1024;

    /** One provider's device, with a PD each for efa-ah, the baseline and the provider alone. */
    private static final class Fixture {
        private final Device device;
        private final ProtectionDomain pdEfaAh;
        private final ProtectionDomain pdBaseline;
        private final ProtectionDomain pdProvider;
        private final AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED).build();
        private final LockedAhTable baseline = new LockedAhTable();
        private final AddressHandleAttributes[] keys = Keys.keys(RING);
        private int next;

        Fixture(VerbsProvider provider) {
            device = Device.openFirst(provider);
            pdEfaAh = device.allocatePd();
            pdBaseline = device.allocatePd();
            pdProvider = device.allocatePd();
        }

        private AddressHandleAttributes nextKey() {
            return keys[next++ & (RING - 1)];
        }

        void efaAh(Blackhole bh) {
            try (AddressHandle h = cache.acquire(pdEfaAh, nextKey())) {
                bh.consume(h);
            }
        }

        void baseline(Blackhole bh) {
            LockedAhTable.Slot s = baseline.acquire(pdBaseline, nextKey());
            bh.consume(s);
            baseline.release(s);
        }

        void provider(Blackhole bh) {
            HardwareAddressHandle hw = pdProvider.createAh(nextKey());
            bh.consume(hw);
            hw.destroy();
        }

        void close() {
            cache.close();
            device.close();
        }
    }

    private Fixture mock;
    private Fixture onNull;

    @Setup
    public void setUp() {
        mock = new Fixture(new MockVerbsProvider(MockConfig.builder().createLatencyNanos(0).destroyLatencyNanos(0).build()));
        onNull = new Fixture(new NullVerbsProvider());
    }

    @TearDown
    public void tearDown() {
        mock.close();
        onNull.close();
    }

    @Benchmark
    public void efaAh(Blackhole bh) {
        mock.efaAh(bh);
    }

    @Benchmark
    public void baseline(Blackhole bh) {
        mock.baseline(bh);
    }

    @Benchmark
    public void provider(Blackhole bh) {
        mock.provider(bh);
    }

    @Benchmark
    public void efaAhOnNullProvider(Blackhole bh) {
        onNull.efaAh(bh);
    }

    @Benchmark
    public void baselineOnNullProvider(Blackhole bh) {
        onNull.baseline(bh);
    }

    @Benchmark
    public void providerOnNullProvider(Blackhole bh) {
        onNull.provider(bh);
    }
}
