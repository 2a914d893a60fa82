package org.efaah.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.Errno;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.mock.MockCounters;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.efaah.verbs.mock.RandomFaults;

/**
 * Seeded random acquire, use, close (sometimes twice) and re-acquire on a strict mock EFA device
 * from many threads, with per-call create and destroy faults, checking the cache's invariants as
 * it goes and at the end. Shared by the fault-injection test and the soak.
 *
 * <p>While running: an acquire either succeeds or fails with one of the injected errnos; a
 * handle is usable until closed and keeps its AHN and native handle; two open handles of one key
 * name the same AH; the AH of a key held open by the main thread throughout ("pinned") never
 * changes. At the end: no thread stuck; the device never saw a duplicate; it holds exactly the
 * AHs the cache has entries for; with faults off, one acquire and close of each key leaves only
 * the pinned AHs (no entry stuck); then every hardware AH was destroyed exactly once, and every
 * create and destroy call is a success or an injected failure, as the cache counted them.
 */
final class RandomWorkload {

    static final List<Errno> CREATE_ERRNOS = List.of(Errno.ENOMEM, Errno.EINVAL, Errno.ETIME, Errno.ENODEV, Errno.EAGAIN);
    static final List<Errno> DESTROY_ERRNOS = List.of(Errno.EIO, Errno.EBUSY, Errno.EINVAL);

    /**
     * @param operations total operations, split evenly over the threads
     * @param keys       destination GIDs per PD (two PDs: every GID is used on both)
     * @param maxHeld    most handles a thread holds at once: few make keys drop to no reference
     *                   (destroy, then create anew) often
     */
    record Settings(int threads, long operations, int keys, int maxHeld, long createLatencyNanos, long destroyLatencyNanos,
                    double createFaultProbability, double destroyFaultProbability, long seed, long timeoutNanos) {
    }

    record Report(long operations, long acquires, long failedAcquires, Map<Errno, Long> errnosSeen, CacheStats cache,
                  MockCounters device, long injectedCreateFailures, long injectedDestroyFailures, long elapsedNanos) {
    }

    private final Settings settings;
    private final List<String> violations = Collections.synchronizedList(new ArrayList<>());
    private final AtomicLong acquires = new AtomicLong();
    private final AtomicLong failedAcquires = new AtomicLong();
    private final Map<Errno, AtomicLong> errnosSeen = new EnumMap<>(Errno.class);

    RandomWorkload(Settings settings) {
        this.settings = settings;
        for (Errno e : CREATE_ERRNOS) {
            errnosSeen.put(e, new AtomicLong());
        }
    }

    /** One open handle and what it showed when acquired. */
    private record Held(AddressHandle handle, int key, int ahn, long nativeHandle) {
    }

    Report run() throws Exception {
        MockVerbsProvider mock = new MockVerbsProvider(MockFixture.strictDevice()
                .maxAh(4096)
                .createLatencyNanos(settings.createLatencyNanos())
                .destroyLatencyNanos(settings.destroyLatencyNanos())
                .build());
        // Thousands of injected destroy faults would each log a warning; the assertions below count them.
        ch.qos.logback.classic.Logger log = (ch.qos.logback.classic.Logger) org.slf4j.LoggerFactory
                .getLogger(AddressHandleCache.class);
        ch.qos.logback.classic.Level level = log.getLevel();
        log.setLevel(ch.qos.logback.classic.Level.ERROR);
        try {
            return run(mock);
        } finally {
            log.setLevel(level);
        }
    }

