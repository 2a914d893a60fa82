package org.efaah.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Errno;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.mock.DuplicatePolicy;
import org.efaah.verbs.mock.MockConfig;
import org.junit.jupiter.api.Test;

/**
 * Issue 10 done-when: retention on a fake clock, ENOMEM evictions and invalidations racing
 * acquires and closes over six threads. Violations, all counted and required to be 0:
 * <ul>
 *   <li>an AH destroyed while a handle to it is held (checked in the provider's destroy, and by
 *       using every handle before closing it);</li>
 *   <li>a stale AH handed out: an acquire that began after an invalidation of its GID had
 *       returned got an AH created before that invalidation began.</li>
 * </ul>
 * A logical clock orders creates, invalidations and acquires.
 */
class RetentionStressTest {
    private static final int PEERS = 48;

    @Test
    void retentionEvictionAndInvalidationRacingAcquiresNeverHurtAHandle() throws Exception {
        MockConfig config = MockConfig.builder().maxAh(24).duplicatePolicy(DuplicatePolicy.LEGACY).build();
        AtomicLong clock = new AtomicLong();
        ConcurrentHashMap<Long, Long> births = new ConcurrentHashMap<>();
        ConcurrentHashMap<Long, AtomicInteger> held = new ConcurrentHashMap<>();
        AtomicLongArray invalidationBegan = new AtomicLongArray(PEERS);
        List<String> violations = Collections.synchronizedList(new ArrayList<>());
        AtomicLong acquires = new AtomicLong();
        AtomicLong enomem = new AtomicLong();
        AtomicLong invalidations = new AtomicLong();
        AtomicLong staleChecks = new AtomicLong();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(4);
        try (FaultyFixture f = FaultyFixture.withRetention(config, 5, 16)) {
            f.provider.onCreated = h -> births.put(h, clock.incrementAndGet());
            f.provider.onDestroy = h -> {
                AtomicInteger n = held.get(h);
                if (n != null && n.get() > 0) {
                    violations.add("AH " + h + " destroyed with " + n.get() + " handle(s) held");
                }
            };
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 6; t++) {
                SplittableRandom random = new SplittableRandom(20261130L * 31 + t);
                threads.add(new Thread(() -> {
                    List<AddressHandle> mine = new ArrayList<>();
                    while (System.nanoTime() < deadline) {
                        if (!mine.isEmpty() && (mine.size() >= 3 || random.nextBoolean())) {
                            AddressHandle h = mine.remove(random.nextInt(mine.size()));
                            long n = h.nativeHandle(); // usable until closed
                            held.get(n).decrementAndGet();
                            h.close();
                            continue;
                        }
                        int peer = random.nextInt(PEERS);
                        long invalidated = invalidationBegan.get(peer);
                        try {
                            AddressHandle h = f.cache.acquire(f.pd, attributes(peer));
                            long n = h.nativeHandle();
                            held.computeIfAbsent(n, k -> new AtomicInteger()).incrementAndGet();
                            acquires.incrementAndGet();
                            if (invalidated != 0) {
                                staleChecks.incrementAndGet();
                                if (births.get(n) < invalidated) {
                                    violations.add("stale AH " + n + " (born " + births.get(n) + ") handed out after an "
                                            + "invalidation of peer " + peer + " that began at " + invalidated);
                                }
                            }
                            mine.add(h);
                        } catch (VerbsException e) {
                            if (e.errno() != Errno.ENOMEM) {
                                violations.add("unexpected " + e);
                            }
                            enomem.incrementAndGet();
                        }
                    }
                    for (AddressHandle h : mine) {
                        held.get(h.nativeHandle()).decrementAndGet();
                        h.close();
                    }
                }, "stress-" + t));
            }
            threads.add(new Thread(() -> {
                SplittableRandom random = new SplittableRandom(7);
                while (System.nanoTime() < deadline) {
                    int peer = random.nextInt(PEERS);
                    long began = clock.incrementAndGet();
                    f.cache.invalidate(f.pd, attributes(peer).dgid());
                    invalidationBegan.accumulateAndGet(peer, began, Math::max);
                    invalidations.incrementAndGet();
                    if (random.nextInt(50) == 0) {
                        f.cache.invalidatePort(f.device, 1); // no per-peer record: only makes more stale AHs
                    }
                    java.util.concurrent.locks.LockSupport.parkNanos(50_000);
                }
            }, "invalidator"));
            threads.add(new Thread(() -> {
                while (System.nanoTime() < deadline) {
                    f.advanceSeconds(1);
                    f.cache.cleanUp();
                    Thread.yield();
                }
            }, "clock"));
            threads.forEach(Thread::start);
            for (Thread t : threads) {
                t.join(60_000);
                assertTrue(!t.isAlive(), t.getName() + " stuck");
            }
            CacheStats s = f.cache.stats();
            System.out.printf("retention stress: %,d acquires, %,d invalidations, %,d stale checks, ENOMEM %,d, "
                    + "creates %,d, destroys %s, revived %,d, violations %d%n", acquires.get(), invalidations.get(),
                    staleChecks.get(), enomem.get(), s.hardwareCreates(), s.destroysByCause(), s.revived(),
                    violations.size());
            assertEquals(List.of(), violations.subList(0, Math.min(5, violations.size())));
            assertEquals(0, f.cache.liveHandles());
            assertTrue(s.destroysBy(RemovalCause.IDLE) > 0 && s.destroysBy(RemovalCause.INVALIDATED) > 0
                    && s.destroysBy(RemovalCause.EVICTED_ENOMEM) + s.destroysBy(RemovalCause.SIZE) > 0, s.toString());
            assertTrue(staleChecks.get() > 1000, "stale checks " + staleChecks.get());
            f.cache.close();
            assertEquals(0, f.provider.mock.counters().liveAhs());
            assertEquals(f.provider.mock.counters().hardwareCreates(), f.provider.mock.counters().hardwareDestroys());
        }
    }

    private static AddressHandleAttributes attributes(int peer) {
        return MockFixture.peer(peer + 1);
    }
}
