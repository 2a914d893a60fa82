package org.efaah.cache;

import java.util.Locale;
import org.efaah.verbs.Gid;

/**
 * Which entries {@link CacheInspection#entries} lists: those on a device, in a PD, to a
 * destination GID, or any combination (null fields match everything). Immutable.
 *
 * @param device a device name ({@code efa_0}), or null for any
 * @param pd     a PD id as {@link AddressHandleEntry#pdId} gives it, or null for any
 * @param dgid   a destination GID, or null for any
 */
public record EntryFilter(String device, String pd, Gid dgid) {
    /** Every entry. */
    public static final EntryFilter ALL = new EntryFilter(null, null, null);

    /**
     * A filter from text, as the MXBean operation and the command line take it: empty or null
     * strings match everything.
     *
     * @param device a device name, or empty
     * @param pd     a PD id ({@code pd@1b6d3586}), or empty
     * @param dgid   a GID in IPv6 notation ({@code fe80::1}), or empty
     * @return the filter
     * @throws IllegalArgumentException if {@code dgid} is not a GID
     */
    public static EntryFilter parse(String device, String pd, String dgid) {
        return new EntryFilter(blankToNull(device), blankToNull(pd) == null ? null : pd.trim().toLowerCase(Locale.ROOT),
                blankToNull(dgid) == null ? null : Gid.parse(dgid.trim()));
    }

    private static String blankToNull(String s) {
        return s == null || s.isBlank() ? null : s.trim();
    }

    boolean matchesPd(String deviceName, String pdId) {
        return (device == null || device.equals(deviceName)) && (pd == null || pd.equals(pdId));
    }

    boolean matchesDgid(Entry e) {
        return dgid == null || dgid.equals(e.dgid());
    }
}
