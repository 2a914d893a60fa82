package org.efaah.health;

/** How usable something is, from best to worst; a report's status is its worst check's. */
public enum HealthStatus {
    /** Working, with room to spare. */
    UP,
    /** Working, but a limit is near or failures happened: an operator should look. */
    DEGRADED,
    /** Not working: no new AH can be made (device fatal or closed, port down, max_ah or max_pd reached). */
    DOWN;

    /**
     * The worse of two statuses.
     *
     * @param other another status, not null
     * @return {@code this} or {@code other}, whichever is later in UP, DEGRADED, DOWN
     */
    public HealthStatus worse(HealthStatus other) {
        return other.ordinal() > ordinal() ? other : this;
    }
}
