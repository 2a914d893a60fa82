package org.efaah.cli;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.CacheStats;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.Errno;
import org.efaah.verbs.Gid;
import org.efaah.verbs.HardwareAddressHandle;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.VerbsProvider;
import org.efaah.verbs.mock.MockCounters;
import org.efaah.verbs.mock.MockVerbsProvider;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * Workers that each want their own AH per peer, as MPI ranks or NCCL channels do: first every
 * worker "connects" to every peer (acquires an AH and keeps it), then looks AHs up per message
 * (acquire + close), then disconnects. With the cache the device sees one AH per (PD, GID);
 * with {@code --no-cache} every worker creates its own, as frameworks do without efa-ah.
 */
@Command(name = "demo", mixinStandardHelpOptions = true,
        description = "Many workers acquire AHs for the same peers; shows logical requests vs hardware AHs.")
final class DemoCommand implements Callable<Integer> {
    @Mixin
    ProviderOptions providerOptions;

    @Option(names = {"-t", "--threads"}, description = "Worker threads (default: ${DEFAULT-VALUE}).")
    int threads = 8;

    @Option(names = {"-r", "--peers"}, description = "Remote peers, one GID each (default: ${DEFAULT-VALUE}).")
    int peers = 256;

    @Option(names = "--pds", description = "Protection domains; every worker uses each (default: ${DEFAULT-VALUE}).")
    int pds = 1;

    @Option(names = {"-n", "--lookups"}, description = "Per-message AH look-ups per worker (default: ${DEFAULT-VALUE}).")
    int lookups = 200_000;

    @Option(names = "--first-peer", paramLabel = "GID",
            description = "GID of the first peer; the others follow it (default: ${DEFAULT-VALUE}). "
                    + "On a real device the peers must be reachable (neighbour entries).")
    String firstPeer = "fd00::1";

    @Option(names = "--sgid-index", description = "sgid_index of every AH (default: ${DEFAULT-VALUE}).")
    int sgidIndex = 0;

    @Option(names = "--create-latency-us",
            description = "Mock hardware create time, µs (default: ${DEFAULT-VALUE}: EFA admin-queue commands take tens of µs).")
    long createLatencyMicros = 50;

    @Option(names = "--no-cache", description = "Every worker creates its own AH per peer, without the cache.")
    boolean noCache;

