package org.efaah.cache;

import java.time.Duration;
import java.util.Objects;

/**
 * How long an {@link AddressHandleCache} keeps an AH after its last handle closes, so that a peer
 * that comes back soon costs no {@code ibv_create_ah}.
 *
 * <p>An unreferenced AH is kept for {@code idleTime}; beyond {@code maxUnreferenced} unreferenced
 * AHs, the least recently used is destroyed at once. Independently of both, when a device
 * answers a create with ENOMEM (max_ah reached) the cache destroys unreferenced AHs of that
 * device, least recently used first, and retries the create: retained AHs never cost a caller an
 * ENOMEM.
 *
 * <p><b>Default: {@link #none()}</b>, the last close destroys the AH (idle time 0). Retention is
 * opt-in because a retained AH keeps its PD busy: {@code ibv_dealloc_pd} answers EBUSY until the
 * cache is closed or the AH invalidated. libfabric's EFA provider has no idle timer either: it
 * keeps AHs of peers in its address vector and evicts the least recently used only under
 * pressure (ENOMEM); {@code idle(Duration.ofSeconds(30), 1024)} is a reasonable setting for
 * programs whose peers come and go, bounded in time and in count.
 *
 * @param idleTime        how long an unreferenced AH is kept, 0 to {@link #MAX_IDLE_TIME} (what a
 *                        {@code long} of nanoseconds holds, about 292 years); zero keeps none
 * @param maxUnreferenced most unreferenced AHs kept at once, 0..65536 (AHNs are 16-bit); zero
 *                        keeps none
 */
public record RetentionPolicy(Duration idleTime, int maxUnreferenced) {
    /** The longest idle time: {@link Long#MAX_VALUE} nanoseconds, as the reaper counts time. */
    public static final Duration MAX_IDLE_TIME = Duration.ofNanos(Long.MAX_VALUE);

    /**
     * Checks the policy.
     *
     * @param idleTime        not null, 0 to {@link #MAX_IDLE_TIME}
     * @param maxUnreferenced 0..65536
     * @throws NullPointerException     if {@code idleTime} is null
     * @throws IllegalArgumentException if {@code idleTime} is negative or longer than
     *                                  {@link #MAX_IDLE_TIME}, or {@code maxUnreferenced} is outside 0..65536
     */
    public RetentionPolicy {
        Objects.requireNonNull(idleTime, "idleTime");
        if (idleTime.isNegative()) {
            throw new IllegalArgumentException("idleTime: " + idleTime + " is negative; valid 0 or more");
        }
        if (idleTime.compareTo(MAX_IDLE_TIME) > 0) {
            throw new IllegalArgumentException("idleTime: " + idleTime + " is out of range; valid 0.." + MAX_IDLE_TIME
                    + " (a long of nanoseconds)");
        }
        if (maxUnreferenced < 0 || maxUnreferenced > 65536) {
            throw new IllegalArgumentException("maxUnreferenced: " + maxUnreferenced + " is out of range; valid 0..65536");
        }
    }

    /**
     * Keeps nothing: the last close of an AH's handles destroys it. The default.
     *
     * @return the policy with idle time 0 and no unreferenced AH kept
     */
    public static RetentionPolicy none() {
        return new RetentionPolicy(Duration.ZERO, 0);
    }

    /**
     * Keeps unreferenced AHs for {@code idleTime}, at most {@code maxUnreferenced} of them.
     *
     * @param idleTime        how long an unreferenced AH is kept, 0 to {@link #MAX_IDLE_TIME}; zero keeps none
     * @param maxUnreferenced most unreferenced AHs kept at once, 0..65536
     * @return the policy
     * @throws IllegalArgumentException if a value is out of range (see the record's constructor)
     */
    public static RetentionPolicy idle(Duration idleTime, int maxUnreferenced) {
        return new RetentionPolicy(idleTime, maxUnreferenced);
    }

    /**
     * Whether any unreferenced AH is kept.
     *
     * @return true if both the idle time and {@code maxUnreferenced} are above zero
     */
    public boolean retains() {
        return !idleTime.isZero() && maxUnreferenced > 0;
    }

    /*
     * Written out, not the record's generated ones: those link through java.lang.runtime.ObjectMethods,
     * whose static method handles cache their last asType, for equals to this record's type: a
     * java.base static then keeps the library's class loader (strongly on JDK 17, softly on 25;
     * RecordLoaderTest). toString too, though of JDK types only, so that no class of the library
     * links through ObjectMethods (NoObjectMethodsTest).
     */
    @Override
    public boolean equals(Object o) {
        return o instanceof RetentionPolicy p && p.maxUnreferenced == maxUnreferenced && p.idleTime.equals(idleTime);
    }

    @Override
    public int hashCode() {
        return 31 * idleTime.hashCode() + maxUnreferenced;
    }

    @Override
    public String toString() {
        return new StringBuilder("RetentionPolicy[idleTime=").append(idleTime)
                .append(", maxUnreferenced=").append(maxUnreferenced).append(']').toString();
    }
}
