package org.efaah.bench;

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.verbs.Device;
import org.efaah.verbs.HardwareAddressHandle;
import org.efaah.verbs.ProtectionDomain;

/**
 * The scale figures, outside JMH because each is one long operation: the time to create N
 * distinct AHs through efa-ah and through the baseline (then to release them all), and the heap
 * each live entry retains.
 *
 * <p>Provider: {@link NullVerbsProvider} (no max_ah, keeps nothing), one PD. The mock cannot
 * hold a million AHs on one device, and its own per-AH tables would count as retained heap.
 *
 * <p>Heap method: used heap from {@link MemoryMXBean} after repeated {@code System.gc()}, before
 * and after the N acquires, divided by N. The array holding the handles is allocated before the
 * first reading, so it does not count; each key's attributes are made during the loop and kept
 * only by the cache, as when a caller builds them per request. Run with a stop-the-world
 * collector (scripts/bench uses -XX:+UseParallelGC) so that a full collection leaves nothing
 * unreachable counted. Per entry, efa-ah's figure includes the one open {@link AddressHandle}
 * that keeps the entry alive; the baseline hands out its shared entry, so it has no such object.
 * "verbs" is the floor under both: the same creates straight on the PD (the attributes, the
 * {@link HardwareAddressHandle}, the PD's set of live AHs).
 *
 * <p>Prints {@code name=value} lines, read by {@link Report}: each time is the best of
 * {@code --rounds} interleaved rounds, the heap figure the last round's.
 */
public final class ScaleProbe {
    private static final MemoryMXBean MEMORY = ManagementFactory.getMemoryMXBean();

    private ScaleProbe() {
    }

    public static void main(String[] args) throws Exception {
        int n = 1_000_000;
        int rounds = 3;
        String[] kinds = {"efa-ah", "baseline", "verbs"};
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--keys" -> n = Integer.parseInt(args[++i]);
                case "--rounds" -> rounds = Integer.parseInt(args[++i]);
                // One kind alone, e.g. under a profiler: --kinds efa-ah
                case "--kinds" -> kinds = kinds(args, ++i);
                default -> throw new IllegalArgumentException("unknown argument " + args[i]
                        + "; usage: ScaleProbe [--keys N] [--rounds R] [--kinds efa-ah,baseline,verbs]");
            }
        }
        // A first, smaller pass of each compiles the loops before the measured passes.
        for (String kind : kinds) {
            run(kind, Math.max(1, n / 5), 1L << 40);
        }
        // Single shots on a shared machine: interleave the kinds and keep each one's best round,
        // the one least disturbed by other processes.
        Map<String, double[]> best = new LinkedHashMap<>();
        for (int r = 0; r < rounds; r++) {
            for (String kind : kinds) {
                double[] m = run(kind, n, 0);
                best.merge(kind, m, (a, b) -> a[0] <= b[0]
                        ? new double[] {a[0], Math.min(a[1], b[1]), b[2], a[3]}
                        : new double[] {b[0], Math.min(a[1], b[1]), b[2], b[3]});
            }
        }
        System.out.println("scale.keys=" + n);
        System.out.println("scale.rounds=" + rounds);
        best.forEach((kind, m) -> {
            System.out.printf(Locale.ROOT, "scale.%s.createMs=%.1f%n", kind, m[0]);
            System.out.printf(Locale.ROOT, "scale.%s.createGcMs=%.0f%n", kind, m[3]);
            System.out.printf(Locale.ROOT, "scale.%s.releaseMs=%.1f%n", kind, m[1]);
            System.out.printf(Locale.ROOT, "scale.%s.bytesPerEntry=%.1f%n", kind, m[2]);
        });
    }

    private static String[] kinds(String[] args, int i) {
        String[] kinds = i < args.length ? args[i].split(",") : new String[] {""};
        for (String k : kinds) {
            if (!Set.of("efa-ah", "baseline", "verbs").contains(k)) {
                throw new IllegalArgumentException("--kinds: '" + k + "' is not a kind; valid: efa-ah, baseline, verbs");
            }
        }
        return kinds;
    }

    /** Returns {create ms, release ms, retained bytes per entry, collector ms during the creates}. */
    private static double[] run(String kind, int n, long keyBase) {
        try (Device device = Device.openFirst(new NullVerbsProvider())) {
            ProtectionDomain pd = device.allocatePd();
            Object[] held = new Object[n];
            AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED).build();
            LockedAhTable table = new LockedAhTable();
            long before = usedHeapAfterGc();
            long gc0 = gcMillis();
            long t0 = System.nanoTime();
            switch (kind) {
                case "efa-ah" -> {
                    for (int i = 0; i < n; i++) {
                        held[i] = cache.acquire(pd, Keys.key(keyBase + i));
                    }
                }
                case "baseline" -> {
                    for (int i = 0; i < n; i++) {
                        held[i] = table.acquire(pd, Keys.key(keyBase + i));
                    }
                }
                default -> {
                    for (int i = 0; i < n; i++) {
                        held[i] = pd.createAh(Keys.key(keyBase + i));
                    }
                }
            }
            long t1 = System.nanoTime();
            long gc1 = gcMillis();
            long after = usedHeapAfterGc();
            if (pd.liveAhCount() != n) {
                throw new AssertionError(kind + ": " + pd.liveAhCount() + " AHs exist, not " + n);
            }
            long t2 = System.nanoTime();
            switch (kind) {
                case "efa-ah" -> {
                    for (Object h : held) {
                        ((AddressHandle) h).close();
                    }
                }
                case "baseline" -> {
                    for (Object s : held) {
                        table.release((LockedAhTable.Slot) s);
                    }
                }
                default -> {
                    for (Object hw : held) {
                        ((HardwareAddressHandle) hw).destroy();
                    }
                }
            }
            long t3 = System.nanoTime();
            if (pd.liveAhCount() != 0) {
                throw new AssertionError(kind + ": " + pd.liveAhCount() + " AHs left after releasing all");
            }
            cache.close();
            pd.close();
            return new double[] {(t1 - t0) / 1e6, (t3 - t2) / 1e6, (after - before) / (double) n, gc1 - gc0};
        }
    }

    private static long gcMillis() {
        long ms = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            ms += Math.max(0, gc.getCollectionTime());
        }
        return ms;
    }

    private static long usedHeapAfterGc() {
        long used = Long.MAX_VALUE;
        // Repeat until the figure stops falling: one collection may leave work (reference
        // processing, the Cleaner's queue) for the next.
        for (int i = 0; i < 10; i++) {
            System.gc();
            long u = MEMORY.getHeapMemoryUsage().getUsed();
            if (u >= used) {
                return u;
            }
            used = u;
        }
        return used;
    }
}
