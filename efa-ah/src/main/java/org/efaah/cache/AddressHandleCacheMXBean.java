package org.efaah.cache;

import java.util.Map;
import javax.management.openmbean.CompositeData;

/**
 * The JMX view of one {@link AddressHandleCache}, registered on request with
 * {@link CacheInspection#registerMXBean(String)}. Every attribute is read from a fresh
 * {@link CacheStats} snapshot or a cache query, as {@link AddressHandleCache#stats()} documents
 * (times in ns); the MBean info describes each attribute and operation. Thread-safe.
 *
 * <p>Besides the members below, the registered MBean has two whose open types are their own, read
 * with {@code MBeanServerConnection.getAttribute} and {@code invoke} (a proxy of this interface
 * does not reach them):
 * <ul>
 * <li>attribute {@code Health}: the {@link org.efaah.health.HealthReport} as
 *     {@link org.efaah.health.HealthReport#toCompositeData() open data}, which
 *     {@link org.efaah.health.HealthReport#from} turns back into a report;</li>
 * <li>operation {@code entries(int limit, String device, String pd, String dgid)}: the
 *     {@link CacheInspection#entries} listing, one composite per {@link AddressHandleEntry}
 *     with its component names as items (the GID as text, empty strings matching any).</li>
 * </ul>
 */
public interface AddressHandleCacheMXBean {
    /**
     * Acquires served by an AH that already existed: no provider call. Grows only.
     *
     * @return {@link CacheStats#hits()}
     */
    long getHits();

    /**
     * Acquires that asked the provider for a new AH, successful or not. Grows only.
     *
     * @return {@link CacheStats#misses()}
     */
    long getMisses();

    /**
     * The share of acquires served without a provider create.
     *
     * @return {@link CacheStats#hitRatio()}, 0.0..1.0; 1.0 before any acquire
     */
    double getHitRatio();

    /**
     * AHs created through the provider ({@code ibv_create_ah(3)}). Grows only.
     *
     * @return {@link CacheStats#hardwareCreates()}
     */
    long getHardwareCreates();

    /**
     * AHs destroyed through the provider ({@code ibv_destroy_ah(3)}), all causes. Grows only.
     *
     * @return {@link CacheStats#hardwareDestroys()}
     */
    long getHardwareDestroys();

    /**
     * Provider creates that failed (any throwable). Grows only.
     *
     * @return {@link CacheStats#createFailures()}
     */
    long getCreateFailures();

    /**
     * Provider destroys that failed; each failed attempt counts, the AH is kept and retried.
     *
     * @return {@link CacheStats#destroyFailures()}
     */
    long getDestroyFailures();

    /**
     * Provider creates that failed, by errno.
     *
     * @return errno name (such as {@code ENOMEM}; {@code UNKNOWN}: without an errno) to count;
     *         errnos with none are absent
     */
    Map<String, Long> getCreateFailuresByErrno();

    /**
     * Mean time of a successful provider create.
     *
     * @return {@link CacheStats#averageCreateNanos()}, ns; 0 before any create
     */
    double getAverageCreateNanos();

    /**
     * The longest successful provider create since the cache was built.
     *
     * @return {@link CacheStats#maxCreateNanos()}, ns
     */
    long getMaxCreateNanos();

    /**
     * Handles garbage-collected without {@code close()}, plus handles still open when the cache
     * closed: each once.
     *
     * @return {@link CacheStats#leaksReported()}
     */
    long getLeaksReported();

    /**
     * Last closes that kept their AH (a {@link RetentionPolicy}).
     *
     * @return {@link CacheStats#retained()}
     */
    long getRetained();

    /**
     * Acquires that took back a kept AH: creates saved.
     *
     * @return {@link CacheStats#revived()}
     */
    long getRevived();

    /**
     * Live entries invalidated, explicitly or by a device event.
     *
     * @return {@link CacheStats#invalidated()}
     */
    long getInvalidated();

    /**
     * AHs destroyed to save resources: idle, beyond the bound, for an ENOMEM.
     *
     * @return {@link CacheStats#evictions()}
     */
    long getEvictions();

    /**
     * AHs destroyed, by cause.
     *
     * @return {@link RemovalCause} name to count; causes with none are absent
     */
    Map<String, Long> getDestroysByCause();

    /**
     * Hardware AHs the cache holds now, referenced or not.
     *
     * @return {@link CacheInspection#liveEntries()}
     */
    long getLiveEntries();

    /**
     * Handles acquired or duplicated and not yet closed, now.
     *
     * @return {@link CacheInspection#liveHandles()}
     */
    long getLiveHandles();

    /**
     * The most hardware AHs the cache held at once.
     *
     * @return {@link CacheInspection#peakEntries()}
     */
    long getPeakEntries();

    /**
     * Unreferenced AHs kept now.
     *
     * @return {@link CacheInspection#retainedEntries()}
     */
    long getRetainedEntries();

    /**
     * The status of the cache's health report ({@link CacheInspection#health()}); the whole
     * report is the MBean's {@code Health} attribute.
     *
     * @return {@code UP}, {@code DEGRADED} or {@code DOWN}
     */
    String getHealthStatus();

    /**
     * Invalidates every AH of the cache ({@link AddressHandleCache#invalidateAll()}): the next
     * acquires create fresh AHs, handles already out keep theirs until they close.
     *
     * @return how many entries were invalidated
     */
    int invalidateAll();
}
