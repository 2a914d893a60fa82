package org.efaah.cli;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.BrokenBarrierException;
import java.util.List;
import java.util.Set;
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
import org.efaah.verbs.spi.VerbsProvider;
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
@Command(name = "demo",
        description = "Many workers acquire AHs for the same peers; shows logical requests vs hardware AHs.")
final class DemoCommand implements Callable<Integer> {
    @Mixin
    ProviderOptions providerOptions;

    @Option(names = {"-t", "--threads"}, description = "Worker threads, 1..1024 (default: ${DEFAULT-VALUE}).")
    int threads = 8;

    @Option(names = {"-r", "--peers"}, description = "Remote peers, one GID each, 1..1048576 (default: ${DEFAULT-VALUE}).")
    int peers = 256;

    @Option(names = "--pds", description = "Protection domains; every worker uses each, 1..64 (default: ${DEFAULT-VALUE}).")
    int pds = 1;

    @Option(names = {"-n", "--lookups"},
            description = "Per-message AH look-ups per worker, 0..2^63-1 (default: ${DEFAULT-VALUE}).")
    long lookups = 200_000;

    @Option(names = "--first-peer", paramLabel = "GID",
            description = "GID of the first peer; the others follow it (default: ${DEFAULT-VALUE}). "
                    + "On a real device the peers must be reachable (neighbour entries).")
    String firstPeer = "fd00::1";

    @Option(names = {"-g", "--gid-idx", "--sgid-index"}, description = "sgid_index of every AH (default: ${DEFAULT-VALUE}).")
    int sgidIndex = 0;

    @Option(names = "--create-latency-us", paramLabel = "MICROSECONDS",
            description = "Mock hardware create time, 0..1000000 µs (default: ${DEFAULT-VALUE}: EFA admin-queue "
                    + "commands take tens of µs; -Defaah.mock.createLatencyNanos in ns).")
    double createLatencyMicros = 50;

    @Option(names = "--no-cache", description = "Every worker creates its own AH per peer, without the cache.")
    boolean noCache;

    @Mixin
    OutputOptions output;

    @Mixin
    RetentionOptions retention;

    @Spec
    CommandSpec spec;

    /** Set when the run is interrupted: workers stop at their next step. */
    private volatile boolean stop;
    /** Set when Ctrl-C (an interrupt) stopped the run: it reports what was done and exits 130. */
    private volatile boolean interrupted;
    private final AtomicLong connectsDone = new AtomicLong();
    private final AtomicLong lookupsDone = new AtomicLong();

    @Override
    public Integer call() throws Exception {
        Check.range(spec, "--threads", threads, 1, 1024, "");
        Check.range(spec, "--peers", peers, 1, 1 << 20, "");
        Check.range(spec, "--pds", pds, 1, 64, "");
        Check.range(spec, "--lookups", lookups, 0, Long.MAX_VALUE, "");
        Check.range(spec, "--create-latency-us", createLatencyMicros, 0, 1_000_000, "µs");
        Check.range(spec, "--sgid-index", sgidIndex, 0, 255, "");
        long progressMillis = output.progressMillis(spec);
        Gid first;
        try {
            first = Gid.parse(firstPeer);
        } catch (IllegalArgumentException e) {
            throw Check.fail(spec, "--first-peer", e.getMessage());
        }
        List<AddressHandleAttributes> peerAttributes = peerAttributes(first);
        Report report = new Report(spec.commandLine().getOut(), output.json);
        Latencies efaAhHit = warmUp();
        try (VerbsProvider provider = providerOptions.open(spec, (long) (createLatencyMicros * 1e3));
             Device device = Device.openFirst(provider)) {
            int gidTableLength = device.port(1).gidTableLength();
            if (sgidIndex >= gidTableLength) {
                throw Check.fail(spec, "--sgid-index", sgidIndex + " is out of range; valid 0.." + (gidTableLength - 1)
                        + " (gid_tbl_len of " + device.name() + " port 1)");
            }
            if (output.json) {
                providerOptions.announceMock(spec, report, output, provider); // the line below says it in text
            }
            report.line("provider %s, device %s%s", providerOptions.describe(provider, output.verbose), device.name(),
                    provider instanceof MockVerbsProvider m ? String.format(" (mock: %s, create %s µs, system call %s µs, "
                            + "max_ah %d)", m.config().duplicatePolicy().cliName(), createLatencyMicros,
                            m.config().systemCallNanos() / 1e3, m.config().maxAh()) : "");
            if (noCache) {
                report.line("%d workers x %d peers x %d PD(s), WITHOUT the cache: each worker creates its own AH per "
                        + "peer with ibv_create_ah (no look-up phase)%n", threads, peers, pds);
            } else {
                report.line("%d workers x %d peers x %d PD(s), then %,d look-ups per worker, through "
                        + "AddressHandleCache%n", threads, peers, pds, lookups);
            }
            report.put("command", "demo").put("provider", provider.name()).put("device", device.name())
                    .put("workers", threads).put("peers", peers).put("pds", pds).put("cache", !noCache);
            List<ProtectionDomain> domains = new ArrayList<>();
            for (int i = 0; i < pds; i++) {
                domains.add(device.allocatePd());
            }
            long connectsPlanned = (long) threads * pds * peers;
            try (Progress p = Progress.start(spec.commandLine().getErr(), output, progressMillis,
                    () -> noCache ? String.format("demo: creates %,d of %,d", connectsDone.get(), connectsPlanned)
                            : String.format("demo: connects %,d of %,d, look-ups %,d of %,d", connectsDone.get(),
                            connectsPlanned, lookupsDone.get(), lookups * threads))) {
                int exit = noCache ? runWithoutCache(report, provider, domains, peerAttributes, efaAhHit)
                        : runWithCache(report, provider, domains, peerAttributes);
                report.finish();
                return exit;
            } finally {
                for (ProtectionDomain pd : domains) {
                    pd.close();
                }
            }
        }
    }

