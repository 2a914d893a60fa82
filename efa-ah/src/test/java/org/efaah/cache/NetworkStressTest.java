package org.efaah.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import org.efaah.roce.NetworkEvent;
import org.efaah.roce.NetworkWatchers;
import org.efaah.roce.RoceNetwork;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Gid;
import org.efaah.verbs.mock.DuplicatePolicy;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockNetwork;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Issue 20 done-when, mock half: neighbour MAC changes (and same-MAC refreshes, MTU changes and
 * lost notifications) through the network watcher racing acquires, closes and the reaper over six
 * threads, with retention. Violations, all counted and required to be 0:
 * <ul>
 *   <li>an AH destroyed while a handle to it is held;</li>
 *   <li>a stale AH handed out: an acquire that began after the cache had handled the change of a
 *       peer's MAC to version v got an AH made with an older MAC.</li>
 * </ul>
 * Each MAC carries its version; the mock records the MAC every AH resolved at its create.
 */
@ExtendWith(CacheInvariants.class)
class NetworkStressTest {
    private static final int PEERS = 32;

    private static Gid ip(int peer) {
        return Gid.parse("::ffff:10.9.1." + (peer + 1));
    }

    private static String mac(int peer, int version) {
        return String.format("02:%02x:%02x:%02x:%02x:%02x", peer, (version >> 24) & 0xff, (version >> 16) & 0xff,
                (version >> 8) & 0xff, version & 0xff);
    }

    private static int version(String mac) {
        String[] b = mac.split(":");
        return (Integer.parseInt(b[2], 16) << 24) | (Integer.parseInt(b[3], 16) << 16) | (Integer.parseInt(b[4], 16) << 8)
                | Integer.parseInt(b[5], 16);
    }

    private static AddressHandleAttributes attributes(int peer) {
        return AddressHandleAttributes.builder().dgid(ip(peer)).sgidIndex(0).build();
    }

