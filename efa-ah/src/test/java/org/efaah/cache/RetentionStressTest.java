package org.efaah.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import javax.management.ObjectName;
import org.efaah.fixture.FaultyProvider;
import org.efaah.fixture.LogCapture;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.Errno;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.mock.DuplicatePolicy;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;

/**
 * Issues 10 and 22: retention on a fake clock, ENOMEM evictions (max_ah 24 for 2 x 48 keys),
 * invalidations (one peer, a port, a PD, all), failed destroys, look-ups by AHN, and each of the
 * cache's endings (a close, a close racing everything, a forced device close racing everything)
 * racing acquires and releases on four threads, epoch after epoch, on EFA and on RoCE devices
 * in turn. Violations, counted and required to be 0:
 * <ul>
 *   <li>an AH destroyed while a handle to it is held (the provider's destroy checks), but by a
 *       close or its device's close;</li>
 *   <li>on RoCE, a stale AH handed out: an acquire that began after an invalidation of its key
 *       had returned got an AH created before that invalidation began (a logical clock orders
 *       creates, invalidations and acquires);</li>
 *   <li>on EFA, a look-up by AHN of an AH this thread holds that misses it, or any failed
 *       acquire but ENOMEM (an invalidation never makes one fail);</li>
 *   <li>a refusal before any close began; a handle that works, or an acquire that succeeds, after
 *       a close returned;</li>
 *   <li>once all is quiet: an unreferenced AH neither on the idle list nor in the detached set,
 *       an invalidated one still listed, and the idle list, {@code retainedEntries()},
 *       {@code liveEntries()} and the device's AHs in disagreement;</li>
 *   <li>after a close: any AH of the cache left on the device, or an MXBean left registered;
 *       at the end: any closed cache still reachable (through a device listener, an MXBean).</li>
 * </ul>
 * Runs {@value #SECONDS_PROPERTY} seconds (default 4); {@code -Defaah.stress.seconds=600} for the
 * long run.
 */
class RetentionStressTest {
    static final String SECONDS_PROPERTY = "efaah.stress.seconds";
    private static final int PEERS = 48;
    private static final int WORKERS = 4;

    private enum Ending { CLOSE_WHEN_QUIET, CLOSE_RACING, DEVICE_CLOSE_RACING }

    private final List<String> violations = Collections.synchronizedList(new ArrayList<>());
    private final LongAdder acquires = new LongAdder();
    private final LongAdder releases = new LongAdder();
    private final LongAdder lookUps = new LongAdder();
    private final LongAdder invalidations = new LongAdder();
    private final LongAdder enomem = new LongAdder();
    private final LongAdder refusals = new LongAdder();
    private final LongAdder staleChecks = new LongAdder();
    private final LongAdder evictions = new LongAdder();
    private final LongAdder reaped = new LongAdder();
    private final LongAdder destroyFaults = new LongAdder();
    private final AtomicLongArray endings = new AtomicLongArray(Ending.values().length);
    private final List<WeakReference<AddressHandleCache>> closedCaches = new ArrayList<>();
    /** Kept reachable to the end, so that a listener a closed cache left on one keeps that cache reachable. */
    private final List<Device> devices = new ArrayList<>();

    @Test
    void lifecycleRacingAcquiresReleasesAndLookUpsNeverHurtAHandleNorLeaveAnythingBehind() throws Exception {
        long seconds = Long.getLong(SECONDS_PROPERTY, 4);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        SplittableRandom random = new SplittableRandom(20261201L);
        int epochs = 0;
        try (LogCapture log = LogCapture.of(AddressHandleCache.class, Device.class)) {
            log.discard = true; // leaks at close, devices closed under PDs, failed destroys: all expected
            while (System.nanoTime() < deadline || epochs < 2 * Ending.values().length) {
                runEpoch(epochs++, random.split());
            }
        }
        int reachable = reachableClosedCaches();
        if (reachable > 0) {
            violations.add(reachable + " closed cache(s) still reachable");
        }
        long operations = acquires.sum() + releases.sum() + lookUps.sum() + invalidations.sum();
        System.out.printf("lifecycle stress, %d s: %,d epochs (closes when quiet %,d, racing %,d, forced device closes %,d), "
                + "%,d operations (%,d acquires, %,d releases, %,d look-ups by AHN, %,d invalidations), %,d refusals "
                + "after a close began, ENOMEM %,d, evictions %,d, reaped %,d, injected destroy failures %,d, "
                + "stale checks %,d, violations %d%n", seconds, epochs, endings.get(0), endings.get(1), endings.get(2),
                operations, acquires.sum(), releases.sum(), lookUps.sum(), invalidations.sum(), refusals.sum(),
                enomem.sum(), evictions.sum(), reaped.sum(), destroyFaults.sum(), staleChecks.sum(), violations.size());
        assertEquals(List.of(), violations.subList(0, Math.min(5, violations.size())), violations.size() + " violations");
        assertTrue(acquires.sum() > 500 && lookUps.sum() > 20 && staleChecks.sum() > 20 && evictions.sum() > 0
                && reaped.sum() > 0, "every race ran");
    }

