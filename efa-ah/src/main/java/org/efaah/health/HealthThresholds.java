package org.efaah.health;

import java.time.Duration;
import java.util.Objects;

/**
 * Where a health report turns DEGRADED: live AHs at or above {@code ahUsage} of the device's
 * {@code max_ah}, allocated PDs at or above {@code pdUsage} of {@code max_pd} (at the maximum
 * itself DOWN: no AH or PD can be made), any provider create failure within
 * {@code failureWindow}, and any handle found leaked within {@code leakWindow}. Immutable.
 *
 * <p>Leaks have a window of their own, as create failures do: a handle dropped without
 * {@code close()} is a bug to fix, not an outage, and a probe that fails on DEGRADED must not
 * fail for the rest of the process's life after one (the total stays in the check's message and
 * in {@code leaksReported}).
 *
 * @param ahUsage       share of {@code max_ah}, 0 (exclusive)..1 (inclusive); default 0.9
 * @param pdUsage       share of {@code max_pd}, 0 (exclusive)..1 (inclusive); default 0.9
 * @param failureWindow how far back create failures count, 1 s..1 h; default 1 minute
 * @param leakWindow    how far back leaked handles count, 1 s..1 h; default 1 minute
 */
public record HealthThresholds(double ahUsage, double pdUsage, Duration failureWindow, Duration leakWindow) {
    /** The defaults: 90 % of max_ah, 90 % of max_pd, failures and leaks of the last minute. */
    public static final HealthThresholds DEFAULTS = new HealthThresholds(0.9, 0.9, Duration.ofMinutes(1),
            Duration.ofMinutes(1));

    /**
     * Checks the fields.
     *
     * @param ahUsage       share of max_ah, (0, 1]
     * @param pdUsage       share of max_pd, (0, 1]
     * @param failureWindow 1 s..1 h
     * @param leakWindow    1 s..1 h
     * @throws IllegalArgumentException if a share is outside (0, 1] or a window outside 1 s..1 h
     * @throws NullPointerException     if a window is null
     */
    public HealthThresholds {
        Objects.requireNonNull(failureWindow, "failureWindow");
        Objects.requireNonNull(leakWindow, "leakWindow");
        if (!(ahUsage > 0 && ahUsage <= 1)) {
            throw new IllegalArgumentException("ahUsage: " + ahUsage + " is out of range; valid (0, 1]");
        }
        if (!(pdUsage > 0 && pdUsage <= 1)) {
            throw new IllegalArgumentException("pdUsage: " + pdUsage + " is out of range; valid (0, 1]");
        }
        if (failureWindow.compareTo(Duration.ofSeconds(1)) < 0 || failureWindow.compareTo(Duration.ofHours(1)) > 0) {
            throw new IllegalArgumentException("failureWindow: " + failureWindow + " is out of range; valid PT1S..PT1H");
        }
        if (leakWindow.compareTo(Duration.ofSeconds(1)) < 0 || leakWindow.compareTo(Duration.ofHours(1)) > 0) {
            throw new IllegalArgumentException("leakWindow: " + leakWindow + " is out of range; valid PT1S..PT1H");
        }
    }

    /**
     * Thresholds with the default leak window (1 minute): the constructor before
     * {@code leakWindow} was added.
     *
     * @param ahUsage       share of max_ah, (0, 1]
     * @param pdUsage       share of max_pd, (0, 1]
     * @param failureWindow 1 s..1 h
     * @throws IllegalArgumentException if a share is outside (0, 1] or the window outside 1 s..1 h
     * @throws NullPointerException     if {@code failureWindow} is null
     */
    public HealthThresholds(double ahUsage, double pdUsage, Duration failureWindow) {
        this(ahUsage, pdUsage, failureWindow, Duration.ofMinutes(1));
    }

    /**
     * The check of a usage figure against its maximum: DOWN at the maximum, DEGRADED from
     * {@code share} of it, else UP.
     *
     * @param name    the check's name ({@code ah_usage}, {@code pd_usage})
     * @param subject what was checked
     * @param what    the figure's name for the message ({@code live AHs})
     * @param used    the figure
     * @param max     the maximum ({@code max_ah}, {@code max_pd}); no check (UP) when not positive
     * @param maxName the maximum's name for the message
     * @param share   the share from which it is DEGRADED
     * @return the check
     */
    public static HealthCheck usage(String name, String subject, String what, long used, long max, String maxName,
                                    double share) {
        if (max <= 0) {
            return new HealthCheck(name, subject, HealthStatus.UP, used, max, used + " " + what + "; " + maxName
                    + " not reported");
        }
        long degradedFrom = (long) Math.ceil(share * max);
        HealthStatus status = used >= max ? HealthStatus.DOWN
                : used >= degradedFrom ? HealthStatus.DEGRADED : HealthStatus.UP;
        return new HealthCheck(name, subject, status, used, max, String.format(java.util.Locale.ROOT,
                "%d %s of %s %d (%.0f%%); DEGRADED from %d (%.0f%%), DOWN at %d", used, what, maxName, max,
                100.0 * used / max, degradedFrom, share * 100, max));
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
        return o instanceof HealthThresholds t && Double.compare(t.ahUsage, ahUsage) == 0
                && Double.compare(t.pdUsage, pdUsage) == 0 && t.failureWindow.equals(failureWindow)
                && t.leakWindow.equals(leakWindow);
    }

    @Override
    public int hashCode() {
        return ((Double.hashCode(ahUsage) * 31 + Double.hashCode(pdUsage)) * 31 + failureWindow.hashCode()) * 31
                + leakWindow.hashCode();
    }

    @Override
    public String toString() {
        return new StringBuilder("HealthThresholds[ahUsage=").append(ahUsage).append(", pdUsage=").append(pdUsage)
                .append(", failureWindow=").append(failureWindow).append(", leakWindow=").append(leakWindow)
                .append(']').toString();
    }
}
