package org.efaah.cache;

/**
 * A snapshot of an {@link AddressHandleCache}'s counters, in the manner of Caffeine's
 * {@code CacheStats}. Counters are read one by one without a global lock, so a snapshot taken
 * while other threads work is consistent per counter, not across counters.
 *
 * @param hits             acquires served by an AH that already existed (no provider call)
 * @param misses           acquires that asked the provider for a new AH (successful or not)
 * @param hardwareCreates  AHs created through the provider
 * @param hardwareDestroys AHs destroyed through the provider
 * @param createFailures   provider creates that failed
 * @param destroyFailures  provider destroys that failed (the AH is kept and retried)
 * @param liveEntries      distinct keys with a hardware AH now
 * @param liveHandles      {@link AddressHandle}s acquired and not yet closed
 * @param peakEntries      the most live entries at once
 * @param totalCreateNanos time spent in successful provider creates, ns
 * @param maxCreateNanos   the longest successful provider create, ns
 * @param leaksReported    handles found garbage-collected without {@code close()}, plus the other
 *                         handles still open when the cache was closed: each leaked handle once
 */
public record CacheStats(long hits, long misses, long hardwareCreates, long hardwareDestroys, long createFailures,
                         long destroyFailures, long liveEntries, long liveHandles, long peakEntries,
                         long totalCreateNanos, long maxCreateNanos, long leaksReported) {

    /** Acquires in all. */
    public long requests() {
        return hits + misses;
    }

    /** hits / requests, or 1.0 before any request. */
    public double hitRatio() {
        long r = requests();
        return r == 0 ? 1.0 : (double) hits / r;
    }

    /** Mean time of a successful provider create, ns; 0 before any. */
    public double averageCreateNanos() {
        return hardwareCreates == 0 ? 0 : (double) totalCreateNanos / hardwareCreates;
    }
}
