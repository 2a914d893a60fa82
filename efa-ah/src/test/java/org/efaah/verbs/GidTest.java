package org.efaah.verbs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class GidTest {

    @Test
    void parsesLinkLocalText() {
        Gid gid = Gid.parse("fe80::1");
        byte[] expected = new byte[16];
        expected[0] = (byte) 0xfe;
        expected[1] = (byte) 0x80;
        expected[15] = 1;
        assertArrayEquals(expected, gid.toBytes());
        assertEquals("fe80::1", gid.toString());
    }

    @Test
    void keepsIpv4MappedFormForRoceV2() {
        Gid gid = Gid.parse("::ffff:10.0.0.5");
        byte[] b = gid.toBytes();
        assertEquals((byte) 0xff, b[10]);
        assertEquals((byte) 0xff, b[11]);
        assertEquals(10, b[12]);
        assertEquals(5, b[15]);
        assertTrue(gid.isIpv4Mapped());
        assertEquals("::ffff:10.0.0.5", gid.toString());
    }

    @Test
    void formatsPerRfc5952() {
        assertEquals("2001:db8::1:0:0:1", Gid.parse("2001:0db8:0000:0000:0001:0000:0000:0001").toString());
        assertEquals("::", Gid.parse("::").toString());
        assertEquals("1:0:2:3:4:5:6:7", Gid.parse("1:0:2:3:4:5:6:7").toString());
        assertEquals("fe80::200:ff:fe00:1", Gid.parse("FE80:0:0:0:200:FF:FE00:1").toString());
    }

    @Test
    void roundTripsBytes() {
        byte[] raw = new byte[16];
        for (int i = 0; i < 16; i++) {
            raw[i] = (byte) (i * 17 + 3);
        }
        Gid gid = Gid.of(raw);
        assertArrayEquals(raw, gid.toBytes());
        assertEquals(gid, Gid.parse(gid.toString()));
        assertEquals(gid.hashCode(), Gid.of(raw.clone()).hashCode());
        raw[15]++;
        assertNotEquals(gid, Gid.of(raw));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "fe80", "localhost", "example.com", "10.0.0.5", "fe80::1%eth0", "[fe80::1]",
            "fe80:::1", "1:2:3:4:5:6:7:8:9", "fe80::g", "::ffff:300.0.0.1", " fe80::1"})
    void rejectsNonLiterals(String text) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Gid.parse(text));
        assertTrue(e.getMessage().startsWith("gid: "), e.getMessage());
    }

    @Test
    void rejectsWrongLengthAndNull() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Gid.of(new byte[15]));
        assertTrue(e.getMessage().contains("15 bytes"), e.getMessage());
        NullPointerException n = assertThrows(NullPointerException.class, () -> Gid.of((byte[]) null));
        assertEquals("gid", n.getMessage());
        assertEquals("gid", assertThrows(NullPointerException.class, () -> Gid.parse(null)).getMessage());
    }
}