    /**
     * Runs the cache's code paths on a throwaway zero-latency mock first, so the figures below
     * show steady-state costs rather than class loading and JIT compilation; then times hits there,
     * on this thread: what {@code --no-cache} sets its system calls beside.
     */
    private static Latencies warmUp() {
        Latencies hits = new Latencies();
        try (MockVerbsProvider mock = new MockVerbsProvider();
             Device device = Device.openFirst(mock);
             AddressHandleCache cache = AddressHandleCache.builder().leakDetection(org.efaah.cache.LeakDetection.DISABLED).build()) {
            ProtectionDomain pd = device.allocatePd();
            List<AddressHandleAttributes> keys = new ArrayList<>();
            for (int i = 0; i < 64; i++) {
                keys.add(AddressHandleAttributes.forGid(Gid.of(0xfd00L << 48, i)));
            }
            List<AddressHandle> held = new ArrayList<>();
            for (AddressHandleAttributes k : keys) {
                held.add(cache.acquire(pd, k)); // held, as connected workers hold theirs: the look-ups below hit
            }
            for (int i = 0; i < 150_000; i++) {
                long t0 = System.nanoTime();
                cache.acquire(pd, keys.get(i & 63)).close();
                if (i >= 50_000) {
                    hits.record(System.nanoTime() - t0);
                }
            }
            held.forEach(AddressHandle::close);
            cache.close();
            pd.close();
        }
        return hits;
    }

    private List<AddressHandleAttributes> peerAttributes(Gid first) {
        List<AddressHandleAttributes> list = new ArrayList<>();
        for (int i = 0; i < peers; i++) {
            list.add(AddressHandleAttributes.builder().dgid(Gid.of(first.subnetPrefix(), first.interfaceId() + i))
                    .sgidIndex(sgidIndex).build());
        }
        return list;
    }

