package org.efaah.cache;

import java.util.Locale;

/**
 * How an {@link AddressHandleCache} watches for {@link AddressHandle}s that are garbage-collected
 * without {@code close()}, after Netty's {@code ResourceLeakDetector} levels. A reported leak
 * names the site that acquired the handle; the hardware AH is not freed by the collector (the
 * reference stays counted until the cache is closed), since AH lifetime is always explicit.
 */
public enum LeakDetection {
    /** No tracking; a leaked handle keeps its AH until the cache is closed. */
    DISABLED,
    /** One handle in {@value #SAMPLING_INTERVAL} is tracked, with its acquire site: cheap enough for production. */
    SAMPLED,
    /** Every handle is tracked: for tests and debugging (costs a stack trace per acquire). */
    PARANOID;

    /** One handle in this many is tracked at {@link #SAMPLED}. */
    // Each tracked handle costs a stack capture and a reference-queue registration (microseconds); one in
    // 1024 keeps that under a few ns per acquire on the hit path, yet a steady leak is still
    // reported within a thousand handles.
    public static final int SAMPLING_INTERVAL = 1024;
    /** System property giving the default level: {@code disabled}, {@code sampled}, {@code paranoid}. */
    public static final String PROPERTY = "efaah.leakDetection";

    /**
     * The level named by the system property {@value #PROPERTY}, case-insensitive.
     *
     * @return that level; {@link #SAMPLED} when the property is unset or blank
     * @throws IllegalArgumentException if the property names no level
     */
    public static LeakDetection fromSystemProperty() {
        String v = System.getProperty(PROPERTY);
        if (v == null || v.isBlank()) {
            return SAMPLED;
        }
        try {
            return valueOf(v.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(PROPERTY + ": '" + v + "' is unknown; valid: disabled, sampled, paranoid", e);
        }
    }
}
