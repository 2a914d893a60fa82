package org.efaah.bench;

import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.AddressHandleEntry;
import org.efaah.cache.LeakDetection;
import org.efaah.verbs.Device;
import org.efaah.verbs.Gid;
import org.efaah.verbs.ProtectionDomain;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * A look inside a cache of a million live AHs ({@link AddressHandleCache#entries}): every entry
 * listed, a filter that matches one entry but must look at all, and the first 100 rows (what the
 * {@code entries} command asks by default). With {@code -prof gc}, {@code gc.alloc.rate.norm} is
 * the memory one listing allocates. Provider: {@link NullVerbsProvider} (the mock stops at
 * max_ah 65,536), one PD, each entry held by one open handle.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xmx3g", "-XX:+UseParallelGC"})
public class SnapshotBench {
    @Param("1000000")
    public int entries;

    private Device device;
    private ProtectionDomain pd;
    private AddressHandleCache cache;
    private AddressHandle[] held;
    private Predicate<AddressHandleEntry> oneGid;

    @Setup(Level.Trial)
    public void setUp() {
        device = Device.openFirst(new NullVerbsProvider());
        pd = device.allocatePd();
        cache = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED).build();
        held = new AddressHandle[entries];
        for (int i = 0; i < entries; i++) {
            held[i] = cache.acquire(pd, Keys.key(i));
        }
        Gid gid = Keys.key(entries / 2).dgid();
        oneGid = e -> gid.equals(e.dgid());
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        for (AddressHandle h : held) {
            h.close();
        }
        cache.close();
        pd.close();
        device.close();
    }

    @Benchmark
    public List<AddressHandleEntry> all() {
        return cache.inspection().entries(e -> true, entries);
    }

    @Benchmark
    public List<AddressHandleEntry> filterOneGid() {
        return cache.inspection().entries(oneGid, entries);
    }

    @Benchmark
    public List<AddressHandleEntry> first100() {
        return cache.inspection().entries(e -> true, 100);
    }
}
