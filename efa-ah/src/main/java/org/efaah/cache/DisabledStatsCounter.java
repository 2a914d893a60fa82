package org.efaah.cache;

import java.util.Map;
import org.efaah.verbs.Errno;

/** A {@link StatsCounter} that records nothing. */
enum DisabledStatsCounter implements StatsCounter {
    INSTANCE;

    @Override
    public void recordHit() {
    }

    @Override
    public void recordHits(long count) {
    }

    @Override
    public void recordCreate(long nanos) {
    }

    @Override
    public void recordCreateFailure(Errno errno) {
    }

    @Override
    public void recordDestroy(RemovalCause cause) {
    }

    @Override
    public void recordDestroyFailure() {
    }

    @Override
    public void recordRetained() {
    }

    @Override
    public void recordRevived() {
    }

    @Override
    public void recordInvalidated(int count, int byNetwork) {
    }

    @Override
    public CacheStats snapshot(long leaksReported, java.util.function.LongSupplier pendingHits) {
        return new CacheStats(0, 0, 0, 0, 0, 0, 0, 0, leaksReported, 0, 0, 0, Map.of(), Map.of());
    }
}
