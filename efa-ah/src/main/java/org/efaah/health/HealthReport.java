package org.efaah.health;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import javax.management.openmbean.ArrayType;
import javax.management.openmbean.CompositeData;
import javax.management.openmbean.CompositeDataSupport;
import javax.management.openmbean.CompositeType;
import javax.management.openmbean.OpenDataException;
import javax.management.openmbean.OpenType;
import javax.management.openmbean.SimpleType;

/**
 * A health report: the worst status of its checks, and every check with its figure (those that
 * passed included, so that a reader sees the figures that were fine). Immutable; what the API,
 * the MXBean ({@link #toCompositeData()}), the Micrometer gauge and the command line render.
 * Pattern: Spring Boot's {@code Health} with details, MicroProfile's {@code HealthCheckResponse}.
 *
 * @param status the worst status of {@code checks}; UP when there is none
 * @param checks every check made, in the order made
 */
public record HealthReport(HealthStatus status, List<HealthCheck> checks) {
    /** The open type of {@link #toCompositeData()}: items {@code status} and {@code checks}. */
    public static final CompositeType OPEN_TYPE;
    private static final CompositeType CHECK_TYPE;
    private static final String[] CHECK_ITEMS = {"name", "subject", "status", "value", "limit", "message"};

    static {
        try {
            CHECK_TYPE = new CompositeType("org.efaah.health.HealthCheck", "one check with its figure", CHECK_ITEMS,
                    new String[] {"what was checked", "what it was checked on", "UP, DEGRADED or DOWN",
                            "the figure found, -1 if none", "the figure it was held against, -1 if none",
                            "one line naming the figure and the threshold"},
                    new OpenType<?>[] {SimpleType.STRING, SimpleType.STRING, SimpleType.STRING, SimpleType.LONG,
                            SimpleType.LONG, SimpleType.STRING});
            OPEN_TYPE = new CompositeType("org.efaah.health.HealthReport", "a status and every check",
                    new String[] {"status", "checks"}, new String[] {"UP, DEGRADED or DOWN", "every check made"},
                    new OpenType<?>[] {SimpleType.STRING, ArrayType.getArrayType(CHECK_TYPE)});
        } catch (OpenDataException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /**
     * Checks the fields and copies the list.
     *
     * @param status        the worst status of the checks
     * @param checks        every check made
     * @throws NullPointerException     if an argument or a check is null
     * @throws IllegalArgumentException if {@code status} is not the worst of the checks'
     */
    public HealthReport {
        Objects.requireNonNull(status, "status");
        checks = List.copyOf(checks);
        if (status != worst(checks)) {
            throw new IllegalArgumentException("status: " + status + " is not the worst of the checks' ("
                    + worst(checks) + ")");
        }
    }

    /**
     * A report of {@code checks}, its status their worst.
     *
     * @param checks the checks, not null
     * @return the report
     */
    public static HealthReport of(List<HealthCheck> checks) {
        return new HealthReport(worst(checks), checks);
    }

    /**
     * This report's checks followed by {@code other}'s.
     *
     * @param other another report
     * @return the combined report, its status the worse of the two
     */
    public HealthReport and(HealthReport other) {
        List<HealthCheck> all = new ArrayList<>(checks);
        all.addAll(other.checks);
        return of(all);
    }

    /**
     * The checks that did not pass: the reasons for the status.
     *
     * @return the checks whose status is not UP, in order
     */
    public List<HealthCheck> reasons() {
        return checks.stream().filter(c -> c.status() != HealthStatus.UP).toList();
    }

    private static HealthStatus worst(List<HealthCheck> checks) {
        HealthStatus s = HealthStatus.UP;
        for (HealthCheck c : checks) {
            s = s.worse(c.status());
        }
        return s;
    }

    /**
     * The report as JMX open data (the MXBean's {@code Health} attribute): items {@code status}
     * and {@code checks}, an array of composites with the items of {@link HealthCheck}.
     *
     * @return the open data
     */
    public CompositeData toCompositeData() {
        try {
            CompositeData[] rows = new CompositeData[checks.size()];
            for (int i = 0; i < rows.length; i++) {
                HealthCheck c = checks.get(i);
                rows[i] = new CompositeDataSupport(CHECK_TYPE, CHECK_ITEMS,
                        new Object[] {c.name(), c.subject(), c.status().name(), c.value(), c.limit(), c.message()});
            }
            return new CompositeDataSupport(OPEN_TYPE, new String[] {"status", "checks"},
                    new Object[] {status.name(), rows});
        } catch (OpenDataException e) {
            throw new IllegalStateException("the report does not fit its own open type", e);
        }
    }

    /**
     * The report back from {@link #toCompositeData()}'s open data, as a JMX client reads it.
     *
     * @param data the open data
     * @return the report
     * @throws IllegalArgumentException if {@code data} lacks an item or holds an unknown status
     */
    public static HealthReport from(CompositeData data) {
        List<HealthCheck> checks = new ArrayList<>();
        for (Object o : (Object[]) data.get("checks")) {
            CompositeData c = (CompositeData) o;
            checks.add(new HealthCheck((String) c.get("name"), (String) c.get("subject"),
                    HealthStatus.valueOf((String) c.get("status")), (Long) c.get("value"), (Long) c.get("limit"),
                    (String) c.get("message")));
        }
        return new HealthReport(HealthStatus.valueOf((String) data.get("status")), checks);
    }

    /**
     * The status, then each check on its own line.
     *
     * @return the lines
     */
    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder(status.name());
        for (HealthCheck c : checks) {
            sb.append(System.lineSeparator()).append("  ").append(c);
        }
        return sb.toString();
    }

    /*
     * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
     * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
     * NoObjectMethodsTest). Same meaning as the generated ones; toString is its own.
     */
    @Override
    public boolean equals(Object o) {
        return o == this || o instanceof HealthReport that && Objects.equals(that.status, status)
                && Objects.equals(that.checks, checks);
    }

    @Override
    public int hashCode() {
        int h = Objects.hashCode(status);
        h = 31 * h + Objects.hashCode(checks);
        return h;
    }
}
