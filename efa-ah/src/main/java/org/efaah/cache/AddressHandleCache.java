package org.efaah.cache;

import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.HardwareAddressHandle;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.VerbsException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A refcounted, deduplicating cache of Address Handles: every caller asks for its own
 * {@link AddressHandle}, and at most one hardware AH exists per key.
 *
 * <p><b>Key.</b> The PD object (identity, never its native address, which is reused after
 * {@code ibv_dealloc_pd}) plus what defines the hardware AH on the PD's device: on EFA the
 * destination GID alone, as the EFA driver keys its own AH table; elsewhere (mlx5, rxe) every
 * field of {@code struct ibv_ah_attr}. Requests on different PDs, or differing in a field that
 * matters, never share an AH.
 *
 * <p><b>Concurrency.</b> A hit takes no lock: a concurrent map read and an atomic increment of
 * the entry's reference count. A per-entry {@link java.util.concurrent.locks.ReentrantLock}
 * serialises the create and the destroy of one key, so a create never races a destroy of the same
 * destination: while key K is being destroyed, an acquire of K either revives the entry before
 * the destroy starts or waits for it to finish and creates anew. Different keys never wait for
 * each other. All methods are thread-safe.
 *
 * <p><b>Failure.</b> When the provider's create fails, the acquiring caller and every caller
 * waiting on the same key get a {@link VerbsException} with the provider's errno; the key is
 * forgotten and the next acquire tries again. When a destroy fails, the AH (which still exists,
 * as rdma-core frees it only on success) stays cached: a later acquire reuses it, and
 * {@link #close()} tries again.
 *
 * <p><b>Closing.</b> {@link #close()} destroys every hardware AH exactly once. Handles still open
 * are reported as leaks (a warning, and {@link CacheStats#leaksReported()}), and refuse use from
 * then on; closing them later is harmless. Handles garbage-collected without {@code close()}
 * are reported with their acquire site, per {@link LeakDetection}. A PD cannot be deallocated
 * while the cache holds AHs in it ({@code ibv_dealloc_pd} answers EBUSY): close the handles, or
 * the cache, first.
 *
 * <pre>{@code
 * try (AddressHandleCache cache = AddressHandleCache.create();
 *      AddressHandle ah = cache.acquire(pd, AddressHandleAttributes.forGid("fe80::1"))) {
 *     post(ah.nativeHandle(), ...);
 * }
 * }</pre>
 */
public final class AddressHandleCache implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(AddressHandleCache.class);

    private final ConcurrentHashMap<ProtectionDomain, ConcurrentHashMap<Object, Entry>> tables =
            new ConcurrentHashMap<>();
    private final LeakTracker leaks;
    private volatile boolean closed;
    /** The table last looked up: most programs use one PD, and this saves them a map look-up per hit. */
    private volatile PdTable lastTable;

    private record PdTable(ProtectionDomain pd, ConcurrentHashMap<Object, Entry> table) {
    }

    private final LongAdder hits = new LongAdder();
    private final LongAdder misses = new LongAdder();
    private final LongAdder liveHandles = new LongAdder();
    private final AtomicLong hardwareCreates = new AtomicLong();
    private final AtomicLong hardwareDestroys = new AtomicLong();
    private final AtomicLong createFailures = new AtomicLong();
    private final AtomicLong destroyFailures = new AtomicLong();
    private final AtomicLong liveEntries = new AtomicLong();
    private final AtomicLong peakEntries = new AtomicLong();
    private final AtomicLong totalCreateNanos = new AtomicLong();
    private final AtomicLong maxCreateNanos = new AtomicLong();
    private final AtomicLong leaksAtClose = new AtomicLong();

    private AddressHandleCache(LeakDetection leakDetection) {
        this.leaks = new LeakTracker(leakDetection);
    }

    /** A cache with leak detection from the system property {@value LeakDetection#PROPERTY} (default sampled). */
    public static AddressHandleCache create() {
        return new AddressHandleCache(LeakDetection.fromSystemProperty());
    }

    /** A cache with the given leak detection level. */
    public static AddressHandleCache create(LeakDetection leakDetection) {
        return new AddressHandleCache(Objects.requireNonNull(leakDetection, "leakDetection"));
    }

    /**
     * Returns a handle to the AH for {@code attributes} in {@code pd}, creating the hardware AH
     * ({@code ibv_create_ah(3)}) only when none exists for the key. Close the handle when done.
     *
     * @throws NullPointerException     if an argument is null
     * @throws IllegalArgumentException if {@code port_num} or {@code sgid_index} is out of range for
     *                                  the device, or the device is EFA and the AH is not global;
     *                                  checked before any provider call
     * @throws IllegalStateException    if the cache (or the PD) is closed
     * @throws VerbsException           if the provider fails to create the AH (ENOMEM at max_ah,
     *                                  EINVAL, ETIME, ENODEV, ...); callers waiting on the same key
     *                                  get the same errno
     */
    public AddressHandle acquire(ProtectionDomain pd, AddressHandleAttributes attributes) {
        Objects.requireNonNull(pd, "pd");
        Objects.requireNonNull(attributes, "attributes");
        Device device = pd.device();
        device.validate(attributes);
        Object key = device.isEfa() ? attributes.dgid() : attributes;
        PdTable last = lastTable;
        ConcurrentHashMap<Object, Entry> table = last != null && last.pd == pd ? last.table : tables.get(pd);
        if (table != null) {
            Entry e = table.get(key);
            if (e != null && e.tryRetain()) {
                hits.increment();
                return handleFor(e);
            }
        }
        return acquireSlow(pd, key, attributes);
    }

    private AddressHandle acquireSlow(ProtectionDomain pd, Object key, AddressHandleAttributes attributes) {
        for (;;) {
            checkOpen();
            ConcurrentHashMap<Object, Entry> table = table(pd);
            Entry e = table.get(key);
            if (e == null) {
                Entry fresh = new Entry(key, pd, attributes);
                fresh.lock.lock();
                try {
                    if (table.putIfAbsent(key, fresh) != null) {
                        continue;
                    }
                    create(table, fresh);
                    return handleFor(fresh);
                } finally {
                    fresh.lock.unlock();
                }
            }
            if (e.tryRetain()) {
                hits.increment();
                return handleFor(e);
            }
            e.lock.lock();
            try {
                switch (e.state) {
                    case LIVE:
                        // Unreferenced but not yet destroyed: take it back before the destroy runs.
                        e.retainLocked();
                        hits.increment();
                        return handleFor(e);
                    case FAILED:
                        throw sameFailure(e.failure);
                    default:
                        // DEAD: destroyed and removed while we waited; look again and create anew.
                        break;
                }
            } finally {
                e.lock.unlock();
            }
        }
    }

    private ConcurrentHashMap<Object, Entry> table(ProtectionDomain pd) {
        ConcurrentHashMap<Object, Entry> table = tables.get(pd);
        if (table == null) {
            // A new PD is rare: drop the empty tables of PDs deallocated since, so they do not pile up.
            tables.entrySet().removeIf(t -> t.getValue().isEmpty() && t.getKey().isClosed());
            table = tables.computeIfAbsent(pd, p -> new ConcurrentHashMap<>());
        }
        lastTable = new PdTable(pd, table);
        return table;
    }

    /** Creates the hardware AH for a fresh entry whose lock the caller holds. */
    private void create(ConcurrentHashMap<Object, Entry> table, Entry e) {
        misses.increment();
        if (closed) {
            fail(table, e, new IllegalStateException("address handle cache is closed"));
        }
        long start = System.nanoTime();
        HardwareAddressHandle hw;
        try {
            hw = e.pd.createAh(e.attributes);
        } catch (RuntimeException ex) {
            createFailures.incrementAndGet();
            fail(table, e, ex);
            return; // not reached
        }
        long nanos = System.nanoTime() - start;
        hardwareCreates.incrementAndGet();
        totalCreateNanos.addAndGet(nanos);
        maxCreateNanos.accumulateAndGet(nanos, Math::max);
        peakEntries.accumulateAndGet(liveEntries.incrementAndGet(), Math::max);
        e.hardware = hw;
        e.state = Entry.State.LIVE;
        // Publishing the first reference lets lock-free hits in, so the entry must be LIVE first.
        e.setRefs(1);
    }

    private static void fail(ConcurrentHashMap<Object, Entry> table, Entry e, RuntimeException cause) {
        e.failure = cause;
        e.state = Entry.State.FAILED;
        table.remove(e.key, e);
        throw cause;
    }

    /** A fresh exception for a waiter, so each thread gets its own stack trace. */
    private static RuntimeException sameFailure(RuntimeException original) {
        if (original instanceof VerbsException v) {
            VerbsException copy = new VerbsException(v.operation(), v.errnoValue(),
                    "while waiting for another thread's create of the same AH");
            copy.initCause(v);
            return copy;
        }
        if (original instanceof IllegalStateException) {
            return new IllegalStateException(original.getMessage(), original);
        }
        return original;
    }

    private AddressHandle handleFor(Entry e) {
        liveHandles.increment();
        if (closed) {
            // Raced with close(): this reference must not outlive the cache.
            release(e);
            throw new IllegalStateException("address handle cache is closed");
        }
        LeakTracker.Record record = leaks.maybeTrack(e);
        AddressHandle handle = new AddressHandle(this, e, record);
        if (record != null) {
            record.watch(handle);
        }
        return handle;
    }

    /** A handle for a reference already taken on {@code e}; not sampled for leaks (its owner closes it). */
    AddressHandle adopt(Entry e) {
        liveHandles.increment();
        return new AddressHandle(this, e, null);
    }

    /** Drops one reference; destroys the AH when it was the last. Called once per handle. */
    void release(Entry e) {
        liveHandles.decrement();
        if (e.release() == 0) {
            destroyIfUnreferenced(e);
        }
    }

    private void destroyIfUnreferenced(Entry e) {
        e.lock.lock();
        try {
            if (e.state != Entry.State.LIVE || e.refs() != 0) {
                return; // revived meanwhile, or already gone
            }
            if (destroyHardware(e) != null) {
                return; // kept, unreferenced: a later acquire reuses it, close() retries
            }
            e.setRefs(Entry.GONE);
            e.state = Entry.State.DEAD;
            ConcurrentHashMap<Object, Entry> table = tables.get(e.pd);
            if (table != null) {
                table.remove(e.key, e);
            }
        } finally {
            e.lock.unlock();
        }
    }

    /**
     * Destroys the entry's hardware AH with its lock held. Returns null on success, or the
     * provider's failure (counted; the AH still exists).
     */
    private VerbsException destroyHardware(Entry e) {
        HardwareAddressHandle hw = e.hardware;
        if (!hw.isDestroyed()) {
            try {
                hw.destroy();
            } catch (VerbsException ex) {
                destroyFailures.incrementAndGet();
                if (!e.destroyFailed) {
                    e.destroyFailed = true;
                    LOG.warn("destroy of {} failed ({}); the AH is kept and will be retried", hw, ex.getMessage());
                }
                return ex;
            } catch (IllegalStateException alreadyGone) {
                // The device was closed under the cache and destroyed the AH itself.
            }
            hardwareDestroys.incrementAndGet();
        }
        liveEntries.decrementAndGet();
        return null;
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("address handle cache is closed");
        }
    }

    public boolean isClosed() {
        return closed;
    }

    /** A snapshot of the counters. Cheap; safe to call from any thread at any rate. */
    public CacheStats stats() {
        return new CacheStats(hits.sum(), misses.sum(), hardwareCreates.get(), hardwareDestroys.get(),
                createFailures.get(), destroyFailures.get(), liveEntries.get(), liveHandles.sum(), peakEntries.get(),
                totalCreateNanos.get(), maxCreateNanos.get(), leaks.reported.sum() + leaksAtClose.get());
    }

    /**
     * Destroys every hardware AH the cache holds, exactly once, and refuses further acquires.
     * Handles still open are counted and logged as leaks; they refuse use afterwards. Idempotent.
     *
     * @throws VerbsException if some AH could not be destroyed (after trying all of them); that
     *                        AH still exists and is left to its device's {@code close()}
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        long openHandles = 0;
        int failed = 0;
        VerbsException firstFailure = null;
        for (ConcurrentHashMap<Object, Entry> table : tables.values()) {
            for (Entry e : table.values()) {
                e.lock.lock();
                try {
                    if (e.state != Entry.State.LIVE) {
                        continue;
                    }
                    // Handles the leak detector already reported are not counted twice.
                    openHandles += Math.max(0, e.refs() - e.collectedLeaks);
                    VerbsException failure = destroyHardware(e);
                    if (failure != null) {
                        failed++;
                        if (firstFailure == null) {
                            firstFailure = failure;
                        } else {
                            firstFailure.addSuppressed(failure);
                        }
                    }
                    e.setRefs(Entry.GONE);
                    e.state = Entry.State.DEAD;
                    table.remove(e.key, e);
                } finally {
                    e.lock.unlock();
                }
            }
        }
        tables.clear();
        lastTable = null;
        if (openHandles > 0) {
            leaksAtClose.addAndGet(openHandles);
            LOG.warn("LEAK: address handle cache closed with {} handle(s) still open (besides any reported "
                    + "garbage-collected); their AHs were destroyed and the handles refuse use", openHandles);
        }
        if (firstFailure != null) {
            LOG.error("{} AH(s) could not be destroyed at cache close", failed);
            throw firstFailure;
        }
    }
}
