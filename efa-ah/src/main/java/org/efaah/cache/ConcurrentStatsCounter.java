package org.efaah.cache;

import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.efaah.verbs.Errno;

/** A {@link StatsCounter} on {@link LongAdder}s, for counters bumped from many threads. */
final class ConcurrentStatsCounter implements StatsCounter {
    private static final RemovalCause[] CAUSES = RemovalCause.values();
    private static final Errno[] ERRNOS = Errno.values();

    private final LongAdder hits = new LongAdder();
    private final LongAdder creates = new LongAdder();
    private final LongAdder destroyFailures = new LongAdder();
    private final LongAdder totalCreateNanos = new LongAdder();
    private final AtomicLong maxCreateNanos = new AtomicLong();
    /** The most hits a snapshot reported: the next reports no fewer. */
    private final AtomicLong highestHits = new AtomicLong();
    private final LongAdder retained = new LongAdder();
    private final LongAdder revived = new LongAdder();
    private final LongAdder invalidated = new LongAdder();
    private final LongAdder networkInvalidated = new LongAdder();
    private final LongAdder[] destroysByCause = adders(CAUSES.length);
    /** Indexed by {@link Errno#ordinal()}; failures without an errno count under {@link Errno#UNKNOWN}. */
    private final LongAdder[] failuresByErrno = adders(ERRNOS.length);

    private static LongAdder[] adders(int n) {
        LongAdder[] a = new LongAdder[n];
        for (int i = 0; i < n; i++) {
            a[i] = new LongAdder();
        }
        return a;
    }

    @Override
    public void recordHit() {
        hits.increment();
    }

    @Override
    public void recordHits(long count) {
        if (count != 0) {
            hits.add(count);
        }
    }

    @Override
    public void recordCreate(long nanos) {
        creates.increment();
        totalCreateNanos.add(nanos);
        raiseTo(maxCreateNanos, nanos);
    }

    /**
     * Raises {@code max} to {@code value} if that is higher. Unlike {@code accumulateAndGet}, which
     * writes even an unchanged value, a value below the maximum costs one read.
     */
    static void raiseTo(AtomicLong max, long value) {
        for (long m = max.get(); value > m; m = max.get()) {
            if (max.compareAndSet(m, value)) {
                return;
            }
        }
    }

    @Override
    public void recordCreateFailure(Errno errno) {
        failuresByErrno[(errno == null ? Errno.UNKNOWN : errno).ordinal()].increment();
    }

    @Override
    public void recordDestroy(RemovalCause cause) {
        destroysByCause[cause.ordinal()].increment();
    }

    @Override
    public void recordDestroyFailure() {
        destroyFailures.increment();
    }

    @Override
    public void recordRetained() {
        retained.increment();
    }

    @Override
    public void recordRevived() {
        revived.increment();
    }

    @Override
    public void recordInvalidated(int count, int byNetwork) {
        if (count != 0) {
            invalidated.add(count);
        }
        if (byNetwork != 0) {
            networkInvalidated.add(byNetwork); // after the whole it is part of
        }
    }

    @Override
    public CacheStats snapshot(long leaksReported, java.util.function.LongSupplier pendingHits) {
        // A counter documented as part of another is recorded after it and read before it, so
        // that a snapshot never shows more of the part than of the whole, however it interleaves
        // with the recording: revived (of the hits), networkInvalidated (of invalidated). Sums
        // (hardwareDestroys, createFailures, misses) are made from the parts read once.
        long revivedCount = revived.sum();
        long networkCount = networkInvalidated.sum();
        long invalidatedCount = invalidated.sum();
        // The recorded hits before the pending ones (see StatsCounter#snapshot): a hit is then
        // never counted twice, though one being folded right now may be missed; reported hits
        // never go down from one snapshot to the next.
        long recorded = hits.sum();
        long hitCount = recorded + pendingHits.getAsLong();
        raiseTo(highestHits, hitCount);
        hitCount = Math.max(hitCount, highestHits.get());
        Map<RemovalCause, Long> byCause = new EnumMap<>(RemovalCause.class);
        long destroys = 0;
        for (RemovalCause c : CAUSES) {
            long n = destroysByCause[c.ordinal()].sum();
            destroys += n;
            if (n != 0) {
                byCause.put(c, n);
            }
        }
        Map<Errno, Long> byErrno = new EnumMap<>(Errno.class);
        long failureCount = 0;
        for (Errno e : ERRNOS) {
            long n = failuresByErrno[e.ordinal()].sum();
            failureCount += n;
            if (n != 0) {
                byErrno.put(e, n);
            }
        }
        long createCount = creates.sum();
        return new CacheStats(hitCount, createCount + failureCount, createCount, destroys,
                failureCount, destroyFailures.sum(), totalCreateNanos.sum(), maxCreateNanos.get(), leaksReported,
                retained.sum(), revivedCount, invalidatedCount, byCause, byErrno, networkCount);
    }
}
