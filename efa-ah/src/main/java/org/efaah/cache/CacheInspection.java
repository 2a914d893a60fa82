package org.efaah.cache;

import java.util.List;
import java.util.Objects;
import java.util.function.Predicate;
import javax.management.ObjectName;
import org.efaah.health.HealthReport;
import org.efaah.health.HealthThresholds;

/**
 * What an {@link AddressHandleCache} holds and how it is doing, apart from the calls a datapath
 * makes ({@link AddressHandleCache#inspection()}): counts, the entries, health, an MXBean and
 * listeners. Every method is thread-safe, takes no lock an acquire needs, and answers also
 * after the cache's close.
 *
 * <pre>{@code
 * CacheInspection inspection = cache.inspection();
 * System.out.println(inspection.liveEntries() + " AHs, " + inspection.health().status());
 * }</pre>
 */
public final class CacheInspection {
    private final AddressHandleCache cache;

    CacheInspection(AddressHandleCache cache) {
        this.cache = cache;
    }

    /**
     * The retention policy the cache was built with.
     *
     * @return the policy, not null
     */
    public RetentionPolicy retention() {
        return cache.retention;
    }

    /**
     * Hardware AHs the cache holds now, referenced or not (invalidated ones still referenced
     * included). Thread-safe.
     *
     * @return the count now
     */
    public long liveEntries() {
        return cache.tables.live();
    }

    /**
     * {@link AddressHandle}s acquired (or duplicated) and not yet closed, garbage-collected ones
     * that were never closed included: the references the cache's AHs hold. Counted from the
     * entries when asked (O(entries)), so that a hit pays for no counter of its own; a snapshot
     * that races acquires and closes is approximate. Handles whose AH their device's close freed
     * are not counted.
     *
     * @return the open handles now
     */
    public long liveHandles() {
        long n = 0;
        for (EntryTables.PdTable t : cache.tables.tables()) {
            for (Entry e : t.table().values()) {
                if (!e.isStale()) { // an invalidated entry is counted once, below
                    n += e.references();
                }
            }
        }
        for (Entry e : cache.detached) {
            if (e.isStale()) {
                n += e.references();
            }
        }
        return n;
    }

    /**
     * The most hardware AHs the cache held at once since it was built.
     *
     * @return the peak of {@link #liveEntries()}
     */
    public long peakEntries() {
        return cache.tables.peak();
    }

    /**
     * Unreferenced AHs the cache keeps now, in its idle list: retained by the policy, or kept
     * after a failed destroy for a retry ({@link AddressHandleCache#cleanUp()}, an ENOMEM eviction, a later revival
     * and last close, or {@link AddressHandleCache#close()}); invalidated ones whose destroy failed are not counted.
     *
     * @return the count now; without retention only AHs whose destroy failed
     */
    public int retainedEntries() {
        return cache.idle.size();
    }

    /**
     * Registers an {@link AddressHandleCacheMXBean} for this cache with the platform MBean server
     * under {@code objectName} (for example {@code org.efaah:type=AddressHandleCache,name=main});
     * {@link AddressHandleCache#close()} unregisters it, unless someone else unregistered it before (then the name
     * may name another cache's bean, which it leaves alone). A registration racing the cache's
     * close is either undone by that close or refused.
     *
     * @param objectName the JMX object name, in {@code ObjectName} syntax
     * @return the registered name
     *
     * @throws IllegalArgumentException if {@code objectName} is malformed or already registered
     * @throws IllegalStateException    if the cache is closed
     */
    public ObjectName registerMXBean(String objectName) {
        Objects.requireNonNull(objectName, "objectName");
        cache.checkOpen();
        return cache.mxBeans.register(cache, objectName);
    }

    /**
     * The cache's health with {@link HealthThresholds#DEFAULTS}; see {@link #health(HealthThresholds)}.
     *
     * @return the report now
     */
    public HealthReport health() {
        return health(HealthThresholds.DEFAULTS);
    }

    /**
     * The cache's health: DOWN once closed; for each device it holds AHs on, DOWN when the device
     * is closed or fatal, a port is not active (asked of the device now) or {@code max_ah} or
     * {@code max_pd} is reached, DEGRADED from the thresholds' share of them; DEGRADED on any
     * provider create failure within the thresholds' window (by errno), any AH whose destroy failed
     * and that still exists, any handle found leaked within the thresholds' leak window; on RoCE, DEGRADED while the network reader its AHs
     * follow fails its reads ({@code network_reader}). Asks each device's ports
     * ({@code ibv_query_port(3)}); takes no lock an acquire needs. Thread-safe.
     *
     * @param thresholds where figures turn DEGRADED, not null
     * @return the report now, every check with its figure
     */
    public HealthReport health(HealthThresholds thresholds) {
        return CacheHealth.check(cache, Objects.requireNonNull(thresholds, "thresholds"));
    }

    /**
     * Lists up to {@code limit} entries that {@code filter} accepts: each AH the cache holds (and
     * each create in progress) with its key, AHN, references, age and idle time. Never waits for
     * a lock and takes none a hit or a create needs; each row is consistent in itself (see
     * {@link AddressHandleEntry}), rows are in no particular order, invalidated AHs still
     * referenced come last. The filter is called on the calling thread with each row, until
     * {@code limit} are accepted; what it throws, this throws. O(entries looked at); a million
     * entries take a fraction of a second (see the benchmark {@code SnapshotBench}). Thread-safe.
     *
     * @param filter which rows, not null ({@code e -> true} for every one; e.g.
     *               {@code e -> gid.equals(e.dgid())} for those to one destination GID)
     * @param limit  the most rows returned, 1..1,000,000
     * @return the rows, at most {@code limit}
     * @throws NullPointerException     if {@code filter} is null
     * @throws IllegalArgumentException if {@code limit} is out of range
     */
    public List<AddressHandleEntry> entries(Predicate<? super AddressHandleEntry> filter, int limit) {
        Objects.requireNonNull(filter, "filter");
        if (limit < 1 || limit > EntryListing.MAX_LIMIT) {
            throw new IllegalArgumentException("limit: " + limit + " is out of range; valid 1.." + EntryListing.MAX_LIMIT);
        }
        cache.reportLeaks(); // handles the collector found since the last look show in their rows
        return EntryListing.list(cache, filter, limit);
    }

    /**
     * Adds a listener told of every provider create (not of hits) and of the cache's close; see
     * {@link AddressHandleCacheListener}. Thread-safe; a listener added once the cache is closed
     * ({@link AddressHandleCache#isClosed()}, true from the start of its close) is never called,
     * also while that close is still running; one added before is told of the close.
     *
     * @param listener the listener, not null
     */
    public void addListener(AddressHandleCacheListener listener) {
        Objects.requireNonNull(listener, "listener");
        // Decided under the monitor the close sets its flag under: added before the close began
        // (and told of it by closed()), or not added at all. Adding first and then looking at the
        // flag let a close already running call the listener it then took back (issue 33, 5.4).
        synchronized (cache) {
            if (!cache.closed) {
                cache.events.add(listener);
            }
        }
    }

    /**
     * Removes a listener added with {@link #addListener}; harmless if it is not there.
     *
     * @param listener the listener
     */
    public void removeListener(AddressHandleCacheListener listener) {
        cache.events.remove(listener);
    }
}
