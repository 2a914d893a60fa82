package org.efaah.cache;

/**
 * Why an {@link AddressHandleCache} destroyed a hardware AH ({@code ibv_destroy_ah(3)}), as
 * counted in {@link CacheStats#destroysBy(RemovalCause)}.
 */
public enum RemovalCause {
    /** Its last handle closed and the retention policy keeps nothing: today's default. */
    CLOSED,
    /** Unreferenced for longer than the retention policy's idle time (the reaper destroyed it). */
    IDLE,
    /** Unreferenced and least recently used beyond the policy's bound on unreferenced AHs. */
    SIZE,
    /** Unreferenced and least recently used when the device answered a create with ENOMEM. */
    EVICTED_ENOMEM,
    /**
     * Invalidated ({@code invalidate*} or a device event: GID change, port error or active,
     * device fatal) and no longer referenced; or its device being closed.
     */
    INVALIDATED,
    /** The cache was closed. */
    CACHE_CLOSED;

    /**
     * Whether the cache chose to destroy the AH to save resources, as counted by
     * {@link CacheStats#evictions()}.
     *
     * @return true for {@link #IDLE}, {@link #SIZE} and {@link #EVICTED_ENOMEM}
     */
    public boolean wasEvicted() {
        return this == IDLE || this == SIZE || this == EVICTED_ENOMEM;
    }
}
