package org.efaah.verbs.mock;

/**
 * How a mock device answers a second {@code ibv_create_ah} for a (PD, destination GID) whose AH
 * still exists. Real fleets have all three; {@link #KERNEL_CACHED} is what a current EFA host
 * does, and the mock's default.
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
     * A current EFA host: the driver's AH cache (Linux 7.3, EFA driver 3.3) answers a duplicate
     * create with the same AHN, as a kernel cache hit costing a system call
     * ({@link MockConfig#systemCallNanos()}) and no hardware command. The cache is per PD and
     * counts the users of each AH; a destroy frees the hardware AH at its last user only, and a
     * failed hardware destroy leaves the AH cached for later creates.
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