    @Test
    void neighbourChangesRacingAcquiresNeverHandOutAStaleAhNorHurtAHandle() throws Exception {
        MockConfig config = MockFixture.strictDevice().efa(false).duplicatePolicy(DuplicatePolicy.LEGACY).maxAh(4096).build();
        ConcurrentHashMap<Long, AtomicInteger> held = new ConcurrentHashMap<>();
        // Per peer, the newest MAC version whose change the cache has handled (its listener ran).
        AtomicIntegerArray handled = new AtomicIntegerArray(PEERS);
        List<String> violations = Collections.synchronizedList(new ArrayList<>());
        AtomicLong acquires = new AtomicLong();
        AtomicLong staleChecks = new AtomicLong();
        AtomicLong changes = new AtomicLong();
        AtomicLong refreshes = new AtomicLong();
        long[] end = {Long.MAX_VALUE};
        try (FaultyFixture f = FaultyFixture.withRetention(config, 5, 16)) {
            MockNetwork net = f.provider.mock.network();
            int[] current = new int[PEERS];
            for (int p = 0; p < PEERS; p++) {
                net.setNeighbour(0, ip(p), mac(p, 0));
            }
            f.provider.onDestroy = h -> {
                AtomicInteger n = held.get(h);
                if (n != null && n.get() > 0) {
                    violations.add("AH " + h + " destroyed with " + n.get() + " handle(s) held");
                }
            };
            f.cache.acquire(f.pd, attributes(0)).close(); // the cache listens from its first acquire on
            LinkedBlockingQueue<NetworkEvent> heard = new LinkedBlockingQueue<>();
            RoceNetwork.subscribe(f.device, heard::add); // after the cache's: what is heard, the cache has handled
            NetworkWatchers.awaitTablesRead(f.provider, 10);

            end[0] = System.nanoTime() + TimeUnit.SECONDS.toNanos(4); // from here: setting up may be slow on a busy machine
            long deadline = end[0];
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 6; t++) {
                SplittableRandom random = new SplittableRandom(20261201L * 31 + t);
                threads.add(new Thread(() -> {
                    List<AddressHandle> mine = new ArrayList<>();
                    while (System.nanoTime() < deadline) {
                        if (!mine.isEmpty() && (mine.size() >= 3 || random.nextBoolean())) {
                            AddressHandle h = mine.remove(random.nextInt(mine.size()));
                            held.get(h.nativeHandle()).decrementAndGet();
                            h.close();
                            continue;
                        }
                        int peer = random.nextInt(PEERS);
                        int newest = handled.get(peer);
                        AddressHandle h = f.cache.acquire(f.pd, attributes(peer));
                        long n = h.nativeHandle();
                        held.computeIfAbsent(n, k -> new AtomicInteger()).incrementAndGet();
                        acquires.incrementAndGet();
                        String made = net.lladdrOf(n);
                        if (newest > 0) {
                            staleChecks.incrementAndGet();
                            if (made == null || version(made) < newest) {
                                violations.add("stale AH " + n + " (MAC " + made + ") to peer " + peer
                                        + " handed out after the change to version " + newest + " was handled");
                            }
                        }
                        mine.add(h);
                    }
                    for (AddressHandle h : mine) {
                        held.get(h.nativeHandle()).decrementAndGet();
                        h.close();
                    }
                }, "stress-" + t));
            }
            threads.add(new Thread(() -> {
                SplittableRandom random = new SplittableRandom(11);
                try {
                    while (System.nanoTime() < deadline) {
                        int peer = random.nextInt(PEERS);
                        int roll = random.nextInt(100);
                        if (roll < 20) {
                            net.setNeighbour(0, ip(peer), mac(peer, current[peer])); // a refresh: no event
                            refreshes.incrementAndGet();
                        } else if (roll < 22) {
                            net.setLink(0, 1500 + random.nextInt(2) * 7500, true); // MTU: the port, maybe
                        } else if (roll < 23) {
                            net.loseNotifications();
                        } else {
                            int v = ++current[peer];
                            net.setNeighbour(0, ip(peer), mac(peer, v));
                            // Wait for this change's own event (others may come first: MTU, RESYNC), then record it.
                            String want = " -> " + mac(peer, v);
                            NetworkEvent e;
                            do {
                                e = heard.poll(10, TimeUnit.SECONDS);
                            } while (e != null && !(e.kind() == NetworkEvent.Kind.NEIGHBOUR_CHANGED && e.detail().endsWith(want)));
                            if (e == null) {
                                violations.add("the change of peer " + peer + " to " + mac(peer, v) + " was never heard");
                                return;
                            }
                            handled.accumulateAndGet(peer, v, Math::max);
                            changes.incrementAndGet();
                        }
                        java.util.concurrent.locks.LockSupport.parkNanos(20_000);
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "network"));
            threads.add(new Thread(() -> {
                while (System.nanoTime() < deadline) {
                    f.advanceSeconds(1);
                    f.cache.cleanUp();
                    Thread.yield();
                }
            }, "clock"));
            ch.qos.logback.classic.Logger log = (ch.qos.logback.classic.Logger) org.slf4j.LoggerFactory
                    .getLogger(RoceNetwork.class);
            ch.qos.logback.core.read.ListAppender<ch.qos.logback.classic.spi.ILoggingEvent> lost =
                    new ch.qos.logback.core.read.ListAppender<>();
            lost.start();
            log.addAppender(lost);
            log.setAdditive(false); // the expected "notifications were lost" warnings
            try {
                threads.forEach(Thread::start);
                for (Thread t : threads) {
                    t.join(60_000);
                    assertTrue(!t.isAlive(), t.getName() + " stuck");
                }
            } finally {
                log.detachAppender(lost);
                log.setAdditive(true);
            }
            CacheStats s = f.cache.stats();
            System.out.printf("network stress: %,d acquires, %,d MAC changes, %,d same-MAC refreshes, %,d stale checks, "
                            + "creates %,d, network-invalidated %,d, destroys %s, violations %d%n", acquires.get(),
                    changes.get(), refreshes.get(), staleChecks.get(), s.hardwareCreates(), s.networkInvalidated(),
                    s.destroysByCause(), violations.size());
            assertEquals(List.of(), violations.subList(0, Math.min(5, violations.size())));
            assertEquals(0, f.cache.inspection().liveHandles());
            assertTrue(staleChecks.get() > 1000, "stale checks " + staleChecks.get());
            assertTrue(changes.get() > 100 && s.networkInvalidated() > 0, "changes " + changes.get() + ", " + s);
            f.cache.close();
            assertEquals(0, f.provider.mock.counters().liveAhs());
        }
    }
}
