package org.efaah.cli;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.CacheStats;
import org.efaah.cache.LeakDetection;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.Errno;
import org.efaah.verbs.Gid;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.spi.VerbsProvider;
import org.efaah.verbs.mock.DuplicatePolicy;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockCounters;
import org.efaah.verbs.mock.MockVerbsProvider;

/**
 * A seeded random mix of acquire and close across threads on a strict mock EFA device, with
 * faults injected ({@link #run()}), or on a real device without any ({@link #runOn}), checking
 * the cache's invariants throughout and at the end:
 * <ul>
 *   <li>never a duplicate in the mock's device table (a strict device would refuse it, a legacy one
 *       would count it);</li>
 *   <li>every handle is usable until it is closed, and two handles of one key name one AH;</li>
 *   <li>only injected errnos ever surface (on a real device, none);</li>
 *   <li>at the end: no handle or entry left, every hardware AH destroyed exactly once, no
 *       destroy of an unknown AH, no thread stuck (on a real device, whose AH table cannot be
 *       read, as the cache counted its creates and destroys).</li>
 * </ul>
 * Used by the {@code stress} command and by tests.
 */
final class StressRun {
    /** The errnos injected into creates at random, one per fault. */
    static final List<Errno> INJECTED = List.of(Errno.ENOMEM, Errno.ETIME, Errno.ENODEV, Errno.EAGAIN);

    /**
     * @param threads            worker threads
     * @param peers              distinct destination GIDs
     * @param pds                protection domains, each peer is used on each
     * @param durationNanos      how long to run, ns (ops stop when either limit is reached)
     * @param maxOperations      most operations in all threads together
     * @param seed               seed of every random choice
     * @param faultProbability   chance that a create or destroy fails on purpose
     * @param createLatencyNanos mock hardware create time, ns
     */
    record Settings(int threads, int peers, int pds, long durationNanos, long maxOperations, long seed,
                           double faultProbability, long createLatencyNanos) {
    }

    /** What a run did and what it found wrong (empty {@link #violations()} means none). */
    record Result(long acquires, long failedAcquires, long closes, long injectedFailures, CacheStats cache,
                         MockCounters device, List<String> violations, long elapsedNanos, boolean interrupted,
                         int peers) {
        boolean passed() {
            return violations.isEmpty();
        }

        /** Every acquire tried, failed or not, and every close: the parts add up to this. */
        long operations() {
            return acquires + failedAcquires + closes;
        }
    }

    private final Settings settings;
    private org.efaah.cache.RetentionPolicy retention = org.efaah.cache.RetentionPolicy.none();
    private final List<String> violations = Collections.synchronizedList(new ArrayList<>());
    private final AtomicLong operations = new AtomicLong();
    private final AtomicLong acquires = new AtomicLong();
    private final AtomicLong closes = new AtomicLong();
    private final AtomicLong failures = new AtomicLong();
    /** Set by an interrupt (Ctrl-C): workers stop, and the run ends with its checks as usual. */
    private volatile boolean stopped;

    StressRun(Settings settings) {
        this.settings = settings;
    }

    /** Runs the cache with {@code policy} (default none). */
    StressRun retention(org.efaah.cache.RetentionPolicy policy) {
        this.retention = java.util.Objects.requireNonNull(policy, "policy");
        return this;
    }

    /** Operations done so far (acquires, failed acquires, closes), for progress lines. */
    long operationsSoFar() {
        return acquires.get() + failures.get() + closes.get();
    }

    long injectedFailuresSoFar() {
        return failures.get();
    }

    int violationsSoFar() {
        return violations.size();
    }

