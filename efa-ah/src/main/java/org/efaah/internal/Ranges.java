package org.efaah.internal;

/**
 * The one range check behind every {@link IllegalArgumentException} for an out-of-range number
 * in efa-ah, so that all of them read the same: {@code "field: value is out of range; valid min..max"}.
 */
public final class Ranges {
    private Ranges() {
    }

    /**
     * Checks one value.
     *
     * @param field the field's name in the user's terms ({@code sgid_index}, {@code maxAh})
     * @param value the value given
     * @param min   the smallest valid value
     * @param max   the largest valid value
     * @throws IllegalArgumentException naming {@code field}, {@code value} and the valid range when
     *                                  {@code value} is outside {@code min..max}
     */
    public static void check(String field, long value, long min, long max) {
        if (value < min || value > max) {
            throw new IllegalArgumentException(field + ": " + value + " is out of range; valid " + range(min, max));
        }
    }

    // Bit fields (flow_label, dlid, QPN, Q_Key) read best in hex, like their masks in verbs.h.
    private static String range(long min, long max) {
        boolean bitField = max > 0xFF && (max & (max + 1)) == 0;
        return bitField ? "0x" + Long.toHexString(min) + "..0x" + Long.toHexString(max) : min + ".." + max;
    }
}
