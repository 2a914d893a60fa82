package org.efaah.health;

import java.util.Objects;

/**
 * One check of a {@link HealthReport} with its figure: what was looked at, the value found, the
 * limit it was held against, and the status that gives. Immutable.
 *
 * @param name    what was checked, snake_case: {@code device_open}, {@code device_fatal},
 *                {@code port_state}, {@code ah_usage}, {@code pd_usage}, {@code create_failures},
 *                {@code undestroyed_ahs}, {@code leaked_handles}, {@code cache_open}, {@code event_reader},
 *                {@code network_reader}, {@code devices_down}
 * @param subject what it was checked on, e.g. {@code efa_0}, {@code efa_0 port 1},
 *                {@code ENOMEM}; empty for the whole cache
 * @param status  the status the figure gives
 * @param value   the figure found (a count, or a port state number); -1 when not a number
 * @param limit   the figure it was held against (such as {@code max_ah}); -1 when none
 * @param message one line for people, naming the figure and the threshold
 */
public record HealthCheck(String name, String subject, HealthStatus status, long value, long limit, String message) {

    /**
     * Checks the fields.
     *
     * @param name          what was checked
     * @param subject       what it was checked on, or empty
     * @param status        the status the figure gives
     * @param value         the figure, -1 when none
     * @param limit         the figure held against, -1 when none
     * @param message       one line for people
     * @throws NullPointerException if a string or the status is null
     */
    public HealthCheck {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(subject, "subject");
        Objects.requireNonNull(status, "status");
        Objects.requireNonNull(message, "message");
    }

    /**
     * The check on one line: {@code STATUS name subject: message}.
     *
     * @return the line
     */
    @Override
    public String toString() {
        return status + " " + name + (subject.isEmpty() ? "" : " " + subject) + ": " + message;
    }

    /*
     * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
     * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
     * NoObjectMethodsTest). Same meaning as the generated ones; toString is its own.
     */
    @Override
    public boolean equals(Object o) {
        return o == this || o instanceof HealthCheck that && Objects.equals(that.name, name)
                && Objects.equals(that.subject, subject) && Objects.equals(that.status, status)
                && that.value == value && that.limit == limit && Objects.equals(that.message, message);
    }

    @Override
    public int hashCode() {
        int h = Objects.hashCode(name);
        h = 31 * h + Objects.hashCode(subject);
        h = 31 * h + Objects.hashCode(status);
        h = 31 * h + Long.hashCode(value);
        h = 31 * h + Long.hashCode(limit);
        h = 31 * h + Objects.hashCode(message);
        return h;
    }
}
