package org.efaah.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.net.InetAddress;
import java.util.function.BiFunction;
import java.util.function.ToIntFunction;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.Size;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Gid;
import org.efaah.verbs.mock.MockConfig;

/**
 * Random attribute values and GID text, valid and invalid: only the documented exceptions come
 * out (IllegalArgumentException naming the field, the value and the valid range), and an input
 * the device would refuse never reaches the provider.
 */
class InputPropertiesTest {

    private static final int GID_TABLE_LENGTH = 4;

    /** Each ranged field of ibv_ah_attr: its C name, range, builder setter and getter. */
    enum Field {
        FLOW_LABEL("flow_label", 0, AddressHandleAttributes.MAX_FLOW_LABEL, AddressHandleAttributes.Builder::flowLabel,
                AddressHandleAttributes::flowLabel),
        SGID_INDEX("sgid_index", 0, 255, AddressHandleAttributes.Builder::sgidIndex, AddressHandleAttributes::sgidIndex),
        HOP_LIMIT("hop_limit", 0, 255, AddressHandleAttributes.Builder::hopLimit, AddressHandleAttributes::hopLimit),
        TRAFFIC_CLASS("traffic_class", 0, 255, AddressHandleAttributes.Builder::trafficClass,
                AddressHandleAttributes::trafficClass),
        DLID("dlid", 0, 0xFFFF, AddressHandleAttributes.Builder::dlid, AddressHandleAttributes::dlid),
        SL("sl", 0, AddressHandleAttributes.MAX_SL, AddressHandleAttributes.Builder::sl, AddressHandleAttributes::sl),
        SRC_PATH_BITS("src_path_bits", 0, AddressHandleAttributes.MAX_SRC_PATH_BITS,
                AddressHandleAttributes.Builder::srcPathBits, AddressHandleAttributes::srcPathBits),
        STATIC_RATE("static_rate", 0, AddressHandleAttributes.MAX_STATIC_RATE,
                AddressHandleAttributes.Builder::staticRate, AddressHandleAttributes::staticRate),
        PORT_NUM("port_num", 1, 255, AddressHandleAttributes.Builder::portNum, AddressHandleAttributes::portNum);

        final String cName;
        final int min;
        final int max;
        final BiFunction<AddressHandleAttributes.Builder, Integer, AddressHandleAttributes.Builder> setter;
        final ToIntFunction<AddressHandleAttributes> getter;

        Field(String cName, int min, int max,
              BiFunction<AddressHandleAttributes.Builder, Integer, AddressHandleAttributes.Builder> setter,
              ToIntFunction<AddressHandleAttributes> getter) {
            this.cName = cName;
            this.min = min;
            this.max = max;
            this.setter = setter;
            this.getter = getter;
        }
    }

    /** Values near every field's bounds as well as anywhere in int. */
    @Provide
    Arbitrary<Integer> anyValue() {
        return Arbitraries.oneOf(Arbitraries.integers().between(-3, 300), Arbitraries.integers().between(0xFFF0, 0x10010),
                Arbitraries.integers().between(0xFFFF0, 0x100010), Arbitraries.integers());
    }

    @Property(tries = 2000)
    void everyFieldAcceptsItsRangeAndRejectsTheRestNamingFieldValueAndRange(@ForAll Field field,
                                                                            @ForAll("anyValue") int value) {
        AddressHandleAttributes.Builder builder = AddressHandleAttributes.builder().dgid("fe80::1");
        boolean valid = value >= field.min && value <= field.max;
        try {
            AddressHandleAttributes a = field.setter.apply(builder, value).build();
            assertTrue(valid, field.cName + "=" + value + " was accepted");
            assertEquals(value, field.getter.applyAsInt(a));
        } catch (IllegalArgumentException e) {
            assertTrue(!valid, field.cName + "=" + value + " was refused: " + e.getMessage());
            String m = e.getMessage();
            assertTrue(m.startsWith(field.cName + ": " + value + " is out of range; valid "), m);
            String range = m.substring(m.indexOf("valid ") + 6);
            assertTrue(range.equals(field.min + ".." + field.max)
                    || range.equals("0x" + Integer.toHexString(field.min) + "..0x" + Integer.toHexString(field.max)), m);
        }
    }

    /** Text made of what GIDs are written with, and of what they are not. */
    @Provide
    Arbitrary<String> gidLikeText() {
        return Arbitraries.strings().withChars("0123456789abcdefABCDEF:::...").ofMaxLength(48)
                .injectDuplicates(0.1)
                .edgeCases(e -> e.add("").add("::").add(":::").add("::ffff:1.2.3.4").add("1::2::3"));
    }

    @Provide
    Arbitrary<String> anyText() {
        return Arbitraries.oneOf(Arbitraries.strings().all().ofMaxLength(60),
                Arbitraries.strings().withChars("0123456789abcdef:.%[]/ gxyz\u0000\u00e9").ofMaxLength(60));
    }

    @Property(tries = 3000)
    void gidTextIsParsedToItsBytesOrRefusedWithIllegalArgument(@ForAll("gidLikeText") String text) {
        checkParse(text);
    }

    @Property(tries = 2000)
    void anyTextIsParsedOrRefusedWithIllegalArgument(@ForAll("anyText") String text) {
        checkParse(text);
    }

