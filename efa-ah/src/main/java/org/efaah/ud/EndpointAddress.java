package org.efaah.ud;

import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.util.Objects;
import org.efaah.verbs.Gid;
import org.efaah.verbs.UdQueuePair;

/**
 * Where a UD endpoint receives: its GID, QP number and Q_Key, the three things a peer needs to
 * send to it. Exchanged out of band, as text ({@code fe80::1/0x000101/0x11111111}) or as 24
 * bytes (GID, QPN, Q_Key; network order).
 *
 * @param gid  the endpoint's port GID (16 bytes)
 * @param qpn  its 24-bit QP number
 * @param qkey its Q_Key, 0..0x7FFFFFFF
 */
public record EndpointAddress(Gid gid, int qpn, long qkey) {
    /** Size of {@link #toBytes()}. */
    public static final int BYTES = 24;

    /**
     * Checks the address.
     *
     * @param gid  not null
     * @param qpn  0..0xFFFFFF
     * @param qkey 0..0x7FFFFFFF
     * @throws NullPointerException     if {@code gid} is null
     * @throws IllegalArgumentException if {@code qpn} is outside 0..0xFFFFFF or {@code qkey}
     *                                  outside 0..0x7FFFFFFF
     */
    public EndpointAddress {
        Objects.requireNonNull(gid, "gid");
        if (qpn < 0 || qpn > 0xFFFFFF) {
            throw new IllegalArgumentException("qpn: " + qpn + " is out of range; valid 0x0..0xffffff");
        }
        if (qkey < 0 || qkey > UdQueuePair.MAX_QKEY) {
            throw new IllegalArgumentException("qkey: " + qkey + " is out of range; valid 0x0..0x7fffffff");
        }
    }

    /**
     * The text form, readable by {@link #parse(String)}.
     *
     * @return {@code GID/0xQPN/0xQKEY}, the GID in IPv6 notation, QPN 6 and Q_Key 8 hex digits
     */
    public String toText() {
        return String.format("%s/0x%06x/0x%08x", gid, qpn, qkey);
    }

    /**
     * Parses {@link #toText()}'s form; QPN and Q_Key may be decimal or 0x-prefixed hexadecimal.
     *
     * @param text {@code GID/QPN/QKEY}; surrounding blanks are ignored
     * @return the address
     * @throws NullPointerException     if {@code text} is null
     *
     * @throws IllegalArgumentException naming the part that does not parse or is out of range
     */
    public static EndpointAddress parse(String text) {
        Objects.requireNonNull(text, "text");
        String[] parts = text.trim().split("/");
        if (parts.length != 3) {
            throw new IllegalArgumentException("address: '" + text + "' is not GID/QPN/QKEY");
        }
        Gid gid = Gid.parse(parts[0]);
        // Checked as written, before any narrowing: 0x100000101 must not become QPN 0x101.
        return new EndpointAddress(gid, (int) number("qpn", parts[1], 0xFFFFFF),
                number("qkey", parts[2], UdQueuePair.MAX_QKEY));
    }

    private static long number(String field, String text, long max) {
        BigInteger value;
        try {
            value = text.startsWith("0x") || text.startsWith("0X") ? new BigInteger(text.substring(2), 16)
                    : new BigInteger(text);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(field + ": '" + text + "' is not a number", e);
        }
        if (value.signum() < 0 || value.compareTo(BigInteger.valueOf(max)) > 0) {
            throw new IllegalArgumentException(field + ": " + text + " is out of range; valid 0x0..0x"
                    + Long.toHexString(max));
        }
        return value.longValueExact();
    }

    /**
     * The binary form, readable by {@link #fromBytes(byte[])}.
     *
     * @return {@value #BYTES} bytes, network order: the GID (16), the QPN (4), the Q_Key (4)
     */
    public byte[] toBytes() {
        return ByteBuffer.allocate(BYTES).put(gid.toBytes()).putInt(qpn).putInt((int) qkey).array();
    }

    /**
     * Reads {@link #toBytes()}'s form.
     *
     * @param bytes {@value #BYTES} bytes, network order: GID, QPN, Q_Key
     * @return the address
     * @throws IllegalArgumentException if {@code bytes} is null or not {@value #BYTES} bytes long,
     *                                  or the QPN or Q_Key is out of range
     */
    public static EndpointAddress fromBytes(byte[] bytes) {
        if (bytes == null || bytes.length != BYTES) {
            throw new IllegalArgumentException("address: " + (bytes == null ? "null" : bytes.length + " bytes")
                    + "; an endpoint address is " + BYTES + " bytes");
        }
        ByteBuffer b = ByteBuffer.wrap(bytes);
        byte[] gid = new byte[Gid.LENGTH];
        b.get(gid);
        return new EndpointAddress(Gid.of(gid), b.getInt(), b.getInt() & 0xFFFFFFFFL);
    }

    /*
     * Written out, not the record's generated ones: those link through java.lang.runtime.ObjectMethods,
     * whose static method handles cache their last asType, here to types of this library: a java.base
     * static then keeps the library's class loader (strongly on JDK 17, softly on 25; RecordLoaderTest).
     * A peer's address is what a caller keys its sessions with.
     */
    @Override
    public boolean equals(Object o) {
        return o instanceof EndpointAddress a && a.qpn == qpn && a.qkey == qkey && a.gid.equals(gid);
    }

    @Override
    public int hashCode() {
        return (31 * gid.hashCode() + qpn) * 31 + Long.hashCode(qkey);
    }

    @Override
    public String toString() {
        return toText();
    }
}
