package org.efaah.ud;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.efaah.verbs.Gid;
import org.junit.jupiter.api.Test;

/** Issue 17 case 9: a QPN (24 bits) and a Q_Key are checked on the whole value, before any narrowing. */
class EndpointAddressTest {

    @Test
    void aQpnBeyond32BitsIsRefusedNotTruncated() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> EndpointAddress.parse("fe80::1/0x100000101/0x11111111"));
        assertTrue(e.getMessage().startsWith("qpn: 0x100000101 is out of range; valid 0x0..0xffffff"), e.getMessage());
    }

    @Test
    void aQpnBeyond64BitsIsOutOfRangeToo() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> EndpointAddress.parse("fe80::1/0x10000000000000000101/0x11111111"));
        assertTrue(e.getMessage().startsWith("qpn: 0x10000000000000000101 is out of range"), e.getMessage());
    }

    @Test
    void aQkeyBeyond32BitsIsRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> EndpointAddress.parse("fe80::1/0x101/0x111111111"));
        assertTrue(e.getMessage().startsWith("qkey: 0x111111111 is out of range; valid 0x0..0x7fffffff"),
                e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> EndpointAddress.parse("fe80::1/0x101/-1"));
        assertTrue(e.getMessage().startsWith("qkey: -1 is out of range"), e.getMessage());
    }

    @Test
    void textThatIsNoNumberSaysSo() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> EndpointAddress.parse("fe80::1/0xzz/1"));
        assertEquals("qpn: '0xzz' is not a number", e.getMessage());
    }

    @Test
    void theTextFormReadsBack() {
        EndpointAddress a = new EndpointAddress(Gid.parse("fe80::1"), 0xffffff, 0x7fffffff);
        assertEquals(a, EndpointAddress.parse(a.toText()));
        assertEquals(a, EndpointAddress.parse(" fe80::1/16777215/2147483647 "));
    }
}