    /** One device, two PDs and a cache, raced for up to a few hundred ms, then ended one of three ways. */
    private void runEpoch(int epoch, SplittableRandom random) throws Exception {
        Ending ending = Ending.values()[epoch % Ending.values().length];
        boolean efa = (epoch / Ending.values().length) % 2 == 0;
        MockConfig config = MockFixture.strictDevice().efa(efa).maxAh(24)
                .duplicatePolicy(efa ? DuplicatePolicy.STRICT : DuplicatePolicy.LEGACY).build();
        FaultyProvider provider = new FaultyProvider(new MockVerbsProvider(config));
        Device device = Device.openFirst(provider);
        devices.add(device);
        ProtectionDomain[] pds = {device.allocatePd(), device.allocatePd()};
        AtomicLong now = new AtomicLong(1_000_000_000L);
        AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED).ticker(now::get)
                .retention(RetentionPolicy.idle(Duration.ofSeconds(5), 16)).build();
        String where = (efa ? "EFA" : "RoCE") + " epoch " + epoch + " (" + ending + "): ";

        AtomicLong clock = new AtomicLong();
        ConcurrentHashMap<Long, Long> births = new ConcurrentHashMap<>();
        ConcurrentHashMap<Long, AtomicInteger> held = new ConcurrentHashMap<>();
        AtomicLongArray invalidationBegan = new AtomicLongArray(2 * PEERS);
        AtomicBoolean closing = new AtomicBoolean(); // a close (cache or device) was called
        AtomicLong closeReturned = new AtomicLong(Long.MAX_VALUE);
        AtomicBoolean faults = new AtomicBoolean(true);
        AtomicBoolean stop = new AtomicBoolean();
        provider.onCreated = h -> births.put(h, clock.incrementAndGet());
        provider.onDestroy = h -> {
            AtomicInteger n = held.get(h);
            if (n != null && n.get() > 0 && !closing.get()) {
                violations.add(where + "AH " + h + " destroyed with " + n.get() + " handle(s) held");
            }
        };
        ObjectName bean = new ObjectName("org.efaah.stress:type=AddressHandleCache,name=epoch" + epoch);
        if (ending != Ending.CLOSE_RACING) {
            cache.inspection().registerMXBean(bean.toString());
        }

        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < WORKERS; t++) {
            SplittableRandom own = random.split();
            threads.add(new Thread(() -> work(own, cache, pds, efa, where, clock, births, held, invalidationBegan,
                    closing, closeReturned, stop), "stress-" + t));
        }
        SplittableRandom invalidatorRandom = random.split();
        threads.add(new Thread(() -> {
            while (!stop.get()) {
                int key = invalidatorRandom.nextInt(2 * PEERS);
                long began = clock.incrementAndGet();
                int choice = invalidatorRandom.nextInt(100);
                if (choice == 0) {
                    cache.invalidateAll();
                    for (int k = 0; k < 2 * PEERS; k++) {
                        invalidationBegan.accumulateAndGet(k, began, Math::max);
                    }
                } else if (choice == 1) {
                    cache.invalidatePort(device, 1);
                    for (int k = 0; k < 2 * PEERS; k++) {
                        invalidationBegan.accumulateAndGet(k, began, Math::max);
                    }
                } else if (choice == 2) {
                    int pd = invalidatorRandom.nextInt(2);
                    cache.invalidate(pds[pd]);
                    for (int k = pd; k < 2 * PEERS; k += 2) {
                        invalidationBegan.accumulateAndGet(k, began, Math::max);
                    }
                } else {
                    cache.invalidate(pds[key % 2], attributes(key).dgid());
                    invalidationBegan.accumulateAndGet(key, began, Math::max);
                }
                invalidations.increment();
                LockSupport.parkNanos(50_000);
            }
        }, "invalidator"));
        SplittableRandom clockRandom = random.split();
        threads.add(new Thread(() -> {
            while (!stop.get()) {
                now.addAndGet(TimeUnit.SECONDS.toNanos(1));
                if (clockRandom.nextInt(20) == 0) {
                    synchronized (faults) {
                        if (faults.get()) {
                            provider.failNextDestroy(new VerbsException("ibv_destroy_ah", Errno.EIO, "injected by the stress"));
                            destroyFaults.increment();
                        }
                    }
                }
                reaped.add(cache.cleanUp());
                LockSupport.parkNanos(200_000);
            }
        }, "clock"));
        threads.forEach(Thread::start);
        TimeUnit.MILLISECONDS.sleep(40 + random.nextInt(200));

        synchronized (faults) {
            faults.set(false);
            provider.failNextDestroy(null); // a close must be able to destroy everything
        }
        switch (ending) {
            case CLOSE_WHEN_QUIET -> {
                stopAll(stop, threads, where);
                settled(() -> quietViolations(cache, provider, where));
                closing.set(true);
                cache.close();
                closeReturned.set(System.nanoTime());
                checkNothingLeft(provider, where + "after close: ");
            }
            case CLOSE_RACING -> {
                Thread registering = new Thread(() -> {
                    try {
                        cache.inspection().registerMXBean(bean.toString());
                    } catch (IllegalStateException closed) {
                        refusals.increment();
                    }
                }, "mxbean");
                registering.start();
                closing.set(true);
                cache.close();
                closeReturned.set(System.nanoTime());
                checkNothingLeft(provider, where + "after close racing acquires, releases, look-ups, invalidations: ");
                registering.join(10_000);
                stopAll(stop, threads, where);
                checkNothingLeft(provider, where + "after the racing threads stopped: ");
            }
            case DEVICE_CLOSE_RACING -> {
                closing.set(true);
                device.close();
                closeReturned.set(System.nanoTime());
                stopAll(stop, threads, where);
                settled(() -> cache.inspection().liveEntries() == 0 && cache.inspection().retainedEntries() == 0 && cache.detached.isEmpty()
                        ? List.of()
                        : List.of(where + "after the device's close: live " + cache.inspection().liveEntries() + ", retained "
                                + cache.inspection().retainedEntries() + ", detached " + cache.detached.size()));
                cache.close();
                checkNothingLeft(provider, where + "after the device's close: ");
            }
        }
        if (ManagementFactory.getPlatformMBeanServer().isRegistered(bean)) {
            violations.add(where + "MXBean " + bean + " registered after close");
            ManagementFactory.getPlatformMBeanServer().unregisterMBean(bean);
        }
        endings.incrementAndGet(ending.ordinal());
        evictions.add(cache.stats().destroysBy(RemovalCause.EVICTED_ENOMEM));
        for (ProtectionDomain pd : pds) {
            pd.close(); // EBUSY if an AH of the cache were left in it
        }
        device.close();
        closedCaches.add(new WeakReference<>(cache));
    }

    private void work(SplittableRandom random, AddressHandleCache cache, ProtectionDomain[] pds, boolean efa, String where,
                      AtomicLong clock, ConcurrentHashMap<Long, Long> births, ConcurrentHashMap<Long, AtomicInteger> held,
                      AtomicLongArray invalidationBegan, AtomicBoolean closing, AtomicLong closeReturned, AtomicBoolean stop) {
        List<Held> mine = new ArrayList<>();
        while (!stop.get()) {
            int op = random.nextInt(10);
            if (!mine.isEmpty() && (mine.size() >= 3 || op < 4)) {
                release(mine.remove(random.nextInt(mine.size())), held, closing, closeReturned, where);
            } else if (efa && !mine.isEmpty() && op < 6) {
                lookUp(mine.get(random.nextInt(mine.size())).handle(), cache, closing, where);
            } else {
                int key = random.nextInt(2 * PEERS);
                long invalidated = invalidationBegan.get(key);
                long invoked = System.nanoTime();
                try {
                    AddressHandle h = cache.acquire(pds[key % 2], attributes(key));
                    acquires.increment();
                    if (invoked > closeReturned.get()) {
                        violations.add(where + "an acquire that began after the close returned succeeded");
                    }
                    long n;
                    try {
                        n = h.nativeHandle();
                    } catch (IllegalStateException destroyedByClose) {
                        checkRefusal(destroyedByClose, closing, where);
                        h.close();
                        continue;
                    }
                    held.computeIfAbsent(n, k -> new AtomicInteger()).incrementAndGet();
                    Long born = births.get(n);
                    if (!efa && invalidated != 0 && born != null) {
                        staleChecks.increment();
                        if (born < invalidated) {
                            violations.add(where + "stale AH " + n + " (born " + born + ") handed out after an "
                                    + "invalidation of key " + key + " that began at " + invalidated);
                        }
                    }
                    mine.add(new Held(h, n));
                } catch (VerbsException e) {
                    if (e.errno() != Errno.ENOMEM) {
                        violations.add(where + "unexpected " + e);
                    }
                    enomem.increment();
                } catch (IllegalStateException refused) {
                    checkRefusal(refused, closing, where);
                }
            }
        }
        for (Held h : mine) {
            release(h, held, closing, closeReturned, where);
        }
    }

    /** A handle a worker holds, and the provider handle of its AH (known even once the handle refuses use). */
    private record Held(AddressHandle handle, long nativeHandle) {
    }

    private void release(Held held, ConcurrentHashMap<Long, AtomicInteger> counts, AtomicBoolean closing,
                         AtomicLong closeReturned, String where) {
        AddressHandle h = held.handle();
        AtomicInteger count = counts.get(held.nativeHandle());
        long invoked = System.nanoTime();
        try {
            h.nativeHandle(); // usable until closed, or until a close
            if (invoked > closeReturned.get()) {
                violations.add(where + "a handle used after its cache's or device's close returned worked");
            }
        } catch (IllegalStateException refused) {
            checkRefusal(refused, closing, where);
        }
        count.decrementAndGet();
        h.close();
        releases.increment();
    }

    private void lookUp(AddressHandle mine, AddressHandleCache cache, AtomicBoolean closing, String where) {
        try {
            int ahn = mine.ahn();
            AddressHandle found = cache.acquireByAhn(mine.pd(), ahn, cache.ahnReuseMark());
            lookUps.increment();
            if (found == null) {
                if (!closing.get()) {
                    violations.add(where + "a look-up of AHN " + ahn + ", held by this thread, found nothing");
                }
            } else {
                if (found.entry != mine.entry && !closing.get()) {
                    violations.add(where + "a look-up of AHN " + ahn + " found another AH");
                }
                found.close();
            }
        } catch (IllegalStateException refused) {
            checkRefusal(refused, closing, where);
        }
    }

    private void checkRefusal(IllegalStateException refused, AtomicBoolean closing, String where) {
        refusals.increment();
        if (!closing.get()) {
            violations.add(where + "refused before any close: " + refused.getMessage());
        }
    }

    private static void stopAll(AtomicBoolean stop, List<Thread> threads, String where) throws InterruptedException {
        stop.set(true);
        for (Thread t : threads) {
            t.join(60_000);
            assertTrue(!t.isAlive(), where + t.getName() + " stuck");
        }
    }

    /**
     * Adds what {@code check} finds once the cache's own reaper thread, which the test does not
     * stop, has ended the round it may be in when the test's threads stop: until then an entry can
     * be off the idle list and not yet destroyed, or, after its device's close (which never waits
     * for an entry lock), LIVE in the detached set with its AH freed (DeviceCloseBusyEntryTest).
     * A leak stays; the reaper's round ends, so the check is repeated for up to 10 s.
     */
    private void settled(Supplier<List<String>> check) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        List<String> found = check.get();
        while (!found.isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(1);
            found = check.get();
        }
        violations.addAll(found);
    }

    /**
     * With no handle open and no thread of the test running: every unreferenced AH is listed (or,
     * after a failed destroy of an invalidated one, detached), no invalidated one is listed, and
     * the list, its count, the live count and the device agree.
     */
    private List<String> quietViolations(AddressHandleCache cache, FaultyProvider provider, String where) {
        List<String> violations = new ArrayList<>();
        List<Entry> listed = cache.idle.oldest(e -> true, Integer.MAX_VALUE);
        if (listed.size() != cache.inspection().retainedEntries()) {
            violations.add(where + "idle list of " + listed.size() + " but retainedEntries() " + cache.inspection().retainedEntries());
        }
        for (Entry e : listed) {
            if (e.state() != Entry.State.LIVE || e.refs() != 0) {
                violations.add(where + "listed entry " + e.key + " is " + e.state() + " with count " + e.refs());
            }
        }
        for (var t : cache.tables.tables()) {
            for (Entry e : t.table().values()) {
                if (e.state() == Entry.State.LIVE && !e.idle && !cache.detached.contains(e)) {
                    violations.add(where + "orphan: unreferenced AH " + e.hardware() + " on no list (count " + e.refs() + ")");
                }
            }
        }
        long device = provider.mock.counters().liveAhs();
        if (cache.inspection().liveEntries() != device || listed.size() + cache.detached.size() != device) {
            violations.add(where + "live " + cache.inspection().liveEntries() + ", listed " + listed.size() + ", detached "
                    + cache.detached.size() + ", on the device " + device);
        }
        if (cache.inspection().liveHandles() != 0) {
            violations.add(where + cache.inspection().liveHandles() + " handles counted with none open");
        }
        return violations;
    }

    private void checkNothingLeft(FaultyProvider provider, String where) {
        long left = provider.mock.counters().liveAhs();
        if (left != 0) {
            violations.add(where + left + " AH(s) left on the device");
        }
    }

    /** Closed caches still reachable once the collector had its chances (the devices they used are). */
    private int reachableClosedCaches() throws InterruptedException {
        int reachable = Integer.MAX_VALUE;
        for (int i = 0; i < 50 && reachable > 0; i++) {
            System.gc();
            Thread.sleep(20);
            reachable = (int) closedCaches.stream().filter(r -> r.get() != null).count();
        }
        return reachable;
    }

    private static AddressHandleAttributes attributes(int key) {
        return MockFixture.peer(key / 2 + 1);
    }
}