    private Report run(MockVerbsProvider mock) throws Exception {
        long start = System.nanoTime();
        try (Device device = Device.openFirst(mock)) {
            ProtectionDomain[] pds = {device.allocatePd(), device.allocatePd()};
            int keyCount = 2 * settings.keys();
            ProtectionDomain[] keyPd = new ProtectionDomain[keyCount];
            AddressHandleAttributes[] keyAttributes = new AddressHandleAttributes[keyCount];
            for (int k = 0; k < keyCount; k++) {
                keyPd[k] = pds[k % 2];
                keyAttributes[k] = AddressHandleAttributes.forGid("fd00::" + Integer.toHexString(k / 2 + 1));
            }
            AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED).build();
            // Keys 0 and 1 (GID 1 on each PD) stay referenced by this thread for the whole run.
            AddressHandle[] pinned = {cache.acquire(keyPd[0], keyAttributes[0]), cache.acquire(keyPd[1], keyAttributes[1])};
            int[] pinnedAhn = {pinned[0].ahn(), pinned[1].ahn()};

            mock.injectRandomFaults(new RandomFaults(settings.createFaultProbability(), CREATE_ERRNOS,
                    settings.destroyFaultProbability(), DESTROY_ERRNOS, settings.seed()));
            CyclicBarrier go = new CyclicBarrier(settings.threads());
            List<Thread> threads = new ArrayList<>();
            long perThread = settings.operations() / settings.threads();
            for (int t = 0; t < settings.threads(); t++) {
                SplittableRandom random = new SplittableRandom(settings.seed() * 0x9E3779B97F4A7C15L + t);
                Thread thread = new Thread(() -> {
                    try {
                        go.await(30, TimeUnit.SECONDS);
                        work(random, perThread, cache, keyPd, keyAttributes, pinnedAhn);
                    } catch (Throwable e) {
                        violation(Thread.currentThread().getName() + " failed: " + e);
                    }
                }, "workload-" + t);
                threads.add(thread);
                thread.start();
            }
            long deadline = start + settings.timeoutNanos();
            for (Thread t : threads) {
                t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
                if (t.isAlive()) {
                    violation(t.getName() + " did not finish in time: stuck or too slow");
                }
            }
            long elapsed = System.nanoTime() - start;
            mock.injectRandomFaults(RandomFaults.NONE);
            assertEquals(List.of(), violations);

            for (int i = 0; i < 2; i++) {
                assertEquals(pinnedAhn[i], pinned[i].ahn(), "a pinned AH never changes");
            }
            CacheStats s = cache.stats();
            MockCounters m = mock.counters();
            assertEquals(2, cache.inspection().liveHandles(), "only the pinned handles are open: no reference leaked");
            assertEquals(0, m.duplicatesRefused(), "the device never saw a duplicate create");
            assertEquals(m.liveAhs(), cache.inspection().liveEntries(), "the device holds exactly the AHs the cache has entries for");

            // No entry stuck: every key can be acquired and released, and an AH kept after a failed
            // destroy goes with that release.
            CompletableFuture<Void> drain = CompletableFuture.runAsync(() -> {
                for (int k = 0; k < keyCount; k++) {
                    cache.acquire(keyPd[k], keyAttributes[k]).close();
                }
            });
            drain.get(30, TimeUnit.SECONDS);
            assertEquals(2, mock.counters().liveAhs(), "only the pinned AHs remain");
            pinned[0].close();
            pinned[1].close();
            m = mock.counters();
            s = cache.stats();
            assertEquals(0, m.liveAhs());
            assertEquals(0, cache.inspection().liveEntries());
            assertEquals(0, cache.inspection().liveHandles());

            long injectedCreates = m.createCalls() - m.hardwareCreates();
            long injectedDestroys = m.injectedFailures() - injectedCreates;
            assertEquals(m.hardwareCreates(), m.hardwareDestroys(), "every hardware AH destroyed exactly once");
            assertEquals(m.hardwareDestroys() + injectedDestroys, m.destroyCalls(),
                    "every destroy call is a success or an injected failure: none of an unknown AH");
            assertEquals(m.hardwareCreates(), s.hardwareCreates());
            assertEquals(m.hardwareDestroys(), s.hardwareDestroys());
            // An injected ENOMEM is retried once an AH kept after a failed destroy was evicted: each
            // such retry is one provider call more than the misses, and needed an eviction.
            long retries = m.createCalls() - s.misses();
            assertTrue(retries >= 0 && retries <= s.destroysBy(RemovalCause.EVICTED_ENOMEM),
                    "one provider call per miss, plus retries after an ENOMEM eviction: waiters never pile onto the "
                            + "device; " + retries + " retries, " + s);
            assertEquals(injectedCreates, s.createFailures() + retries);
            assertEquals(injectedDestroys, s.destroyFailures());
            long seen = errnosSeen.values().stream().mapToLong(AtomicLong::get).sum();
            assertEquals(failedAcquires.get(), seen);
            assertTrue(seen >= injectedCreates - retries, "each failed create reached at least its caller: " + seen
                    + " < " + (injectedCreates - retries));

            cache.close();
            assertEquals(0, cache.stats().leaksReported());
            for (ProtectionDomain pd : pds) {
                pd.close();
            }
            Map<Errno, Long> errnos = new EnumMap<>(Errno.class);
            errnosSeen.forEach((e, n) -> errnos.put(e, n.get()));
            return new Report(perThread * settings.threads(), acquires.get(), failedAcquires.get(), errnos, s,
                    mock.counters(), injectedCreates, injectedDestroys, elapsed);
        }
    }

    private void work(SplittableRandom random, long operations, AddressHandleCache cache, ProtectionDomain[] keyPd,
                      AddressHandleAttributes[] keyAttributes, int[] pinnedAhn) {
        List<Held> held = new ArrayList<>();
        try {
            for (long i = 0; i < operations && violations.isEmpty(); i++) {
                int r = random.nextInt(100);
                if (held.isEmpty() || (r < 45 && held.size() < settings.maxHeld())) {
                    int key = random.nextInt(keyPd.length);
                    acquire(key, cache, keyPd, keyAttributes, pinnedAhn, held);
                } else if (r < 85) {
                    Held h = held.remove(random.nextInt(held.size()));
                    h.handle.close();
                    if (r < 48) {
                        h.handle.close(); // idempotent: must not release a second reference
                    }
                } else {
                    Held h = held.get(random.nextInt(held.size()));
                    if (h.handle.ahn() != h.ahn || h.handle.nativeHandle() != h.nativeHandle) {
                        violation("handle to key " + h.key + " changed under its holder: " + h.handle);
                    }
                }
            }
        } catch (IllegalStateException e) {
            violation("an open handle refused use: " + e.getMessage());
        } finally {
            for (Held h : held) {
                h.handle.close();
            }
        }
    }

    private void acquire(int key, AddressHandleCache cache, ProtectionDomain[] keyPd,
                         AddressHandleAttributes[] keyAttributes, int[] pinnedAhn, List<Held> held) {
        AddressHandle h;
        try {
            h = cache.acquire(keyPd[key], keyAttributes[key]);
        } catch (VerbsException e) {
            failedAcquires.incrementAndGet();
            AtomicLong counter = errnosSeen.get(e.errno());
            if (counter == null || !"ibv_create_ah".equals(e.operation())) {
                violation("an errno that was never injected: " + e.getMessage());
            } else {
                counter.incrementAndGet();
            }
            return;
        }
        acquires.incrementAndGet();
        Held fresh = new Held(h, key, h.ahn(), h.nativeHandle());
        if (h.pd() != keyPd[key] || !h.dgid().equals(keyAttributes[key].dgid())) {
            violation("acquire of key " + key + " returned " + h);
        }
        if (key < 2 && fresh.ahn != pinnedAhn[key]) {
            violation("pinned key " + key + " has AHN " + pinnedAhn[key] + " but a new handle names " + fresh.ahn);
        }
        for (Held other : held) {
            if (other.key == key && (other.ahn != fresh.ahn || other.nativeHandle != fresh.nativeHandle)) {
                violation("two open handles of key " + key + " name different AHs: " + other.handle + ", " + h);
            }
            if (other.key != key && other.ahn == fresh.ahn) {
                violation("keys " + other.key + " and " + key + " share AHN " + fresh.ahn);
            }
        }
        held.add(fresh);
    }

    private void violation(String what) {
        if (violations.size() < 20) {
            violations.add(what);
        }
    }
}