    @Mixin
    RetentionOptions retention;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        if (threads < 1 || peers < 1 || pds < 1 || lookups < 0 || peers > 1 << 20) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(),
                    "threads, peers, pds must be >= 1 (peers <= 1048576) and lookups >= 0");
        }
        List<AddressHandleAttributes> peerAttributes = peerAttributes();
        warmUp();
        try (VerbsProvider provider = providerOptions.open(TimeUnit.MICROSECONDS.toNanos(createLatencyMicros));
             Device device = Device.openFirst(provider)) {
            out.printf("provider %s, device %s%s%n", providerOptions.describe(provider), device.name(),
                    provider instanceof MockVerbsProvider m ? String.format(" (mock: %s, create %d µs, max_ah %d)",
                            m.config().duplicatePolicy().cliName(), createLatencyMicros, m.config().maxAh()) : "");
            out.printf("%d workers x %d peers x %d PD(s), then %,d look-ups per worker, %s%n%n", threads, peers, pds,
                    lookups, noCache ? "WITHOUT the cache (each worker creates its own AHs)" : "through AddressHandleCache");
            List<ProtectionDomain> domains = new ArrayList<>();
            for (int i = 0; i < pds; i++) {
                domains.add(device.allocatePd());
            }
            try {
                return noCache ? runWithoutCache(out, provider, domains, peerAttributes)
                        : runWithCache(out, provider, domains, peerAttributes);
            } finally {
                for (ProtectionDomain pd : domains) {
                    pd.close();
                }
            }
        }
    }

    /**
     * Runs the cache's code paths on a throwaway zero-latency mock first, so the figures below
     * show steady-state costs rather than class loading and JIT compilation.
     */
    private static void warmUp() {
        try (MockVerbsProvider mock = new MockVerbsProvider();
             Device device = Device.openFirst(mock);
             AddressHandleCache cache = AddressHandleCache.create(org.efaah.cache.LeakDetection.DISABLED)) {
            ProtectionDomain pd = device.allocatePd();
            for (int i = 0; i < 50_000; i++) {
                cache.acquire(pd, AddressHandleAttributes.forGid(Gid.of(0xfd00L << 48, i % 64))).close();
            }
            cache.close();
            pd.close();
        }
    }

    private List<AddressHandleAttributes> peerAttributes() {
        Gid first = Gid.parse(firstPeer);
        List<AddressHandleAttributes> list = new ArrayList<>();
        for (int i = 0; i < peers; i++) {
            list.add(AddressHandleAttributes.builder().dgid(Gid.of(first.subnetPrefix(), first.interfaceId() + i))
                    .sgidIndex(sgidIndex).build());
        }
        return list;
    }

    private int runWithCache(PrintWriter out, VerbsProvider provider, List<ProtectionDomain> domains,
                             List<AddressHandleAttributes> peerAttributes) throws Exception {
        long[][] hitNanos = new long[threads][];
        long[][] connectNanos = new long[threads][];
        AtomicLong failures = new AtomicLong();
        ConcurrentHashMap<Errno, AtomicLong> errnos = new ConcurrentHashMap<>();
        CyclicBarrier barrier = new CyclicBarrier(threads);
        AddressHandleCache.Builder builder;
        try {
            builder = AddressHandleCache.builder().retention(retention.policy());
        } catch (IllegalArgumentException e) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(), e.getMessage());
        }
        try (AddressHandleCache cache = builder.build()) {
            runWorkers(w -> {
                SplittableRandom random = new SplittableRandom(w);
                List<AddressHandle> connected = new ArrayList<>();
                long[] connect = new long[domains.size() * peerAttributes.size()];
                int c = 0;
                barrier.await();
                for (ProtectionDomain pd : domains) {
                    // Each worker walks the peers from its own offset, as independent endpoints do.
                    for (int i = 0; i < peerAttributes.size(); i++) {
                        AddressHandleAttributes peer = peerAttributes.get((i + w * 7) % peerAttributes.size());
                        long t0 = System.nanoTime();
                        try {
                            connected.add(cache.acquire(pd, peer));
                        } catch (VerbsException e) {
                            failures.incrementAndGet();
                            errnos.computeIfAbsent(e.errno(), k -> new AtomicLong()).incrementAndGet();
                        }
                        connect[c++] = System.nanoTime() - t0;
                    }
                }
                connectNanos[w] = Arrays.copyOf(connect, c);
                barrier.await();
                long[] hits = new long[lookups];
                for (int i = 0; i < lookups; i++) {
                    ProtectionDomain pd = domains.get(random.nextInt(domains.size()));
                    AddressHandleAttributes peer = peerAttributes.get(random.nextInt(peerAttributes.size()));
                    long t0 = System.nanoTime();
                    try (AddressHandle h = cache.acquire(pd, peer)) {
                        hits[i] = System.nanoTime() - t0;
                    } catch (VerbsException e) {
                        failures.incrementAndGet();
                    }
                }
                hitNanos[w] = hits;
                barrier.await();
                connected.forEach(AddressHandle::close);
            });
            CacheStats s = cache.stats();
            long requests = s.requests();
            int distinct = domains.size() * peerAttributes.size();
            out.printf("logical AH requests:      %,d%n", requests);
            out.printf("hardware AHs created:     %,d  (distinct (PD, GID) pairs: %,d)%n", s.hardwareCreates(), distinct);
            out.printf("requests per hardware AH: %.1f%n", s.hardwareCreates() == 0 ? 0.0 : (double) requests / s.hardwareCreates());
            out.printf("hit ratio:                %.4f%n", s.hitRatio());
            printDevice(out, provider);
            out.printf("failed requests:          %,d %s%n", failures.get(), errnos.isEmpty() ? "" : errnos);
            out.printf("hit latency (acquire+close, look-up phase): %s%n", percentiles(hitNanos));
            out.printf("connect latency (first acquires, incl. waits for creates): %s%n", percentiles(connectNanos));
            out.printf("hardware create (provider call): mean %,.0f ns, max %,d ns%n", s.averageCreateNanos(), s.maxCreateNanos());
            RetentionOptions.print(out, cache, s);
            out.printf("after disconnect: %d live entries, %d live handles%n", cache.liveEntries(), cache.liveHandles());
            return s.hardwareCreates() == distinct && failures.get() == 0 ? 0 : 1;
        }
    }

    private int runWithoutCache(PrintWriter out, VerbsProvider provider, List<ProtectionDomain> domains,
                                List<AddressHandleAttributes> peerAttributes) throws Exception {
        AtomicLong requests = new AtomicLong();
        AtomicLong created = new AtomicLong();
        ConcurrentHashMap<Errno, AtomicLong> errnos = new ConcurrentHashMap<>();
        CyclicBarrier barrier = new CyclicBarrier(threads);
        runWorkers(w -> {
            List<HardwareAddressHandle> own = new ArrayList<>();
            barrier.await();
            for (ProtectionDomain pd : domains) {
                for (int i = 0; i < peerAttributes.size(); i++) {
                    requests.incrementAndGet();
                    try {
                        own.add(pd.createAh(peerAttributes.get((i + w * 7) % peerAttributes.size())));
                        created.incrementAndGet();
                    } catch (VerbsException e) {
                        errnos.computeIfAbsent(e.errno(), k -> new AtomicLong()).incrementAndGet();
                    }
                }
            }
            barrier.await();
            for (HardwareAddressHandle ah : own) {
                ah.destroy();
            }
        });
        out.printf("logical AH requests:      %,d%n", requests.get());
        out.printf("AHs created (ibv_create_ah succeeded): %,d  (distinct (PD, GID) pairs: %,d)%n", created.get(),
                domains.size() * peerAttributes.size());
        printDevice(out, provider);
        out.printf("failed creates:           %s%n", errnos.isEmpty() ? "0" : errnos);
        out.println("(no per-message look-ups: without a cache each worker keeps its own AHs)");
        return 0;
    }

    private static void printDevice(PrintWriter out, VerbsProvider provider) {
        if (provider instanceof MockVerbsProvider m) {
            MockCounters c = m.counters();
            out.printf("device: hardware creates %,d, peak live AHs %,d, duplicates refused %,d, duplicate AHs made %,d,"
                            + " kernel-cache hits %,d%n", c.hardwareCreates(), c.peakLiveAhs(), c.duplicatesRefused(),
                    c.duplicatesCreated(), c.kernelCacheHits());
        }
    }

    interface Worker {
        void run(int index) throws Exception;
    }

    private void runWorkers(Worker worker) throws InterruptedException {
        List<Thread> list = new ArrayList<>();
        List<Throwable> errors = new ArrayList<>();
        for (int w = 0; w < threads; w++) {
            int index = w;
            Thread t = new Thread(() -> {
                try {
                    worker.run(index);
                } catch (Throwable e) {
                    synchronized (errors) {
                        errors.add(e);
                    }
                }
            }, "worker-" + w);
            list.add(t);
            t.start();
        }
        for (Thread t : list) {
            t.join();
        }
        if (!errors.isEmpty()) {
            throw new IllegalStateException("a worker failed", errors.get(0));
        }
    }

    static String percentiles(long[][] perThread) {
        int n = 0;
        for (long[] a : perThread) {
            n += a == null ? 0 : a.length;
        }
        if (n == 0) {
            return "no samples";
        }
        long[] all = new long[n];
        int i = 0;
        for (long[] a : perThread) {
            if (a != null) {
                System.arraycopy(a, 0, all, i, a.length);
                i += a.length;
            }
        }
        Arrays.sort(all);
        return String.format("p50 %,d ns, p99 %,d ns, p99.9 %,d ns, max %,d ns (%,d samples)", all[n / 2],
                all[(int) (n * 0.99)], all[(int) (n * 0.999)], all[n - 1], n);
    }
}
