package org.efaah.cache;

import java.util.Map;

/**
 * The JMX view of one {@link AddressHandleCache}, registered on request with
 * {@link AddressHandleCache#registerMXBean(String)}. Every attribute is read from a fresh
 * {@link CacheStats} snapshot or a cache query, as {@link AddressHandleCache#stats()} documents
 * (times in ns). Thread-safe.
 */
public interface AddressHandleCacheMXBean {
    long getHits();

    long getMisses();

    double getHitRatio();

    long getHardwareCreates();

    long getHardwareDestroys();

    long getCreateFailures();

    long getDestroyFailures();

    /** Provider creates that failed, by errno name ({@code UNKNOWN}: without an errno). */
    Map<String, Long> getCreateFailuresByErrno();

    double getAverageCreateNanos();

    long getMaxCreateNanos();

    long getLeaksReported();

    /** Last closes that kept their AH. */
    long getRetained();

    /** Acquires that took back a kept AH: creates saved. */
    long getRevived();

    /** Entries invalidated. */
    long getInvalidated();

    /** AHs destroyed to save resources: idle, beyond the bound, for an ENOMEM. */
    long getEvictions();

    /** AHs destroyed, by {@link RemovalCause} name. */
    Map<String, Long> getDestroysByCause();

    long getLiveEntries();

    long getLiveHandles();

    long getPeakEntries();

    /** Unreferenced AHs kept now. */
    long getRetainedEntries();
}
