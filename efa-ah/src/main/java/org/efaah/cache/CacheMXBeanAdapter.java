package org.efaah.cache;

import java.util.Map;
import java.util.TreeMap;

/** {@link AddressHandleCacheMXBean} over a cache's snapshot; holds the cache strongly while registered. */
final class CacheMXBeanAdapter implements AddressHandleCacheMXBean {
    private final AddressHandleCache cache;

    CacheMXBeanAdapter(AddressHandleCache cache) {
        this.cache = cache;
    }

    @Override
    public long getHits() {
        return cache.stats().hits();
    }

    @Override
    public long getMisses() {
        return cache.stats().misses();
    }

    @Override
    public double getHitRatio() {
        return cache.stats().hitRatio();
    }

    @Override
    public long getHardwareCreates() {
        return cache.stats().hardwareCreates();
    }

    @Override
    public long getHardwareDestroys() {
        return cache.stats().hardwareDestroys();
    }

    @Override
    public long getCreateFailures() {
        return cache.stats().createFailures();
    }

    @Override
    public long getDestroyFailures() {
        return cache.stats().destroyFailures();
    }

    @Override
    public Map<String, Long> getCreateFailuresByErrno() {
        Map<String, Long> out = new TreeMap<>();
        cache.stats().createFailuresByErrno().forEach((k, v) -> out.put(k.name(), v));
        return out;
    }

    @Override
    public double getAverageCreateNanos() {
        return cache.stats().averageCreateNanos();
    }

    @Override
    public long getMaxCreateNanos() {
        return cache.stats().maxCreateNanos();
    }

    @Override
    public long getLeaksReported() {
        return cache.stats().leaksReported();
    }

    @Override
    public long getRetained() {
        return cache.stats().retained();
    }

    @Override
    public long getRevived() {
        return cache.stats().revived();
    }

    @Override
    public long getInvalidated() {
        return cache.stats().invalidated();
    }

    @Override
    public long getEvictions() {
        return cache.stats().evictions();
    }

    @Override
    public Map<String, Long> getDestroysByCause() {
        Map<String, Long> out = new TreeMap<>();
        cache.stats().destroysByCause().forEach((k, v) -> out.put(k.name(), v));
        return out;
    }

    @Override
    public long getLiveEntries() {
        return cache.liveEntries();
    }

    @Override
    public long getLiveHandles() {
        return cache.liveHandles();
    }

    @Override
    public long getPeakEntries() {
        return cache.peakEntries();
    }

    @Override
    public long getRetainedEntries() {
        return cache.retainedEntries();
    }
}
