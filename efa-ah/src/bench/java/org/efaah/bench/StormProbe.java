package org.efaah.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.HardwareAddressHandle;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;

/**
 * The connect storm, outside JMH because each figure is one long operation: T threads each
 * acquire K peers nobody has an AH for yet, on a mock device whose creates take L and of which at
 * most C run at once ({@link MockConfig#adminQueueDepth()}). The figure is the wall time from the
 * threads' common start until the last has all its handles.
 *
 * <ul>
 *   <li>{@code same}: every thread wants the same K peers, each starting at its own offset (rank r
 *       connecting to r+1, r+2, ... as collective libraries do), so the creates can spread.
 *   <li>{@code overlap}: each thread wants K/2 peers all threads share and K/2 of its own,
 *       interleaved: K/2 + T*K/2 distinct peers in all.
 * </ul>
 *
 * <p>Ideal = ceil(distinct / min(T, C)) * L: the device kept busy on min(T, C) creates at once, the
 * best any host-side design can do. The baseline ({@link LockedAhTable}) holds one lock across the
 * create, so it makes one create at a time whatever C is (it is run once per L, T and variant).
 * "mock" is one thread making the creates straight on a PD: what one create of latency L really
 * takes here, waking-up included. "device alone" is T threads making the distinct creates straight
 * on the PD, each its own share, no cache: the best this machine and mock allow, so that efa-ah's
 * time over it is what the cache itself adds.
 *
 * <p>Prints {@code storm.*=value} lines, read by {@link Report}; each time is the best of
 * {@code --rounds} rounds, the one least disturbed by other processes on a shared machine.
 */
public final class StormProbe {
    static final long[] LATENCIES_US = {50, 500};
    static final int[] THREADS = {1, 2, 8};
    static final int[] DEPTHS = {1, 4, 16};
    static final String[] VARIANTS = {"same", "overlap"};

    private StormProbe() {
    }

