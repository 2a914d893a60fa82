package org.efaah.cache;

import org.efaah.verbs.Errno;

/**
 * Records what an {@link AddressHandleCache} does, for {@link CacheStats} snapshots; in the
 * manner of Caffeine's {@code StatsCounter}. The counting rules are those of {@link CacheStats}.
 * Implementations are thread-safe and cheap enough for the hit path ({@link #recordHit()}).
 */
interface StatsCounter {

    void recordHit();

    /** Hits counted elsewhere (in the entries' words) and added now. */
    void recordHits(long count);


    /**
     * A provider create succeeded after {@code nanos}. It and {@link #recordCreateFailure} count the
     * misses too (each miss is one provider create, per {@link CacheStats}' rules), so a miss pays
     * for no counter of its own.
     */
    void recordCreate(long nanos);

    /** A provider create failed with {@code errno}, or with a throwable that has none (null). */
    void recordCreateFailure(Errno errno);

    /** A hardware AH was destroyed for {@code cause}. */
    void recordDestroy(RemovalCause cause);

    /** A provider destroy failed; the AH still exists. */
    void recordDestroyFailure();

    /** A last close kept its AH (retention). */
    void recordRetained();

    /** An acquire took back a retained AH instead of creating one. */
    void recordRevived();

    /**
     * Entries invalidated while live, {@code byNetwork} of them by a network change: one call, so
     * that the part is never recorded before the whole (and a snapshot reads the part first).
     */
    void recordInvalidated(int count, int byNetwork);

    /**
     * The counters now; {@code leaksReported} comes from the cache's leak detection, and
     * {@code pendingHits} gives the hits counted but not yet recorded, asked after this counter's
     * own hits are read (see {@code AddressHandleCache.pendingHits}).
     */
    CacheStats snapshot(long leaksReported, java.util.function.LongSupplier pendingHits);

    /** Counts with {@link java.util.concurrent.atomic.LongAdder}s. */
    static StatsCounter concurrent() {
        return new ConcurrentStatsCounter();
    }

    /** Counts nothing: every snapshot is zero but for leaks. */
    static StatsCounter disabled() {
        return DisabledStatsCounter.INSTANCE;
    }
}
