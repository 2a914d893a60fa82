package org.efaah.cache;

import static org.efaah.cache.MockFixture.peer;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.ForwardingVerbsProvider;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.mock.DuplicatePolicy;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.efaah.verbs.spi.CreatedAh;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Issue 33 section 1: a create that answered ENOMEM must not hand it to its caller while the cache
 * holds unreferenced AHs of the device, however other creates are scheduled. Here, deterministically,
 * another thread's create of a new peer is let in between every eviction of the create under test and
 * its next try at the device (a decorating provider holds that try until the other create has ended,
 * or is parked behind the create under test), on a device at max_ah 8 full of unreferenced AHs. With
 * a count of retries, the other creates take each freed slot until the count runs out (ENOMEM after
 * 16); the create must get its AH however many times that is offered. Run on EFA and on RoCE, with
 * the unreferenced AHs and the other creates in the create's PD and in another PD of the same device
 * (max_ah is the device's).
 */
@ExtendWith(CacheInvariants.class)
@org.junit.jupiter.api.Tag("timing") // scripts/test runs it under load: see TimingRounds
class EnomemSlotTakenTest {
    /** More than any count of retries would allow: the other creates may take this many slots. */
    private static final int ROUNDS = 40;
    private static final long BOUND_NANOS = TimeUnit.SECONDS.toNanos(20);

    static Stream<Arguments> devices() {
        MockConfig efa = MockFixture.strictDevice().maxAh(8).build();
        MockConfig roce = MockFixture.strictDevice().efa(false).duplicatePolicy(DuplicatePolicy.LEGACY).maxAh(8).build();
        return Stream.of(Arguments.of("EFA", efa, false), Arguments.of("EFA", efa, true),
                Arguments.of("RoCE", roce, false), Arguments.of("RoCE", roce, true));
    }

    /** Lets the taker's create run before each retry of the create under test. */
    static final class SlotTaker extends ForwardingVerbsProvider {
        volatile Thread underTest;
        volatile Runnable beforeRetry;
        private int tries; // only on underTest's thread

        SlotTaker(MockVerbsProvider mock) {
            super(mock);
        }

        @Override
        public CreatedAh createAh(long pd, AddressHandleAttributes attributes) {
            if (Thread.currentThread() == underTest && tries++ > 0) {
                beforeRetry.run();
            }
            return super.createAh(pd, attributes);
        }
    }

    @ParameterizedTest(name = "{0}, AHs and other creates in another PD: {2}")
    @MethodSource("devices")
    void everySlotAnEvictionFreesTakenByAnotherCreateStillTheCreateGetsItsAh(String kind, MockConfig config,
                                                                              boolean otherPd) throws Exception {
        MockVerbsProvider mock = new MockVerbsProvider(config);
        SlotTaker provider = new SlotTaker(mock);
        AtomicLong now = new AtomicLong(1_000_000_000L);
        try (Device device = Device.openFirst(provider);
             ProtectionDomain pd = device.allocatePd();
             ProtectionDomain other = otherPd ? device.allocatePd() : null) {
            ProtectionDomain theirs = otherPd ? other : pd;
            AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.PARANOID)
                    .ticker(now::get).retention(RetentionPolicy.idle(Duration.ofHours(1), 100)).build();
            CacheInvariants.track(cache, mock);
            try {
                for (int i = 1; i <= 8; i++) {
                    cache.acquire(theirs, peer(i)).close(); // max_ah reached, all unreferenced
                }
                Semaphore go = new Semaphore(0);
                AtomicInteger started = new AtomicInteger();
                AtomicInteger ended = new AtomicInteger();
                AtomicReference<Throwable> takerFailure = new AtomicReference<>();
                AtomicInteger stop = new AtomicInteger();
                Thread taker = new Thread(() -> {
                    try {
                        for (int k = 1; go.tryAcquire(BOUND_NANOS, TimeUnit.NANOSECONDS) && stop.get() == 0; k++) {
                            started.set(k);
                            cache.acquire(theirs, peer(100 + k)).close();
                            ended.set(k);
                        }
                    } catch (Throwable t) {
                        takerFailure.set(t);
                    }
                }, "slot-taker");
                taker.setDaemon(true);
                AtomicInteger offered = new AtomicInteger();
                AtomicInteger parkedBehind = new AtomicInteger();
                provider.beforeRetry = () -> {
                    int k = offered.incrementAndGet();
                    if (k > ROUNDS) {
                        return;
                    }
                    go.release();
                    long deadline = System.nanoTime() + BOUND_NANOS;
                    while (ended.get() < k && takerFailure.get() == null) {
                        Thread.State s = taker.getState();
                        if (started.get() == k && (s == Thread.State.WAITING || s == Thread.State.TIMED_WAITING)) {
                            parkedBehind.incrementAndGet(); // waits for this create: it cannot take the slot
                            return;
                        }
                        if (System.nanoTime() > deadline) {
                            throw new AssertionError("the other create neither ended nor waited within 20 s");
                        }
                        java.util.concurrent.locks.LockSupport.parkNanos(100_000); // lets the taker run on one core
                    }
                };
                provider.underTest = Thread.currentThread();
                taker.start();
                AddressHandle mine;
                try {
                    mine = cache.acquire(pd, peer(50));
                } catch (org.efaah.verbs.VerbsException e) {
                    throw new AssertionError(e.errno() + " reached the caller after other creates took " + offered.get()
                            + " freed slots, with unreferenced AHs left: " + cache.stats(), e);
                } finally {
                    provider.underTest = null;
                    stop.set(1);
                    go.release(); // the taker ends after the round it may be in
                    taker.join(TimeUnit.NANOSECONDS.toMillis(BOUND_NANOS));
                }
                assertTrue(!taker.isAlive(), "taker stuck");
                assertNull(takerFailure.get(), () -> "the other creates: " + takerFailure.get());
                try (mine) {
                    mine.hardware(); // usable
                }
                CacheStats s = cache.stats();
                System.out.printf("%s, other PD %s: slots offered to other creates %d, of which they waited for "
                        + "the create %d; ENOMEM evictions %d, create failures %s%n", kind, otherPd,
                        Math.min(offered.get(), ROUNDS), parkedBehind.get(), s.destroysBy(RemovalCause.EVICTED_ENOMEM),
                        s.createFailuresByErrno());
                assertEquals(0, s.createFailures(), s.toString());
                assertTrue(mock.counters().peakLiveAhs() <= 8);
            } finally {
                cache.close();
            }
        }
    }

    /**
     * A create waiting for another create that is making room returns on interrupt
     * (InterruptedOperationException, interrupt status kept) and on the cache's close
     * (IllegalStateException), and counts nothing: it never called the provider.
     */
    @ParameterizedTest(name = "{0}, other PD: {2}")
    @MethodSource("devices")
    void aCreateWaitingForTheTurnReturnsOnInterruptAndOnClose(String kind, MockConfig config, boolean otherPd)
            throws Exception {
        MockVerbsProvider mock = new MockVerbsProvider(config);
        SlotTaker provider = new SlotTaker(mock);
        try (Device device = Device.openFirst(provider);
             ProtectionDomain pd = device.allocatePd();
             ProtectionDomain other = otherPd ? device.allocatePd() : null) {
            ProtectionDomain theirs = otherPd ? other : pd;
            AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.PARANOID)
                    .retention(RetentionPolicy.idle(Duration.ofHours(1), 100)).build();
            CacheInvariants.track(cache, mock);
            java.util.concurrent.CountDownLatch inRetry = new java.util.concurrent.CountDownLatch(1);
            java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
            Thread closer = null;
            try {
                for (int i = 1; i <= 8; i++) {
                    cache.acquire(pd, peer(i)).close();
                }
                provider.beforeRetry = () -> {
                    inRetry.countDown();
                    try {
                        release.await(BOUND_NANOS, TimeUnit.NANOSECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                };
                AtomicReference<Object> holderGot = new AtomicReference<>();
                Thread holder = new Thread(() -> {
                    provider.underTest = Thread.currentThread();
                    try (AddressHandle h = cache.acquire(pd, peer(50))) {
                        holderGot.set(h);
                    } catch (Throwable t) {
                        holderGot.set(t);
                    }
                }, "making-room");
                holder.setDaemon(true);
                holder.start();
                assertTrue(inRetry.await(20, TimeUnit.SECONDS), "the create evicted and retries");
                CacheStats before = cache.stats();

                AtomicReference<Throwable> interrupted = new AtomicReference<>();
                AtomicReference<Boolean> flagKept = new AtomicReference<>();
                Thread waiter = new Thread(() -> {
                    try {
                        cache.acquire(theirs, peer(51)).close();
                    } catch (Throwable t) {
                        interrupted.set(t);
                        flagKept.set(Thread.currentThread().isInterrupted());
                    }
                }, "waiter");
                waiter.start();
                awaitParked(waiter);
                waiter.interrupt();
                waiter.join(TimeUnit.NANOSECONDS.toMillis(BOUND_NANOS));
                assertTrue(!waiter.isAlive(), "the interrupted create returned");
                assertTrue(interrupted.get() instanceof org.efaah.verbs.InterruptedOperationException,
                        String.valueOf(interrupted.get()));
                assertEquals(Boolean.TRUE, flagKept.get(), "interrupt status kept");

                AtomicReference<Throwable> refused = new AtomicReference<>();
                Thread second = new Thread(() -> {
                    try {
                        cache.acquire(theirs, peer(52)).close();
                    } catch (Throwable t) {
                        refused.set(t);
                    }
                }, "waiter-at-close");
                second.start();
                awaitParked(second);
                closer = new Thread(cache::close, "closer");
                closer.start(); // waits for the create in the provider, which close cannot end
                second.join(TimeUnit.NANOSECONDS.toMillis(BOUND_NANOS));
                assertTrue(!second.isAlive(), "the waiting create returned at close, before the create it waited for");
                assertTrue(refused.get() instanceof IllegalStateException, String.valueOf(refused.get()));
                CacheStats s = cache.stats().minus(before);
                assertEquals(0, s.createFailures(), "refused before any provider call: counted nothing; " + s);
                assertEquals(0, s.misses(), s.toString());
                release.countDown();
                holder.join(TimeUnit.NANOSECONDS.toMillis(BOUND_NANOS));
                assertTrue(!holder.isAlive(), "the create making room ended");
                assertTrue(holderGot.get() instanceof IllegalStateException, "refused, the cache closed: "
                        + holderGot.get());
            } finally {
                release.countDown();
                if (closer != null) {
                    closer.join(TimeUnit.NANOSECONDS.toMillis(BOUND_NANOS));
                }
                cache.close();
            }
        }
    }

    /**
     * The only unreferenced AH is busy under another thread's lock when the create meets ENOMEM
     * (its holder is about to keep, revive or destroy it): the create waits for the holder and
     * then evicts it. Before, the ENOMEM went to the caller at once.
     */
    @ParameterizedTest(name = "{0}, other PD: {2}")
    @MethodSource("devices")
    void aCreateWhoseOnlyVictimIsBusyWaitsForItsHolder(String kind, MockConfig base, boolean otherPd) throws Exception {
        MockVerbsProvider mock = new MockVerbsProvider(base.toBuilder().maxAh(1).build());
        SlotTaker provider = new SlotTaker(mock);
        try (Device device = Device.openFirst(provider);
             ProtectionDomain pd = device.allocatePd();
             ProtectionDomain other = otherPd ? device.allocatePd() : null) {
            ProtectionDomain theirs = otherPd ? other : pd;
            AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.PARANOID)
                    .retention(RetentionPolicy.idle(Duration.ofHours(1), 100)).build();
            CacheInvariants.track(cache, mock);
            try {
                AddressHandle h = cache.acquire(theirs, peer(1));
                Entry victim = h.entry;
                h.close(); // retained: the device is full
                java.util.concurrent.CountDownLatch locked = new java.util.concurrent.CountDownLatch(1);
                java.util.concurrent.CountDownLatch letGo = new java.util.concurrent.CountDownLatch(1);
                Thread holder = new Thread(() -> {
                    victim.lock();
                    try {
                        locked.countDown();
                        letGo.await(BOUND_NANOS, TimeUnit.NANOSECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    } finally {
                        victim.unlock();
                    }
                }, "victim-holder");
                holder.start();
                assertTrue(locked.await(20, TimeUnit.SECONDS));
                AtomicReference<Object> got = new AtomicReference<>();
                provider.beforeRetry = () -> { };
                Thread creator = new Thread(() -> {
                    provider.underTest = Thread.currentThread();
                    try (AddressHandle mine = cache.acquire(pd, peer(2))) {
                        got.set(mine.hardware());
                    } catch (Throwable t) {
                        got.set(t);
                    }
                }, "creator");
                creator.start();
                // The create met ENOMEM and found its one victim busy: parked, or already failed.
                long deadline = System.nanoTime() + BOUND_NANOS;
                while (creator.getState() != Thread.State.TIMED_WAITING && creator.isAlive()) {
                    assertTrue(System.nanoTime() < deadline, "the create neither waited nor ended");
                    Thread.sleep(1);
                }
                letGo.countDown();
                creator.join(TimeUnit.NANOSECONDS.toMillis(BOUND_NANOS));
                holder.join(TimeUnit.NANOSECONDS.toMillis(BOUND_NANOS));
                assertTrue(!creator.isAlive() && !holder.isAlive());
                assertTrue(got.get() instanceof org.efaah.verbs.HardwareAddressHandle, "the create got: " + got.get());
                assertEquals(1, cache.stats().destroysBy(RemovalCause.EVICTED_ENOMEM), cache.stats().toString());
                assertEquals(0, cache.stats().createFailures(), cache.stats().toString());
            } finally {
                cache.close();
            }
        }
    }

    /** Waits (bounded) until {@code t} is parked: here, waiting for the device's turn. */
    private static void awaitParked(Thread t) throws InterruptedException {
        long deadline = System.nanoTime() + BOUND_NANOS;
        while (t.getState() != Thread.State.TIMED_WAITING && t.getState() != Thread.State.WAITING) {
            assertTrue(t.isAlive() && System.nanoTime() < deadline, "the create did not wait: " + t.getState());
            Thread.sleep(1);
        }
    }
}