    public static void main(String[] args) throws Exception {
        int k = 1000;
        int rounds = 3;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--peers" -> k = Integer.parseInt(args[++i]);
                case "--rounds" -> rounds = Integer.parseInt(args[++i]);
                default -> throw new IllegalArgumentException(
                        "unknown argument " + args[i] + "; usage: StormProbe [--peers K] [--rounds R]");
            }
        }
        // Compiles the acquire paths (and the baseline's) before anything is timed.
        for (String variant : VARIANTS) {
            run(variant, "efa-ah", 50_000, 8, 4, 200);
            run(variant, "baseline", 50_000, 8, 1, 200);
        }
        Map<String, Double> best = new LinkedHashMap<>();
        for (int r = 0; r < rounds; r++) {
            for (long us : LATENCIES_US) {
                long l = us * 1000;
                best.merge("storm.L" + us + ".mockMs", mockAlone(l, k), Math::min);
                for (String variant : VARIANTS) {
                    for (int t : THREADS) {
                        String base = "storm." + variant + ".L" + us + ".T" + t;
                        best.merge(base + ".baselineMs", run(variant, "baseline", l, t, 1, k), Math::min);
                        for (int c : DEPTHS) {
                            best.merge(base + ".C" + c + ".efaAhMs", run(variant, "efa-ah", l, t, c, k), Math::min);
                            best.merge(base + ".C" + c + ".deviceMs",
                                    run(variant, "device", l, t, c, k), Math::min);
                        }
                    }
                }
            }
        }
        System.out.println("storm.peers=" + k);
        System.out.println("storm.rounds=" + rounds);
        for (String variant : VARIANTS) {
            for (int t : THREADS) {
                System.out.println("storm." + variant + ".T" + t + ".distinct=" + distinct(variant, t, k));
            }
        }
        best.forEach((name, ms) -> System.out.printf(Locale.ROOT, "%s=%.2f%n", name, ms));
    }

    static int distinct(String variant, int threads, int k) {
        return variant.equals("same") ? k : k / 2 + threads * (k / 2);
    }

    /** Thread {@code t}'s peers, in the order it acquires them. */
    static List<AddressHandleAttributes> peers(String variant, int t, int threads, int k) {
        List<AddressHandleAttributes> list = new ArrayList<>(k);
        if (variant.equals("same")) {
            int offset = (int) ((long) k * t / threads);
            for (int j = 0; j < k; j++) {
                list.add(Keys.key((offset + j) % k));
            }
        } else {
            int half = k / 2;
            int offset = (int) ((long) half * t / threads);
            for (int j = 0; j < half; j++) {
                list.add(Keys.key((offset + j) % half));          // shared: ids 0 .. K/2-1
                list.add(Keys.key(half + (long) t * half + j));   // this thread's own
            }
        }
        return list;
    }

    /** Thread {@code t}'s share of the distinct peers, for the creates without a cache: no two threads share one. */
    static List<AddressHandleAttributes> share(String variant, int t, int threads, int k) {
        int distinct = distinct(variant, threads, k);
        List<AddressHandleAttributes> list = new ArrayList<>();
        for (long id = (long) distinct * t / threads; id < (long) distinct * (t + 1) / threads; id++) {
            list.add(Keys.key(id));
        }
        return list;
    }

    private static MockConfig config(long latencyNanos, int depth) {
        return MockConfig.builder().createLatencyNanos(latencyNanos).adminQueueDepth(depth).maxAh(65536).build();
    }

    /** ms for {@code threads} threads to acquire their peers through efa-ah or the baseline. */
    private static double run(String variant, String kind, long latencyNanos, int threads, int depth, int k)
            throws Exception {
        try (Device device = Device.openFirst(new MockVerbsProvider(config(latencyNanos, depth)))) {
            ProtectionDomain pd = device.allocatePd();
            AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED).build();
            LockedAhTable table = new LockedAhTable();
            List<List<AddressHandleAttributes>> work = new ArrayList<>();
            List<List<Object>> held = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                work.add(kind.equals("device") ? share(variant, t, threads, k) : peers(variant, t, threads, k));
                held.add(new ArrayList<>(k));
            }
            CountDownLatch ready = new CountDownLatch(threads);
            CountDownLatch start = new CountDownLatch(1);
            AtomicReference<Throwable> failure = new AtomicReference<>();
            List<Thread> workers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                List<AddressHandleAttributes> mine = work.get(t);
                List<Object> out = held.get(t);
                Thread w = new Thread(() -> {
                    try {
                        ready.countDown();
                        start.await();
                        for (AddressHandleAttributes peer : mine) {
                            out.add(switch (kind) {
                                case "efa-ah" -> cache.acquire(pd, peer);
                                case "baseline" -> table.acquire(pd, peer);
                                default -> pd.createAh(peer);
                            });
                        }
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    }
                }, "storm-" + t);
                w.start();
                workers.add(w);
            }
            ready.await();
            long t0 = System.nanoTime();
            start.countDown();
            for (Thread w : workers) {
                w.join();
            }
            long elapsed = System.nanoTime() - t0;
            if (failure.get() != null) {
                throw new AssertionError(kind + " " + variant + " failed", failure.get());
            }
            int expected = distinct(variant, threads, k);
            if (pd.liveAhCount() != expected) {
                throw new AssertionError(kind + " " + variant + ": " + pd.liveAhCount() + " AHs, not " + expected);
            }
            for (List<Object> hs : held) {
                for (Object h : hs) {
                    if (h instanceof AddressHandle a) {
                        a.close();
                    } else if (h instanceof HardwareAddressHandle hw) {
                        hw.destroy();
                    } else {
                        table.release((LockedAhTable.Slot) h);
                    }
                }
            }
            cache.close();
            pd.close();
            return elapsed / 1e6;
        }
    }

    /** ms for one thread to make {@code k} creates straight on a PD (the device queue is never full). */
    private static double mockAlone(long latencyNanos, int k) {
        try (Device device = Device.openFirst(new MockVerbsProvider(config(latencyNanos, 1)))) {
            ProtectionDomain pd = device.allocatePd();
            List<HardwareAddressHandle> made = new ArrayList<>(k);
            long t0 = System.nanoTime();
            for (int i = 0; i < k; i++) {
                made.add(pd.createAh(Keys.key(i)));
            }
            long elapsed = System.nanoTime() - t0;
            for (HardwareAddressHandle ah : made) {
                ah.destroy();
            }
            pd.close();
            return elapsed / 1e6;
        }
    }
}
