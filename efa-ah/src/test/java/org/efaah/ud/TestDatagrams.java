package org.efaah.ud;

import java.nio.ByteBuffer;
import org.efaah.verbs.Grh;
import org.efaah.verbs.WorkCompletion;

/** Datagrams built by hand, for tests anywhere that need a given 40-byte area in front. */
public final class TestDatagrams {
    private TestDatagrams() {
    }

    /**
     * A datagram from {@code sourceQpn} whose receive completion had {@code IBV_WC_GRH} set and
     * {@code area} (40 bytes) in front: what a RoCE device would hand over, source named from
     * the GRH as the endpoint names it.
     */
    public static Datagram withGrh(byte[] area, int sourceQpn) {
        WorkCompletion wc = new WorkCompletion();
        wc.status = WorkCompletion.SUCCESS;
        wc.opcode = WorkCompletion.OPCODE_RECV;
        wc.byteLength = Grh.LENGTH;
        wc.srcQp = sourceQpn;
        wc.wcFlags = WorkCompletion.FLAG_GRH;
        return new Datagram(new byte[0], Grh.sourceGid(area), SourceOrigin.GRH, Datagram.NO_AHN, area.clone(), wc);
    }

    /**
     * The case: 20 bytes of 0x60 (an IPv6 version nibble), then a valid IPv4 header from
     * {@code from} to {@code to} (4 bytes each).
     */
    public static byte[] ipv6NibbleThenIpv4(byte[] from, byte[] to) {
        byte[] area = new byte[Grh.LENGTH];
        java.util.Arrays.fill(area, 0, 20, (byte) 0x60);
        byte[] h = {0x45, 0, 0, 60, 0, 0, 0x40, 0, 64, 17, 0, 0, from[0], from[1], from[2], from[3], to[0], to[1],
            to[2], to[3]};
        int checksum = Grh.ipv4Checksum(h, 0);
        h[10] = (byte) (checksum >>> 8);
        h[11] = (byte) checksum;
        System.arraycopy(h, 0, area, 20, 20);
        return area;
    }

    /** The 40 bytes that were in front of {@code d}'s payload. */
    public static byte[] area(Datagram d) {
        return d.grh().clone();
    }

    /** The completion {@code d} came from (a copy). */
    public static WorkCompletion completion(Datagram d) {
        WorkCompletion copy = new WorkCompletion();
        copy.copyFrom(d.completion());
        return copy;
    }

    /** {@code size} bytes that differ with {@code seed} and with the position, to verify a payload byte for byte. */
    public static ByteBuffer pattern(int size, int seed) {
        ByteBuffer b = ByteBuffer.allocate(size);
        for (int i = 0; i < size; i++) {
            b.put((byte) (seed * 31 + i * 7));
        }
        return b.flip();
    }
}
