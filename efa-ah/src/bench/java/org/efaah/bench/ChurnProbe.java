package org.efaah.bench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.CacheStats;
import org.efaah.cache.LeakDetection;
import org.efaah.cache.RetentionPolicy;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;

/**
 * Churn (issue 10): peers come and go, and each connection to a peer is short, so without
 * retention most acquires find nobody holding the peer's AH and pay a hardware create. Each of
 * {@value #THREADS} threads repeatedly talks to a peer drawn from a window of
 * {@value #WINDOW} active peers that slides by one every {@value #SLIDE} acquires (new peers
 * arrive, old ones leave): acquire, close. The mock's creates take 50 µs, as EFA admin commands do.
 *
 * <p>Run twice, retention off ({@link RetentionPolicy#none()}) and on (idle 1 s, at most 1,024
 * unreferenced AHs); prints {@code churn.<off|on>.<figure>=value} lines, read by {@link Report}:
 * hardware creates per acquire, and mean time per acquire + close, µs.
 */
public final class ChurnProbe {
    static final int THREADS = 4;
    static final int WINDOW = 64;
    static final int SLIDE = 50;
    static final long CREATE_NANOS = TimeUnit.MICROSECONDS.toNanos(50);

    private ChurnProbe() {
    }

    public static void main(String[] args) throws Exception {
        int acquires = 20_000;
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--acquires")) {
                acquires = Integer.parseInt(args[++i]);
            } else {
                throw new IllegalArgumentException("unknown argument " + args[i] + "; usage: ChurnProbe [--acquires N]");
            }
        }
        run(RetentionPolicy.idle(Duration.ofSeconds(1), 1024), Math.max(THREADS, acquires / 10)); // warm-up
        for (String kind : new String[] {"off", "on"}) {
            RetentionPolicy p = kind.equals("on") ? RetentionPolicy.idle(Duration.ofSeconds(1), 1024) : RetentionPolicy.none();
            double[] r = run(p, acquires);
            System.out.printf(Locale.ROOT, "churn.%s.createsPerAcquire=%.4f%n", kind, r[0]);
            System.out.printf(Locale.ROOT, "churn.%s.microsPerAcquire=%.2f%n", kind, r[1]);
        }
    }

    /** Returns {hardware creates per acquire, mean µs per acquire + close, per thread}. */
    static double[] run(RetentionPolicy retention, int acquires) throws Exception {
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().maxAh(65536)
                .createLatencyNanos(CREATE_NANOS).build());
        try (Device device = Device.openFirst(mock)) {
            ProtectionDomain pd = device.allocatePd();
            AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED)
                    .retention(retention).build();
            int perThread = acquires / THREADS;
            CyclicBarrier start = new CyclicBarrier(THREADS + 1);
            List<Thread> threads = new ArrayList<>();
            long[] nanos = new long[THREADS];
            for (int t = 0; t < THREADS; t++) {
                int id = t;
                Thread w = new Thread(() -> {
                    SplittableRandom random = new SplittableRandom(1000 + id);
                    try {
                        start.await();
                        long t0 = System.nanoTime();
                        for (int i = 0; i < perThread; i++) {
                            long base = i / SLIDE;
                            AddressHandleAttributes peer = Keys.key(base + random.nextInt(WINDOW));
                            try (AddressHandle h = cache.acquire(pd, peer)) {
                                h.nativeHandle();
                            }
                        }
                        nanos[id] = System.nanoTime() - t0;
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                });
                threads.add(w);
                w.start();
            }
            start.await();
            for (Thread w : threads) {
                w.join();
            }
            CacheStats s = cache.stats();
            cache.close();
            pd.close();
            long total = 0;
            for (long n : nanos) {
                total += n;
            }
            return new double[] {(double) s.hardwareCreates() / s.requests(),
                    total / 1e3 / ((double) perThread * THREADS)};
        }
    }
}