    private static void checkParse(String text) {
        Gid gid;
        try {
            gid = Gid.parse(text);
        } catch (IllegalArgumentException e) {
            assertTrue(e.getMessage().startsWith("gid: '" + text + "' is not an IPv6 literal"), e.getMessage());
            return;
        } catch (RuntimeException e) {
            fail("Gid.parse(\"" + text + "\") threw " + e);
            return;
        }
        assertTrue(text.indexOf(':') >= 0, "only IPv6 text is accepted: " + text);
        assertEquals(gid, Gid.parse(gid.toString()), "the canonical text parses back to the same GID");
    }

    /** Sixteen random bytes written in the forms people use: canonical, full, upper case, mapped. */
    @Property(tries = 1000)
    void everyWayOfWritingAGidParsesToTheSameBytes(@ForAll @Size(16) byte[] bytes, @ForAll boolean upper,
                                                   @ForAll boolean full) throws Exception {
        Gid gid = Gid.of(bytes);
        String text;
        if (gid.isIpv4Mapped()) {
            text = gid.toString();
        } else if (full) {
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < 16; i += 2) {
                sb.append(i == 0 ? "" : ":").append(String.format("%02x%02x", bytes[i], bytes[i + 1]));
            }
            text = sb.toString();
        } else {
            text = InetAddress.getByAddress(bytes).getHostAddress();
        }
        if (upper) {
            text = text.toUpperCase(java.util.Locale.ROOT);
        }
        assertEquals(gid, Gid.parse(text), text);
        assertEquals(gid, Gid.parse(gid.toString()));
    }

    @Property(tries = 300)
    void gidBytesMustBeSixteen(@ForAll @Size(max = 40) byte[] bytes) {
        try {
            Gid gid = Gid.of(bytes);
            assertEquals(16, bytes.length);
            assertEquals(gid, Gid.of(gid.toBytes()));
        } catch (IllegalArgumentException e) {
            assertTrue(bytes.length != 16);
            assertTrue(e.getMessage().startsWith("gid: " + bytes.length + " bytes"), e.getMessage());
        }
    }

    /** Attributes a caller could build: every field within its C range, the device's limits aside. */
    @Provide
    Arbitrary<AddressHandleAttributes.Builder> requests() {
        Arbitrary<Integer> port = Arbitraries.oneOf(Arbitraries.just(1), Arbitraries.integers().between(1, 255));
        Arbitrary<Integer> sgid = Arbitraries.oneOf(Arbitraries.integers().between(0, GID_TABLE_LENGTH),
                Arbitraries.integers().between(0, 255));
        Arbitrary<Gid> dgid = Arbitraries.bytes().array(byte[].class).ofSize(16).map(Gid::of).injectNull(0.1);
        Arbitrary<Boolean> global = Arbitraries.of(Boolean.TRUE, Boolean.FALSE).injectNull(0.3);
        Arbitrary<Integer> hop = Arbitraries.integers().between(0, 255);
        Arbitrary<Integer> sl = Arbitraries.integers().between(0, AddressHandleAttributes.MAX_SL);
        return Combinators.combine(port, sgid, dgid, global, hop, sl).as((p, s, d, g, h, l) -> {
            AddressHandleAttributes.Builder b = AddressHandleAttributes.builder().portNum(p).sgidIndex(s).hopLimit(h).sl(l);
            if (d != null) {
                b.dgid(d);
            }
            if (g != null) {
                b.isGlobal(g);
            }
            return b;
        });
    }

    @Property(tries = 1500)
    void acquireRefusesWhatTheDeviceWouldBeforeAnyProviderCall(@ForAll("requests") AddressHandleAttributes.Builder request,
                                                               @ForAll boolean efa) {
        AddressHandleAttributes attributes;
        try {
            attributes = request.build();
        } catch (IllegalArgumentException e) {
            assertTrue(e.getMessage().startsWith("dgid: required when is_global=1"), e.getMessage());
            return;
        }
        MockConfig config = MockConfig.builder().efa(efa).gidTableLength(GID_TABLE_LENGTH).build();
        try (MockFixture f = new MockFixture(config, LeakDetection.DISABLED)) {
            String expected = null;
            if (attributes.portNum() != 1) {
                expected = "port_num: " + attributes.portNum() + " is out of range; valid 1..1";
            } else if (efa && !attributes.isGlobal()) {
                expected = "is_global: 0";
            } else if (attributes.isGlobal() && attributes.sgidIndex() >= GID_TABLE_LENGTH) {
                expected = "sgid_index: " + attributes.sgidIndex() + " is out of range; valid 0.." + (GID_TABLE_LENGTH - 1);
            }
            try (AddressHandle h = f.cache.acquire(f.pd, attributes)) {
                assertEquals(null, expected, "accepted " + attributes);
                assertEquals(1, f.mock.counters().createCalls());
                h.nativeHandle();
            } catch (IllegalArgumentException e) {
                assertTrue(expected != null && e.getMessage().startsWith(expected),
                        "expected " + expected + ", got " + e.getMessage());
                assertEquals(0, f.mock.counters().createCalls(), "bad input reached the provider");
                assertEquals(0, f.cache.stats().misses());
            }
        }
    }
}
