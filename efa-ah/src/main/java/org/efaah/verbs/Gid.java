package org.efaah.verbs;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Objects;

/**
 * A 128-bit InfiniBand/RoCE/EFA Global Identifier: 16 bytes in network byte order, the layout of
 * {@code union ibv_gid} and of an IPv6 address.
 *
 * <p>Immutable and thread-safe. Equality and hash code are by value and cost two long compares,
 * which keeps cache look-ups keyed by a GID cheap.
 */
public final class Gid {
    /** A GID is always this many bytes. */
    public static final int LENGTH = 16;

    private final long high;
    private final long low;

    private Gid(long high, long low) {
        this.high = high;
        this.low = low;
    }

    /**
     * A GID from its 16 raw bytes, network order (a copy is taken).
     *
     * @throws NullPointerException     if {@code bytes} is null
     * @throws IllegalArgumentException if {@code bytes.length != 16}
     * @param bytes 16 bytes, network order
     * @return the GID
     */
    public static Gid of(byte[] bytes) {
        Objects.requireNonNull(bytes, "gid");
        if (bytes.length != LENGTH) {
            throw new IllegalArgumentException(
                    "gid: " + bytes.length + " bytes; a GID is exactly " + LENGTH + " bytes (network order)");
        }
        return new Gid(readLong(bytes, 0), readLong(bytes, 8));
    }

    /**
     * A GID from its two 64-bit halves, as numbers: {@code subnetPrefix} is bytes 0..7 read big-endian,
     * {@code interfaceId} bytes 8..15.
     *
     * @param subnetPrefix the upper 64 bits
     * @param interfaceId  the lower 64 bits
     * @return the GID
     */
    public static Gid of(long subnetPrefix, long interfaceId) {
        return new Gid(subnetPrefix, interfaceId);
    }

    /**
     * Parses IPv6 text, e.g. {@code fe80::1} or the IPv4-mapped form {@code ::ffff:10.0.0.5} used by
     * RoCE v2 over IPv4. Only literal addresses are accepted: no host names (so nothing ever goes
     * to DNS), no brackets and no zone ids.
     *
     * @throws NullPointerException     if {@code text} is null
     * @throws IllegalArgumentException if {@code text} is not an IPv6 literal
     * @param text an IPv6 literal
     * @return the GID
     */
    public static Gid parse(String text) {
        Objects.requireNonNull(text, "gid");
        if (!looksLikeIpv6Literal(text)) {
            throw invalid(text, null);
        }
        InetAddress address;
        try {
            // Starting with a hex digit or ':', holding a ':' and only address characters, the
            // text is parsed by the JDK as a literal and never resolved as a name.
            address = InetAddress.getByName(text);
        } catch (UnknownHostException e) {
            throw invalid(text, e);
        }
        byte[] raw = address.getAddress();
        if (address instanceof Inet4Address) {
            // The JDK turns ::ffff:a.b.c.d into an IPv4 address; a GID keeps the mapped form.
            byte[] mapped = new byte[LENGTH];
            mapped[10] = (byte) 0xff;
            mapped[11] = (byte) 0xff;
            System.arraycopy(raw, 0, mapped, 12, 4);
            raw = mapped;
        }
        return of(raw);
    }

    private static boolean looksLikeIpv6Literal(String text) {
        if (text.isEmpty() || text.length() > 45 || text.indexOf(':') < 0) {
            return false;
        }
        // InetAddress looks up as a host name any text not starting with a hex digit or ':'.
        if (text.charAt(0) == '.') {
            return false;
        }
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            boolean ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
                    || c == ':' || c == '.';
            if (!ok) {
                return false;
            }
        }
        return true;
    }

    private static IllegalArgumentException invalid(String text, Throwable cause) {
        return new IllegalArgumentException("gid: '" + text
                + "' is not an IPv6 literal (e.g. fe80::1 or ::ffff:10.0.0.5); a GID is 16 bytes", cause);
    }

    /** {@return the 16 bytes, network order (a fresh copy)} */
    public byte[] toBytes() {
        byte[] b = new byte[LENGTH];
        writeLong(b, 0, high);
        writeLong(b, 8, low);
        return b;
    }

    /**
     * Copies the 16 bytes, network order, into {@code dst} at {@code offset}.
     *
     * @param dst    the array to write into
     * @param offset where the 16 bytes start in {@code dst}
     * @throws IndexOutOfBoundsException if the 16 bytes do not fit in {@code dst} at {@code offset}
     */
    public void copyTo(byte[] dst, int offset) {
        Objects.checkFromIndexSize(offset, LENGTH, dst.length);
        writeLong(dst, offset, high);
        writeLong(dst, offset + 8, low);
    }

    /** {@return the upper 64 bits (subnet prefix)} */
    public long subnetPrefix() {
        return high;
    }

    /** {@return the lower 64 bits (interface id)} */
    public long interfaceId() {
        return low;
    }

    /** {@return true for the all-zero GID, which a GID table uses for an empty slot} */
    public boolean isZero() {
        return high == 0 && low == 0;
    }

    /** {@return true for an IPv4-mapped GID ({@code ::ffff:a.b.c.d}), the form RoCE v2 over IPv4 uses} */
    public boolean isIpv4Mapped() {
        return high == 0 && (low >>> 32) == 0xffffL;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Gid g && g.high == high && g.low == low;
    }

    @Override
    public int hashCode() {
        return Long.hashCode(high * 31 + low);
    }

    /** RFC 5952 text: lower case, the longest run of zero groups as {@code ::}, IPv4-mapped as dotted quad. */
    @Override
    public String toString() {
        if (isIpv4Mapped()) {
            return "::ffff:" + ((low >>> 24) & 0xff) + "." + ((low >>> 16) & 0xff) + "."
                    + ((low >>> 8) & 0xff) + "." + (low & 0xff);
        }
        int[] groups = new int[8];
        for (int i = 0; i < 4; i++) {
            groups[i] = (int) (high >>> (48 - 16 * i)) & 0xffff;
            groups[i + 4] = (int) (low >>> (48 - 16 * i)) & 0xffff;
        }
        int bestStart = -1;
        int bestLength = 1; // a single zero group is not shortened (RFC 5952 4.2.2)
        for (int i = 0; i < 8; ) {
            if (groups[i] != 0) {
                i++;
                continue;
            }
            int j = i;
            while (j < 8 && groups[j] == 0) {
                j++;
            }
            if (j - i > bestLength) {
                bestStart = i;
                bestLength = j - i;
            }
            i = j;
        }
        StringBuilder sb = new StringBuilder(39);
        for (int i = 0; i < 8; i++) {
            if (i == bestStart) {
                sb.append("::");
                i += bestLength - 1;
                continue;
            }
            if (sb.length() > 0 && sb.charAt(sb.length() - 1) != ':') {
                sb.append(':');
            }
            sb.append(Integer.toHexString(groups[i]));
        }
        return sb.toString();
    }

    private static long readLong(byte[] b, int off) {
        long v = 0;
        for (int i = 0; i < 8; i++) {
            v = (v << 8) | (b[off + i] & 0xffL);
        }
        return v;
    }

    private static void writeLong(byte[] b, int off, long v) {
        for (int i = 7; i >= 0; i--) {
            b[off + i] = (byte) v;
            v >>>= 8;
        }
    }
}
