package org.efaah.cache;

import java.util.EnumMap;
import java.util.Map;
import java.util.Objects;
import org.efaah.verbs.Errno;

/**
 * A snapshot of an {@link AddressHandleCache}'s counters, in the manner of Caffeine's
 * {@code CacheStats}: counters only, each one only ever grows, so two snapshots can be
 * subtracted ({@link #minus}). What exists now (entries, handles) is asked of the cache itself:
 * {@link CacheInspection#liveEntries()}, {@link CacheInspection#liveHandles()}. Counters are
 * read one by one without a global lock: a snapshot taken while other threads work is consistent
 * per counter, not across counters, but a counter that is part of another never exceeds it in any
 * snapshot: {@code revived} of {@code hits}, {@code networkInvalidated} of {@code invalidated},
 * {@code createFailuresByErrno} (summing to {@code createFailures}) and {@code destroysByCause}
 * (summing to {@code hardwareDestroys}), {@code createFailures} and {@code hardwareCreates} of
 * {@code misses}.
 *
 * <p><b>Counting rules.</b> Every {@code acquire} that returns a handle counts exactly one hit or
 * one miss: a <i>hit</i> when the AH already existed (the lock-free path, a thread that waited
 * for another thread's create of the same key and got its AH, and a revival of a retained AH),
 * a <i>miss</i> when this call asked the provider for a new AH. An acquire that fails counts a
 * miss if it called the provider (and then one create failure), and nothing if it only waited
 * for another thread's failed create (it gets that create's errno) or was refused before any
 * provider call (closed cache, interrupted wait, fatal device). Every hardware AH destroyed
 * counts once, under the cause of its destroy; a destroy that fails counts a destroy failure and
 * is retried later (and counted again if it fails again). {@link AddressHandle#duplicate()}
 * counts nothing.
 *
 * @param hits                 acquires served by an AH that already existed (no provider call)
 * @param misses               acquires that asked the provider for a new AH (successful or not)
 * @param hardwareCreates      AHs created through the provider
 * @param hardwareDestroys     AHs destroyed through the provider, all causes
 * @param createFailures       provider creates that failed (any throwable)
 * @param destroyFailures      provider destroys that failed (the AH is kept and retried)
 * @param totalCreateNanos     time spent in successful provider creates, ns
 * @param maxCreateNanos       the longest successful provider create, ns (kept, not subtracted,
 *                             by {@link #minus})
 * @param leaksReported        handles found garbage-collected without {@code close()}, plus the
 *                             other handles still open when the cache was closed: each once
 * @param retained             last closes that kept their AH (a {@link RetentionPolicy})
 * @param revived              of {@code hits}, acquires that took back a retained AH: creates saved
 * @param invalidated          live entries invalidated (explicitly, by a device event or by the
 *                             network), each once its AH exists: an entry invalidated while its
 *                             create is in progress counts when that create succeeds, never when
 *                             it fails
 * @param destroysByCause      {@code hardwareDestroys} by {@link RemovalCause}; causes with none
 *                             are absent
 * @param createFailuresByErrno {@code createFailures} by errno; failures that carried none (an
 *                             {@link Error}, a provider bug) count as {@link Errno#UNKNOWN}
 * @param networkInvalidated   of {@code invalidated}, those invalidated by a change of the network
 *                             under a RoCE port (a neighbour's new MAC or deletion, the netdev's
 *                             MAC, MTU or link; {@link org.efaah.roce.NetworkEvent})
 */
