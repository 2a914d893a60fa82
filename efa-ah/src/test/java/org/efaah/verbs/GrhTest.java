package org.efaah.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import org.junit.jupiter.api.Test;

/** The IPv4-or-IPv6 decision, case by case as libibverbs' get_grh_header_version makes it. */
class GrhTest {
    private static final byte[] FROM = {10, 0, 0, 5};
    private static final byte[] TO = {10, 0, 0, 1};

    private static byte[] ipv4Header(int firstByte) {
        byte[] h = {(byte) firstByte, 0, 0, 60, 0, 0, 0x40, 0, 64, 17, 0, 0, FROM[0], FROM[1], FROM[2], FROM[3],
            TO[0], TO[1], TO[2], TO[3]};
        int checksum = Grh.ipv4Checksum(h, 0);
        h[10] = (byte) (checksum >>> 8);
        h[11] = (byte) checksum;
        return h;
    }

    private static byte[] area(int first, byte[] ipv4) {
        byte[] a = new byte[Grh.LENGTH];
        java.util.Arrays.fill(a, 0, 20, (byte) first);
        System.arraycopy(ipv4, 0, a, 20, 20);
        return a;
    }

    @Test
    void anIpv6NibbleThenAValidIpv4HeaderIsIpv4() {
        // The case: 20 bytes of 0x60, then 10.0.0.5 -> 10.0.0.1 with a good checksum.
        byte[] a = area(0x60, ipv4Header(0x45));
        assertEquals(Grh.Version.IPV4, Grh.version(a));
        assertEquals(Gid.parse("::ffff:10.0.0.5"), Grh.sourceGid(a));
        assertEquals(Gid.parse("::ffff:10.0.0.1"), Grh.destinationGid(a));
    }

    @Test
    void anIpv6NibbleWithABadChecksumOrAnotherIhlIsIpv6() {
        byte[] bad = area(0x60, ipv4Header(0x45));
        bad[30] ^= 1;
        assertEquals(Grh.Version.IPV6, Grh.version(bad));
        assertEquals(Grh.Version.IPV6, Grh.version(area(0x60, ipv4Header(0x46))));
    }

    @Test
    void behindAnIpv6NibbleOnlyTheIhlAndTheChecksumCountNotTheIpv4Version() {
        // libibverbs checks ihl == 5 and the checksum there, not the version nibble.
        assertEquals(Grh.Version.IPV4, Grh.version(area(0x60, ipv4Header(0x05))));
    }

    @Test
    void withoutAnIpv6NibbleTheIpv4VersionDecidesAndNeitherIsUnknown() {
        assertEquals(Grh.Version.IPV4, Grh.version(area(0, ipv4Header(0x45))));
        byte[] stale = area(0, ipv4Header(0x45));
        stale[30] ^= 1; // no checksum test on this path
        assertEquals(Grh.Version.IPV4, Grh.version(stale));
        byte[] neither = area(0x90, ipv4Header(0x55));
        assertEquals(Grh.Version.UNKNOWN, Grh.version(neither));
        assertNull(Grh.sourceGid(neither));
    }
}