    /**
     * Runs on a strict mock EFA device of its own with faults injected, to the end or until
     * interrupted: then the workers stop and the end checks still run.
     */
    Result run() {
        // Strict, not the default kernel-cached device: a duplicate create must show, not be absorbed.
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().duplicatePolicy(DuplicatePolicy.STRICT)
                .maxAh(Math.min(MockConfig.MAX_AH_LIMIT, settings.peers() * settings.pds() + 16))
                .createLatencyNanos(settings.createLatencyNanos())
                .build());
        List<AddressHandleAttributes> peers = new ArrayList<>();
        for (int i = 0; i < settings.peers(); i++) {
            peers.add(AddressHandleAttributes.forGid(String.format("fd00::%x:%x", i >>> 16, i & 0xffff)));
        }
        try (Device device = Device.openFirst(mock)) {
            return run(device, mock, peers);
        }
    }

    /**
     * Runs on the first device of {@code provider} (which stays open), as {@link #run()} does but
     * without faults, whatever the settings say: only the mock can inject them. The peers are the
     * distinct GIDs of the device's port 1, at most {@link Settings#peers()} of them: a real device
     * refuses an AH to a GID that does not exist (EFA answers EINVAL, libfabric PR #12136). Its AH
     * table cannot be read, so {@link Result#device()} is null and the end checks use the cache's
     * counters.
     *
     * @param provider the provider whose device to use
     * @return what the run did and found
     */
    Result runOn(VerbsProvider provider) {
        try (Device device = Device.openFirst(provider)) {
            java.util.Set<Gid> gids = new java.util.LinkedHashSet<>();
            for (int i = 0; i < device.port(1).gidTableLength() && gids.size() < settings.peers(); i++) {
                try {
                    Gid gid = device.gid(1, i);
                    if (!gid.isZero()) {
                        gids.add(gid);
                    }
                } catch (VerbsException emptySlot) {
                    // ENODATA on newer kernels: nothing at this index
                }
            }
            if (gids.isEmpty()) {
                throw new IllegalStateException(device.name() + " port 1 has no GID to make AHs to");
            }
            List<AddressHandleAttributes> peers = new ArrayList<>();
            gids.forEach(g -> peers.add(AddressHandleAttributes.forGid(g)));
            return run(device, null, peers);
        }
    }

    /** {@code mock}: the mock to inject faults into and whose AH table to check; null on a real device. */
    private Result run(Device device, MockVerbsProvider mock, List<AddressHandleAttributes> peers) {
        long start = System.nanoTime();
        List<ProtectionDomain> pds = new ArrayList<>();
        for (int i = 0; i < settings.pds(); i++) {
            pds.add(device.allocatePd());
        }
        AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED)
                .retention(retention).build();
        long deadline = start + settings.durationNanos();
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < settings.threads(); t++) {
            SplittableRandom random = new SplittableRandom(settings.seed() * 1_000_003L + t);
            Thread w = new Thread(() -> work(random, mock, cache, pds, peers, deadline), "stress-" + t);
            workers.add(w);
            w.start();
        }
        Thread faults = null;
        if (mock != null) {
            faults = new Thread(() -> injectDestroyFaults(mock, deadline, settings.seed()), "stress-faults");
            faults.setDaemon(true);
            faults.start();
        }
        for (Thread w : workers) {
            join(w, TimeUnit.NANOSECONDS.toMillis(settings.durationNanos()) + 60_000);
            if (w.isAlive()) {
                violation(w.getName() + " is stuck");
            }
        }
        // With --ops the workers may end long before the deadline: the faults must end with them, or
        // one injected after this line fails the cache's close.
        workersDone = true;
        if (mock != null) {
            join(faults, 10_000);
            mock.failNextDestroys(0, Errno.EIO);
        }
        checkEnd(mock, cache);
        try {
            cache.close();
        } catch (VerbsException e) {
            violation("cache close failed: " + e.getMessage());
        }
        CacheStats stats = cache.stats();
        if (mock != null) {
            checkDevice(mock.counters(), stats);
        } else if (stats.hardwareCreates() != stats.hardwareDestroys()) {
            // No fault was injected, so every AH the cache made must be destroyed by its close.
            violation("the cache created " + stats.hardwareCreates() + " AH(s) and destroyed "
                    + stats.hardwareDestroys());
        }
        for (ProtectionDomain pd : pds) {
            pd.close();
        }
        return new Result(acquires.get(), failures.get(), closes.get(), mock == null ? 0 : failures.get(), stats,
                mock == null ? null : mock.counters(), List.copyOf(violations), System.nanoTime() - start, stopped,
                peers.size());
    }

    /** The mock's AH table after the cache's close: empty, every create destroyed once, counted alike. */
    private void checkDevice(MockCounters m, CacheStats stats) {
        if (m.liveAhs() != 0) {
            violation(m.liveAhs() + " hardware AH(s) left after cache close");
        }
        long injectedDestroyFailures = m.destroyCalls() - m.hardwareDestroys();
        if (m.hardwareCreates() != m.hardwareDestroys()) {
            violation("hardware creates " + m.hardwareCreates() + " != destroys " + m.hardwareDestroys());
        }
        if (injectedDestroyFailures < 0 || injectedDestroyFailures > m.injectedFailures()) {
            violation("destroy calls " + m.destroyCalls() + " not explained by " + m.hardwareDestroys()
                    + " destroys and injected failures");
        }
        if (stats.hardwareCreates() != m.hardwareCreates()) {
            violation("cache counted " + stats.hardwareCreates() + " creates, device " + m.hardwareCreates());
        }
    }

    private void work(SplittableRandom random, MockVerbsProvider mock, AddressHandleCache cache,
                      List<ProtectionDomain> pds, List<AddressHandleAttributes> peers, long deadline) {
        List<AddressHandle> held = new ArrayList<>();
        try {
            while (violations.isEmpty() && !stopped && System.nanoTime() < deadline
                    && operations.incrementAndGet() <= settings.maxOperations()) {
                if (held.isEmpty() || (held.size() < 64 && random.nextBoolean())) {
                    ProtectionDomain pd = pds.get(random.nextInt(pds.size()));
                    AddressHandleAttributes peer = peers.get(random.nextInt(peers.size()));
                    if (mock != null && random.nextDouble() < settings.faultProbability()) {
                        mock.failNextCreates(1, INJECTED.get(random.nextInt(INJECTED.size())));
                    }
                    try {
                        AddressHandle h = cache.acquire(pd, peer);
                        acquires.incrementAndGet();
                        check(h, pd, peer, held);
                        held.add(h);
                    } catch (VerbsException e) {
                        if (mock == null || !INJECTED.contains(e.errno())) {
                            violation("unexpected " + e.getMessage());
                        }
                        failures.incrementAndGet();
                    }
                } else {
                    AddressHandle h = held.remove(random.nextInt(held.size()));
                    h.close();
                    closes.incrementAndGet();
                }
            }
        } catch (RuntimeException e) {
            violation(Thread.currentThread().getName() + " failed: " + e);
        } finally {
            for (AddressHandle h : held) {
                h.close();
                closes.incrementAndGet();
            }
        }
    }

    private void check(AddressHandle h, ProtectionDomain pd, AddressHandleAttributes peer, List<AddressHandle> held) {
        try {
            h.nativeHandle();
            if (h.pd() != pd || !h.dgid().equals(peer.dgid())) {
                violation("handle for " + peer.dgid() + " names " + h.dgid());
            }
            for (AddressHandle other : held) {
                if (other.pd() == pd && other.dgid().equals(peer.dgid()) && other.ahn() != h.ahn()) {
                    violation("two live AHs for " + peer.dgid() + ": AHN " + other.ahn() + " and " + h.ahn());
                }
            }
        } catch (IllegalStateException e) {
            violation("fresh handle unusable: " + e.getMessage());
        }
    }

    /** Set once every worker has ended: the fault thread stops then. */
    private volatile boolean workersDone;

    private void injectDestroyFaults(MockVerbsProvider mock, long deadline, long seed) {
        SplittableRandom random = new SplittableRandom(seed ^ 0x5DEECE66DL);
        while (System.nanoTime() < deadline && violations.isEmpty() && !stopped && !workersDone) {
            if (random.nextDouble() < settings.faultProbability() * 10) {
                mock.failNextDestroys(1, Errno.EIO);
            }
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                return;
            }
            MockCounters m = mock.counters();
            if (m.duplicatesRefused() != 0 || m.duplicatesCreated() != 0) {
                violation("the device saw a duplicate AH: " + m);
            }
        }
    }

    private void checkEnd(MockVerbsProvider mock, AddressHandleCache cache) {
        if (cache.inspection().liveHandles() != 0) {
            violation(cache.inspection().liveHandles() + " handle(s) still counted live after every worker closed its own");
        }
        if (mock == null) {
            return; // a real device's AH table cannot be read
        }
        MockCounters m = mock.counters();
        if (m.duplicatesRefused() != 0 || m.duplicatesCreated() != 0) {
            violation("the device saw a duplicate AH: " + m);
        }
        // Only AHs whose destroy failed may remain before close, kept for reuse and retry.
        if (m.liveAhs() != cache.inspection().liveEntries()) {
            violation("device holds " + m.liveAhs() + " AH(s) but the cache " + cache.inspection().liveEntries() + " entries");
        }
    }

    /** Joins {@code t}; an interrupt stops the run and the join goes on (the interrupt is kept). */
    private void join(Thread t, long millis) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        boolean interrupted = false;
        for (long left = millis; t.isAlive() && left > 0;
             left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())) {
            try {
                t.join(left);
            } catch (InterruptedException e) {
                interrupted = true;
                stopped = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    private void violation(String what) {
        if (violations.size() < 20) {
            violations.add(what);
        }
    }
}