    private int runWithCache(Report report, VerbsProvider provider, List<ProtectionDomain> domains,
                             List<AddressHandleAttributes> peerAttributes) throws Exception {
        Latencies[] hitNanos = new Latencies[threads];
        Latencies[] connectNanos = new Latencies[threads];
        Failed connectFailures = new Failed();
        Failed lookupFailures = new Failed();
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
                Latencies connect = connectNanos[w] = new Latencies();
                Latencies hits = hitNanos[w] = new Latencies();
                barrier.await();
                try {
                    for (ProtectionDomain pd : domains) {
                        // Each worker walks the peers from its own offset, as independent endpoints do.
                        for (int i = 0; i < peerAttributes.size() && !stop; i++) {
                            AddressHandleAttributes peer = peerAttributes.get((i + w * 7) % peerAttributes.size());
                            long t0 = System.nanoTime();
                            try {
                                connected.add(cache.acquire(pd, peer));
                            } catch (VerbsException e) {
                                connectFailures.add(e);
                            }
                            connect.record(System.nanoTime() - t0);
                            connectsDone.incrementAndGet();
                        }
                    }
                    barrier.await();
                    for (long i = 0; i < lookups && !stop; i++) {
                        ProtectionDomain pd = domains.get(random.nextInt(domains.size()));
                        AddressHandleAttributes peer = peerAttributes.get(random.nextInt(peerAttributes.size()));
                        long t0 = System.nanoTime();
                        try (AddressHandle h = cache.acquire(pd, peer)) {
                            hits.record(System.nanoTime() - t0);
                        } catch (VerbsException e) {
                            lookupFailures.add(e);
                        }
                        lookupsDone.incrementAndGet();
                    }
                    barrier.await();
                } finally {
                    connected.forEach(AddressHandle::close);
                }
            });
            CacheStats s = cache.stats();
            long requests = s.requests();
            int distinct = domains.size() * peerAttributes.size();
            report.line("logical AH requests:      %,d", requests);
            report.line("hardware AHs created:     %,d  (distinct (PD, GID) pairs: %,d)", s.hardwareCreates(), distinct);
            report.line("requests per hardware AH: %.1f", s.hardwareCreates() == 0 ? 0.0 : (double) requests / s.hardwareCreates());
            report.line("hit ratio:                %.4f", s.hitRatio());
            printDevice(report, provider);
            report.line("failed connects:          %,d of %,d %s", connectFailures.count(), connectsDone.get(),
                    connectFailures.byErrno());
            report.line("failed look-ups:          %,d of %,d %s", lookupFailures.count(), lookupsDone.get(),
                    lookupFailures.byErrno());
            Latencies hit = merge(hitNanos);
            Latencies connect = merge(connectNanos);
            report.line("hit latency (acquire+close, look-up phase): %s", hit.summary());
            report.line("connect latency (first acquires, incl. waits for creates): %s", connect.summary());
            report.line("hardware create (provider call): mean %,.0f ns, max %,d ns", s.averageCreateNanos(), s.maxCreateNanos());
            RetentionOptions.print(report, cache, s);
            report.line("after disconnect: %d live entries, %d live handles", cache.inspection().liveEntries(), cache.inspection().liveHandles());
            report.put("requests", requests).put("hardware_creates", s.hardwareCreates())
                    .put("distinct_pd_gid_pairs", distinct).put("hit_ratio", s.hitRatio())
                    .put("connects", connectsDone.get()).put("failed_connects", connectFailures.toMap())
                    .put("lookups", lookupsDone.get()).put("failed_lookups", lookupFailures.toMap())
                    .put("hit_latency", hit.toMap()).put("connect_latency", connect.toMap());
            putDevice(report, provider);
            if (interrupted) {
                return interruptedExit(report);
            }
            if (connectFailures.count() > 0 || lookupFailures.count() > 0) {
                spec.commandLine().getErr().printf("%s: %,d of %,d connects and %,d of %,d look-ups failed%s%n",
                        spec.qualifiedName(), connectFailures.count(), connectsDone.get(), lookupFailures.count(),
                        lookupsDone.get(), why(provider, connectFailures, lookupFailures, distinct));
                return Main.FAILED;
            }
            return s.hardwareCreates() == distinct ? 0 : Main.FAILED;
        }
    }

    /** Why acquires failed, when the reason is known: max_ah below the AHs the run needs. */
    private static String why(VerbsProvider provider, Failed connects, Failed lookups, int distinct) {
        StringBuilder sb = new StringBuilder(": ").append(connects.byErrno().isEmpty() ? lookups.byErrno()
                : connects.byErrno());
        if ((connects.has(Errno.ENOMEM) || lookups.has(Errno.ENOMEM)) && provider instanceof MockVerbsProvider m
                && m.config().maxAh() < distinct) {
            sb.append("; the device holds at most max_ah=").append(m.config().maxAh()).append(" AHs and the run needs ")
                    .append(distinct).append(" (one per (PD, GID)): raise --max-ah or lower --peers/--pds");
        } else if (connects.has(Errno.ENOMEM) || lookups.has(Errno.ENOMEM)) {
            sb.append("; ENOMEM from ibv_create_ah: the device's max_ah may be below ").append(distinct)
                    .append(" AHs (see efa-ah devices)");
        }
        return sb.toString();
    }

    /** Failed acquires of one phase, counted by errno. */
    private static final class Failed {
        private final ConcurrentHashMap<Errno, AtomicLong> byErrno = new ConcurrentHashMap<>();
        private final AtomicLong count = new AtomicLong();

        void add(VerbsException e) {
            count.incrementAndGet();
            byErrno.computeIfAbsent(e.errno(), k -> new AtomicLong()).incrementAndGet();
        }

        long count() {
            return count.get();
        }

        boolean has(Errno errno) {
            return byErrno.containsKey(errno);
        }

        String byErrno() {
            return byErrno.isEmpty() ? "" : new TreeMap<>(byErrno).toString();
        }

        Map<String, Object> toMap() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("count", count.get());
            new TreeMap<>(byErrno).forEach((k, v) -> m.put(k.name(), v.get()));
            return m;
        }
    }

    private static Latencies merge(Latencies[] perThread) {
        Latencies all = new Latencies();
        for (Latencies l : perThread) {
            if (l != null) {
                all.add(l);
            }
        }
        return all;
    }

    private int runWithoutCache(Report report, VerbsProvider provider, List<ProtectionDomain> domains,
                                List<AddressHandleAttributes> peerAttributes, Latencies efaAhHit) throws Exception {
        AtomicLong requests = new AtomicLong();
        AtomicLong created = new AtomicLong();
        Failed failed = new Failed();
        CyclicBarrier barrier = new CyclicBarrier(threads);
        // A create that returns the AHN of a live AH of its PD was answered by the kernel's AH cache
        // (EFA numbers one hardware AH per AHN); the first of each is a new hardware AH.
        Set<Long> liveAhns = ConcurrentHashMap.newKeySet();
        Latencies[] cachedNanos = new Latencies[threads];
        Latencies[] newNanos = new Latencies[threads];
        runWorkers(w -> {
            List<HardwareAddressHandle> own = new ArrayList<>();
            Latencies cached = cachedNanos[w] = new Latencies();
            Latencies fresh = newNanos[w] = new Latencies();
            barrier.await();
            try {
                // Each worker starts at its own share of the peers, so that a create meets the kernel's
                // cache as a later connect does, not racing another worker's create of the same peer.
                int offset = (int) ((long) w * peerAttributes.size() / threads);
                for (int d = 0; d < domains.size(); d++) {
                    ProtectionDomain pd = domains.get(d);
                    for (int i = 0; i < peerAttributes.size() && !stop; i++) {
                        requests.incrementAndGet();
                        long t0 = System.nanoTime();
                        try {
                            HardwareAddressHandle ah = pd.createAh(peerAttributes.get((i + offset) % peerAttributes.size()));
                            long nanos = System.nanoTime() - t0;
                            own.add(ah);
                            created.incrementAndGet();
                            boolean hit = ah.ahn() >= 0 && !liveAhns.add((long) d << 32 | ah.ahn());
                            (hit ? cached : fresh).record(nanos);
                        } catch (VerbsException e) {
                            failed.add(e);
                        }
                        connectsDone.incrementAndGet();
                    }
                }
                barrier.await();
            } finally {
                for (HardwareAddressHandle ah : own) {
                    ah.destroy();
                }
            }
        });
        Latencies cached = merge(cachedNanos);
        Latencies fresh = merge(newNanos);
        report.line("logical AH requests:      %,d", requests.get());
        report.line("AHs created (ibv_create_ah succeeded): %,d  (distinct (PD, GID) pairs: %,d)", created.get(),
                domains.size() * peerAttributes.size());
        printDevice(report, provider);
        report.line("failed creates:           %s", failed.count() == 0 ? "0" : failed.count() + " " + failed.byErrno());
        report.line("ibv_create_ah, a system call each:");
        report.line("  answered by the kernel's AH cache (AHN of a live AH): %s", cached.summary());
        report.line("  new hardware AHs:                                     %s", fresh.summary());
        report.line("an efa-ah hit instead (acquire+close, no system call; one thread, zero-latency mock): %s",
                efaAhHit.summary());
        report.line("(no per-message look-ups: without a cache each worker keeps its own AHs)");
        report.put("requests", requests.get()).put("hardware_creates", created.get())
                .put("distinct_pd_gid_pairs", domains.size() * peerAttributes.size())
                .put("failed_creates", failed.toMap()).put("kernel_cache_create_latency", cached.toMap())
                .put("new_ah_create_latency", fresh.toMap()).put("efa_ah_hit_latency", efaAhHit.toMap());
        putDevice(report, provider);
        if (interrupted) {
            return interruptedExit(report);
        }
        if (failed.count() > 0) {
            // What this mode shows, and the exit says it: without a cache, workers went without AHs.
            spec.commandLine().getErr().printf("%s: %,d of %,d creates failed without the cache %s%s%s%n",
                    spec.qualifiedName(), failed.count(), requests.get(), failed.byErrno(),
                    failed.has(Errno.EINVAL) ? ": the device refuses a second AH for one (PD, GID); through the "
                            + "cache each pair gets one" : "",
                    failed.has(Errno.ENOMEM) ? String.format(": max_ah %s reached, %,d creates for %,d distinct "
                            + "(PD, GID) pairs; through the cache they take %,d AHs, one per pair", maxAh(provider),
                            requests.get(), domains.size() * peerAttributes.size(),
                            domains.size() * peerAttributes.size()) : "");
            return Main.FAILED;
        }
        return 0;
    }

    /** The mock's max_ah, or "of the device" (a device's is in 'efa-ah devices'). */
    private static String maxAh(VerbsProvider provider) {
        return provider instanceof MockVerbsProvider m ? String.format("%,d", m.config().maxAh())
                : "of the device (see efa-ah devices)";
    }

    private static void printDevice(Report report, VerbsProvider provider) {
        if (provider instanceof MockVerbsProvider m) {
            MockCounters c = m.counters();
            report.line("device: hardware creates %,d, peak live AHs %,d, duplicates refused %,d, duplicate AHs made %,d,"
                            + " kernel-cache hits %,d", c.hardwareCreates(), c.peakLiveAhs(), c.duplicatesRefused(),
                    c.duplicatesCreated(), c.kernelCacheHits());
        }
    }

    private static void putDevice(Report report, VerbsProvider provider) {
        if (provider instanceof MockVerbsProvider m) {
            MockCounters c = m.counters();
            Map<String, Object> d = new LinkedHashMap<>();
            d.put("hardware_creates", c.hardwareCreates());
            d.put("peak_live_ahs", c.peakLiveAhs());
            d.put("duplicates_refused", c.duplicatesRefused());
            d.put("duplicates_created", c.duplicatesCreated());
            d.put("kernel_cache_hits", c.kernelCacheHits());
            report.put("mock_device", d);
        }
    }

    private int interruptedExit(Report report) {
        report.put("interrupted", true);
        spec.commandLine().getErr().printf("%s: interrupted after %,d connects and %,d look-ups%n",
                spec.qualifiedName(), connectsDone.get(), lookupsDone.get());
        return Main.INTERRUPTED;
    }

    interface Worker {
        void run(int index) throws Exception;
    }

    /**
     * Runs one thread per worker and waits for all. Interrupted, it stops them and throws; the
     * first worker failure stops the others and is thrown with its own message.
     */
    private static void joinUninterruptibly(Thread t) {
        boolean again = false;
        while (t.isAlive()) {
            try {
                t.join();
            } catch (InterruptedException e) {
                again = true;
            }
        }
        if (again) {
            Thread.currentThread().interrupt();
        }
    }

    private void runWorkers(Worker worker) throws Exception {
        List<Thread> list = new ArrayList<>();
        List<Throwable> errors = new ArrayList<>();
        for (int w = 0; w < threads; w++) {
            int index = w;
            Thread t = new Thread(() -> {
                try {
                    worker.run(index);
                } catch (BrokenBarrierException e) {
                    // another worker failed or the run was stopped; that one reports
                } catch (Throwable e) {
                    synchronized (errors) {
                        errors.add(e);
                    }
                    stop = true;
                    list.forEach(Thread::interrupt);
                }
            }, "worker-" + w);
            list.add(t);
        }
        list.forEach(Thread::start);
        try {
            for (Thread t : list) {
                t.join();
            }
        } catch (InterruptedException e) {
            // Ctrl-C: stop the workers; the caller reports what they did.
            interrupted = true;
            stop = true;
            list.forEach(Thread::interrupt);
            for (Thread t : list) {
                joinUninterruptibly(t);
            }
            return;
        }
        synchronized (errors) {
            if (!errors.isEmpty()) {
                Throwable first = errors.get(0);
                if (first instanceof Exception e) {
                    throw e;
                }
                throw (Error) first;
            }
        }
    }
}
