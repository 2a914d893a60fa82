package org.efaah.verbs;

/**
 * The 40 bytes in front of a UD receive that carries {@code IBV_WC_GRH}, and the one decision
 * that tells their two layouts apart. Shared by the endpoint (the source it reports) and the mock
 * ({@code ibv_init_ah_from_wc}), so that the source reported and the return-path AH always agree,
 * and both agree with libibverbs.
 *
 * <p>Layouts: an IPv6-format GRH (InfiniBand, RoCE v1, RoCE v2 over IPv6; the source GID at
 * bytes 8..23, the destination at 24..39), or on RoCE v2 over IPv4 20 undefined bytes followed by
 * the IPv4 header (source address at bytes 32..35, destination at 36..39).
 *
 * <p>The decision is rdma-core's ({@code get_grh_header_version} in libibverbs {@code verbs.c}):
 * without an IPv6 version nibble the area is IPv4 if byte 20 carries IPv4's version nibble, else
 * neither ({@code EPROTONOSUPPORT}); with an IPv6 nibble it is IPv4 only when byte 20 says a
 * 5-word header (IHL 5) and that header's checksum holds, since the first 20 bytes may be stale.
 */
public final class Grh {
    /** Bytes of the area. */
    public static final int LENGTH = 40;
    /** Where the IPv4 header starts on RoCE v2 over IPv4. */
    public static final int IPV4_HEADER_OFFSET = 20;
    private static final int IPV4_HEADER_LENGTH = 20;
    private static final int IPV4_CHECKSUM_OFFSET = IPV4_HEADER_OFFSET + 10;

    /** The layout of the area. */
    public enum Version {
        /** IPv6-format GRH. */
        IPV6,
        /** RoCE v2 over IPv4: the IPv4 header in the last 20 bytes. */
        IPV4,
        /** Neither: libibverbs answers EPROTONOSUPPORT. */
        UNKNOWN
    }

    private Grh() {
    }

    /**
     * The layout of {@code area} (at least 40 bytes, read from {@code offset}).
     *
     * @throws IllegalArgumentException if fewer than 40 bytes follow {@code offset}
     * @param area   the bytes a UD receive wrote before the payload
     * @param offset where the 40 bytes start in {@code area}
     * @return IPV6, IPV4 or UNKNOWN, as {@code ibv_init_ah_from_wc(3)} would tell them apart
     */
    public static Version version(byte[] area, int offset) {
        if (offset < 0 || area.length - offset < LENGTH) {
            throw new IllegalArgumentException("grh: " + (area.length - offset) + " bytes at " + offset + "; 40 needed");
        }
        int ipv4First = area[offset + IPV4_HEADER_OFFSET] & 0xFF;
        if ((area[offset] & 0xF0) != 0x60) {
            return (ipv4First >>> 4) == 4 ? Version.IPV4 : Version.UNKNOWN;
        }
        if ((ipv4First & 0x0F) != 5) {
            return Version.IPV6;
        }
        return storedChecksum(area, offset) == ipv4Checksum(area, offset + IPV4_HEADER_OFFSET)
                ? Version.IPV4 : Version.IPV6;
    }

    /**
     * The layout of the 40 bytes at the start of {@code area}.
     *
     * @param area at least 40 bytes
     * @return as {@link #version(byte[], int)} at offset 0
     * @throws IllegalArgumentException if {@code area} is shorter than 40 bytes
     */
    public static Version version(byte[] area) {
        return version(area, 0);
    }

    /**
     * The sender's GID: the GRH's source GID, or for IPv4 the IPv4-mapped source address;
     * null when the layout is {@link Version#UNKNOWN}.
     *
     * @param area at least 40 bytes, the GRH area at its start
     * @return the source GID (16 bytes, network order), or null
     * @throws IllegalArgumentException if {@code area} is shorter than 40 bytes
     */
    public static Gid sourceGid(byte[] area) {
        return gid(area, version(area), 8, 12);
    }

    /**
     * The receiver's GID, as {@link #sourceGid} but for the destination.
     *
     * @param area at least 40 bytes, the GRH area at its start
     * @return the destination GID (16 bytes, network order), null when the layout is {@link Version#UNKNOWN}
     * @throws IllegalArgumentException if {@code area} is shorter than 40 bytes
     */
    public static Gid destinationGid(byte[] area) {
        return gid(area, version(area), 24, 16);
    }

    private static Gid gid(byte[] area, Version version, int ipv6Offset, int ipv4AddressOffset) {
        byte[] gid = new byte[Gid.LENGTH];
        switch (version) {
            case IPV6 -> System.arraycopy(area, ipv6Offset, gid, 0, Gid.LENGTH);
            case IPV4 -> {
                gid[10] = (byte) 0xFF;
                gid[11] = (byte) 0xFF;
                System.arraycopy(area, IPV4_HEADER_OFFSET + ipv4AddressOffset, gid, 12, 4);
            }
            default -> {
                return null;
            }
        }
        return Gid.of(gid);
    }

    private static int storedChecksum(byte[] area, int offset) {
        return ((area[offset + IPV4_CHECKSUM_OFFSET] & 0xFF) << 8) | (area[offset + IPV4_CHECKSUM_OFFSET + 1] & 0xFF);
    }

    /**
     * RFC 791 header checksum of the 20 bytes at {@code offset}, its own checksum field taken as
     * zero: what the checksum field of a valid header holds.
     *
     * @param b      the bytes holding the header
     * @param offset where the 20-byte IPv4 header starts in {@code b}
     * @return the 16-bit checksum, 0..0xFFFF
     * @throws ArrayIndexOutOfBoundsException if the 20 bytes do not fit in {@code b}
     */
    public static int ipv4Checksum(byte[] b, int offset) {
        int sum = 0;
        for (int i = 0; i < IPV4_HEADER_LENGTH; i += 2) {
            if (i != 10) {
                sum += ((b[offset + i] & 0xFF) << 8) | (b[offset + i + 1] & 0xFF);
            }
        }
        while ((sum >>> 16) != 0) {
            sum = (sum & 0xFFFF) + (sum >>> 16);
        }
        return ~sum & 0xFFFF;
    }
}