public record CacheStats(long hits, long misses, long hardwareCreates, long hardwareDestroys, long createFailures,
                         long destroyFailures, long totalCreateNanos, long maxCreateNanos, long leaksReported,
                         long retained, long revived, long invalidated, Map<RemovalCause, Long> destroysByCause,
                         Map<Errno, Long> createFailuresByErrno, long networkInvalidated) {

    /**
     * A snapshot with the given counters; the two maps are copied (unmodifiable, null keys and
     * values refused with a {@link NullPointerException}). Counters are not checked: the cache
     * builds snapshots, callers only read them.
     *
     * @param hits                  0 or more
     * @param misses                0 or more
     * @param hardwareCreates       0 or more
     * @param hardwareDestroys      0 or more
     * @param createFailures        0 or more
     * @param destroyFailures       0 or more
     * @param totalCreateNanos      ns, 0 or more
     * @param maxCreateNanos        ns, 0 or more
     * @param leaksReported         0 or more
     * @param retained              0 or more
     * @param revived               0 or more
     * @param invalidated           0 or more
     * @param destroysByCause       copied; not null
     * @param createFailuresByErrno copied; not null
     * @param networkInvalidated    0 or more
     */
    public CacheStats {
        destroysByCause = Map.copyOf(destroysByCause);
        createFailuresByErrno = Map.copyOf(createFailuresByErrno);
    }

    /**
     * A snapshot with no network invalidation counted ({@code networkInvalidated} 0).
     *
     * @param hits                  0 or more
     * @param misses                0 or more
     * @param hardwareCreates       0 or more
     * @param hardwareDestroys      0 or more
     * @param createFailures        0 or more
     * @param destroyFailures       0 or more
     * @param totalCreateNanos      ns, 0 or more
     * @param maxCreateNanos        ns, 0 or more
     * @param leaksReported         0 or more
     * @param retained              0 or more
     * @param revived               0 or more
     * @param invalidated           0 or more
     * @param destroysByCause       copied; not null
     * @param createFailuresByErrno copied; not null
     */
    public CacheStats(long hits, long misses, long hardwareCreates, long hardwareDestroys, long createFailures,
                      long destroyFailures, long totalCreateNanos, long maxCreateNanos, long leaksReported,
                      long retained, long revived, long invalidated, Map<RemovalCause, Long> destroysByCause,
                      Map<Errno, Long> createFailuresByErrno) {
        this(hits, misses, hardwareCreates, hardwareDestroys, createFailures, destroyFailures, totalCreateNanos,
                maxCreateNanos, leaksReported, retained, revived, invalidated, destroysByCause, createFailuresByErrno, 0);
    }

    /**
     * Acquires in all, successful or not, that got as far as a hit or a miss.
     *
     * @return {@code hits + misses}
     */
    public long requests() {
        return hits + misses;
    }

    /**
     * The share of acquires served without a provider create.
     *
     * @return {@code hits / requests}, 0.0..1.0; 1.0 before any request
     */
    public double hitRatio() {
        long r = requests();
        return r == 0 ? 1.0 : (double) hits / r;
    }

    /**
     * Mean time of a successful provider create ({@code ibv_create_ah(3)} through the provider).
     *
     * @return {@code totalCreateNanos / hardwareCreates}, ns; 0 before any create
     */
    public double averageCreateNanos() {
        return hardwareCreates == 0 ? 0 : (double) totalCreateNanos / hardwareCreates;
    }

    /**
     * Hardware AHs destroyed for one cause.
     *
     * @param cause the removal cause, not null
     * @return AHs destroyed through the provider for {@code cause}; 0 when none
     */
    public long destroysBy(RemovalCause cause) {
        return destroysByCause.getOrDefault(cause, 0L);
    }

    /**
     * Hardware AHs the cache chose to destroy to save resources.
     *
     * @return the sum of {@link #destroysBy(RemovalCause)} over the causes for which
     *         {@link RemovalCause#wasEvicted()} (idle, beyond the bound, for an ENOMEM)
     */
    public long evictions() {
        long n = 0;
        for (Map.Entry<RemovalCause, Long> e : destroysByCause.entrySet()) {
            if (e.getKey().wasEvicted()) {
                n += e.getValue();
            }
        }
        return n;
    }

    /**
     * Provider creates that failed with one errno.
     *
     * @param errno the errno; {@link Errno#UNKNOWN} counts failures that carried none
     * @return the failed creates with {@code errno}; 0 when none
     */
    public long createFailures(Errno errno) {
        return createFailuresByErrno.getOrDefault(errno, 0L);
    }

    /**
     * What happened between {@code earlier} and this snapshot: every counter's difference
     * (never below zero); {@code maxCreateNanos} is this snapshot's.
     *
     * @param earlier a snapshot of the same cache taken before this one, not null
     * @return the counts of the interval between the two snapshots
     */
    public CacheStats minus(CacheStats earlier) {
        return new CacheStats(d(hits, earlier.hits), d(misses, earlier.misses),
                d(hardwareCreates, earlier.hardwareCreates), d(hardwareDestroys, earlier.hardwareDestroys),
                d(createFailures, earlier.createFailures), d(destroyFailures, earlier.destroyFailures),
                d(totalCreateNanos, earlier.totalCreateNanos), maxCreateNanos,
                d(leaksReported, earlier.leaksReported), d(retained, earlier.retained), d(revived, earlier.revived),
                d(invalidated, earlier.invalidated), minus(destroysByCause, earlier.destroysByCause, RemovalCause.class),
                minus(createFailuresByErrno, earlier.createFailuresByErrno, Errno.class),
                d(networkInvalidated, earlier.networkInvalidated));
    }

    private static long d(long a, long b) {
        return Math.max(0, a - b);
    }

    private static <K extends Enum<K>> Map<K, Long> minus(Map<K, Long> a, Map<K, Long> b, Class<K> type) {
        Map<K, Long> out = new EnumMap<>(type);
        a.forEach((k, v) -> {
            long n = d(v, b.getOrDefault(k, 0L));
            if (n != 0) {
                out.put(k, n);
            }
        });
        return out;
    }

    /*
     * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
     * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
     * NoObjectMethodsTest). Same meaning and format as the generated ones.
     */
    @Override
    public boolean equals(Object o) {
        return o == this || o instanceof CacheStats that && that.hits == hits && that.misses == misses
                && that.hardwareCreates == hardwareCreates && that.hardwareDestroys == hardwareDestroys
                && that.createFailures == createFailures && that.destroyFailures == destroyFailures
                && that.totalCreateNanos == totalCreateNanos && that.maxCreateNanos == maxCreateNanos
                && that.leaksReported == leaksReported && that.retained == retained && that.revived == revived
                && that.invalidated == invalidated && Objects.equals(that.destroysByCause, destroysByCause)
                && Objects.equals(that.createFailuresByErrno, createFailuresByErrno)
                && that.networkInvalidated == networkInvalidated;
    }

    @Override
    public int hashCode() {
        int h = Long.hashCode(hits);
        h = 31 * h + Long.hashCode(misses);
        h = 31 * h + Long.hashCode(hardwareCreates);
        h = 31 * h + Long.hashCode(hardwareDestroys);
        h = 31 * h + Long.hashCode(createFailures);
        h = 31 * h + Long.hashCode(destroyFailures);
        h = 31 * h + Long.hashCode(totalCreateNanos);
        h = 31 * h + Long.hashCode(maxCreateNanos);
        h = 31 * h + Long.hashCode(leaksReported);
        h = 31 * h + Long.hashCode(retained);
        h = 31 * h + Long.hashCode(revived);
        h = 31 * h + Long.hashCode(invalidated);
        h = 31 * h + Objects.hashCode(destroysByCause);
        h = 31 * h + Objects.hashCode(createFailuresByErrno);
        h = 31 * h + Long.hashCode(networkInvalidated);
        return h;
    }

    @Override
    public String toString() {
        return new StringBuilder("CacheStats[hits=").append(hits).append(", misses=").append(misses)
                .append(", hardwareCreates=").append(hardwareCreates)
                .append(", hardwareDestroys=").append(hardwareDestroys)
                .append(", createFailures=").append(createFailures)
                .append(", destroyFailures=").append(destroyFailures)
                .append(", totalCreateNanos=").append(totalCreateNanos)
                .append(", maxCreateNanos=").append(maxCreateNanos).append(", leaksReported=").append(leaksReported)
                .append(", retained=").append(retained).append(", revived=").append(revived)
                .append(", invalidated=").append(invalidated).append(", destroysByCause=").append(destroysByCause)
                .append(", createFailuresByErrno=").append(createFailuresByErrno)
                .append(", networkInvalidated=").append(networkInvalidated).append(']').toString();
    }
}
