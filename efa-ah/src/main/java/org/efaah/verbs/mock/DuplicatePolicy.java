package org.efaah.verbs.mock;

/**
 * How a mock device answers a second {@code ibv_create_ah} for a (PD, destination GID) whose AH
 * still exists. Real fleets have all three.
 */
public enum DuplicatePolicy {
    /** Older EFA, mlx5, rxe: every create makes another hardware AH. */
    LEGACY,
    /**
     * New-generation EFA hardware under a kernel without the driver's AH cache: the device keeps
     * one AH per (PD, GID) and refuses a duplicate; the kernel reports EINVAL (configurable).
     */
    STRICT,
    /**
     * New hardware under a kernel with the driver's refcounted AH cache: the duplicate create
     * succeeds, returns the same AHN and costs a system call but no hardware command.
     */
    KERNEL_CACHED;

    /**
     * Parses {@code legacy}, {@code strict}, {@code kernel-cached} (case-insensitive, surrounding
     * blanks ignored).
     *
     * @param text the policy's {@link #cliName()}
     * @return the policy
     * @throws IllegalArgumentException naming the valid values if {@code text} is none of them
     */
    public static DuplicatePolicy parse(String text) {
        for (DuplicatePolicy p : values()) {
            if (p.cliName().equalsIgnoreCase(text.trim())) {
                return p;
            }
        }
        throw new IllegalArgumentException("behaviour: '" + text + "' is unknown; valid: legacy, strict, kernel-cached");
    }

    /**
     * The lower-case, hyphenated name used on command lines and in properties.
     *
     * @return e.g. {@code kernel-cached}
     */
    public String cliName() {
        return name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
    }
}
