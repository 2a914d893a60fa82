package org.efaah.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.function.ToIntFunction;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Gid;
import org.efaah.verbs.mock.MockConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.function.ThrowingConsumer;

/**
 * Random attribute values and GID text, valid and invalid: only the documented exceptions come
 * out (IllegalArgumentException naming the field, the value and the valid range), and an input
 * the device would refuse never reaches the provider.
 *
 * <p>Every test draws its cases from a fixed seed, so a run is repeatable; a failure names the
 * seed, and {@code -Defaah.test.seed=N} replays it (or explores new cases).
 */
@ExtendWith(CacheInvariants.class)
class InputPropertiesTest {

    static final String SEED_PROPERTY = "efaah.test.seed";

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

    record FieldValue(Field field, int value) {
        @Override
        public String toString() {
            return field.cName + "=" + value;
        }
    }

    @Test
    void everyFieldAcceptsItsRangeAndRejectsTheRestNamingFieldValueAndRange() {
        List<FieldValue> edges = new ArrayList<>();
        for (Field f : Field.values()) {
            for (int v : new int[] {f.min - 1, f.min, f.max, f.max + 1, 0, -1, 1, Integer.MIN_VALUE, Integer.MAX_VALUE}) {
                edges.add(new FieldValue(f, v));
            }
        }
        forAll(0xF1E1DL, edges, 2000 * Field.values().length,
                r -> new FieldValue(Field.values()[r.nextInt(Field.values().length)], anyValue(r)),
                InputPropertiesTest::checkField);
    }

    /** Values near every field's bounds as well as anywhere in int. */
    private static int anyValue(SplittableRandom r) {
        switch (r.nextInt(4)) {
            case 0:
                return r.nextInt(-3, 301);
            case 1:
                return r.nextInt(0xFFF0, 0x10011);
            case 2:
                return r.nextInt(0xFFFF0, 0x100011);
            default:
                return r.nextInt();
        }
    }

    private static void checkField(FieldValue fv) {
        Field field = fv.field();
        int value = fv.value();
        AddressHandleAttributes.Builder builder = AddressHandleAttributes.builder().dgid("fe80::1");
        boolean valid = value >= field.min && value <= field.max;
        try {
            AddressHandleAttributes a = field.setter.apply(builder, value).build();
            assertTrue(valid, "accepted");
            assertEquals(value, field.getter.applyAsInt(a));
        } catch (IllegalArgumentException e) {
            String m = e.getMessage();
            assertFalse(valid, "refused: " + m);
            assertTrue(m.startsWith(field.cName + ": " + value + " is out of range; valid "), m);
            String range = m.substring(m.indexOf("valid ") + 6);
            assertTrue(range.equals(field.min + ".." + field.max)
                    || range.equals("0x" + Integer.toHexString(field.min) + "..0x" + Integer.toHexString(field.max)), m);
        }
    }

    /** What GIDs are written with; ':' and '.' weighted up so that near-literals come often. */
    private static final String GID_CHARS = "0123456789abcdefABCDEF:::...";

    /** Text a resolver would take as a host name, and near-literals that are easy to get wrong. */
    private static final List<String> TRICKY_TEXT = List.of("", "::", ":::", "::ffff:1.2.3.4", "1::2::3", ".:1", ".::1",
            "..:", ":.", "localhost", "localhost:1", "ip6-localhost", "example.com", "dead:beef.example", "[::1]",
            "::1%lo", "fe80::1%1", "fe80::1/64", " ::1", "::1 ", "::ffff:256.1.1.1", "1:2:3:4:5:6:7:8:9",
            "0000:0000:0000:0000:0000:ffff:255.255.255.255", "0000:0000:0000:0000:0000:0000:0000:0000:0",
            "1.2.3.4", "1.2.3.4:", "::1.2.3.4", "\u0661::1", "\uff11::1");

    @Test
    void gidTextIsParsedToItsBytesOrRefusedWithIllegalArgument() {
        forAll(0x61D7E47L, TRICKY_TEXT, 3000, InputPropertiesTest::gidLikeText, InputPropertiesTest::checkParse);
    }

    @Test
    void anyTextIsParsedOrRefusedWithIllegalArgument() {
        forAll(0xA77E47L, TRICKY_TEXT, 2000, InputPropertiesTest::anyText, InputPropertiesTest::checkParse);
    }

    /** Random GID characters, or a valid GID text with a few characters changed. */
    private static String gidLikeText(SplittableRandom r) {
        if (r.nextBoolean()) {
            return randomChars(r, r.nextInt(r.nextBoolean() ? 9 : 49), GID_CHARS);
        }
        GidText valid = gidText(r);
        StringBuilder sb = new StringBuilder(valid.text());
        for (int edits = 1 + r.nextInt(3); edits > 0; edits--) {
            int at = r.nextInt(sb.length() + 1);
            char c = GID_CHARS.charAt(r.nextInt(GID_CHARS.length()));
            switch (r.nextInt(3)) {
                case 0 -> sb.insert(at, c);
                case 1 -> sb.deleteCharAt(Math.min(at, sb.length() - 1));
                default -> sb.setCharAt(Math.min(at, sb.length() - 1), c);
            }
        }
        return sb.toString();
    }

    /** Any code points, lone surrogates and NUL included, or the characters of near-miss GIDs. */
    private static String anyText(SplittableRandom r) {
        int length = r.nextInt(61);
        if (r.nextBoolean()) {
            return randomChars(r, length, "0123456789abcdef:.%[]/ gxyz\u0000\u00e9");
        }
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < length; i++) {
            switch (r.nextInt(3)) {
                case 0 -> sb.append((char) r.nextInt(0x80));
                case 1 -> sb.append((char) r.nextInt(0x10000));
                default -> sb.appendCodePoint(r.nextInt(Character.MIN_SUPPLEMENTARY_CODE_POINT,
                        Character.MAX_CODE_POINT + 1));
            }
        }
        return sb.toString();
    }

    private static String randomChars(SplittableRandom r, int length, String alphabet) {
        StringBuilder sb = new StringBuilder(length);
        for (int i = 0; i < length; i++) {
            sb.append(alphabet.charAt(r.nextInt(alphabet.length())));
        }
        return sb.toString();
    }

    private static void checkParse(String text) {
        Gid gid;
        try {
            gid = Gid.parse(text);
        } catch (IllegalArgumentException e) {
            assertTrue(e.getMessage().startsWith("gid: '" + text + "' is not an IPv6 literal"), e.getMessage());
            // Gid.parse keeps InetAddress's refusal as the cause, which shows the text reached
            // InetAddress; there only text starting with a hex digit or ':' is parsed as a
            // literal, the rest goes to the system resolver (and so to DNS).
            if (e.getCause() instanceof UnknownHostException) {
                assertTrue(startsLikeALiteral(text), "refused by the resolver, so it was looked up as a host name");
            }
            return;
        }
        assertTrue(startsLikeALiteral(text) && text.indexOf(':') >= 0 && text.chars().allMatch(c -> isLiteralChar((char) c)),
                "only IPv6 literal text is accepted, got " + gid);
        assertEquals(gid, Gid.parse(gid.toString()), "the canonical text parses back to the same GID");
    }

    private static boolean startsLikeALiteral(String text) {
        return !text.isEmpty() && (isHexDigit(text.charAt(0)) || text.charAt(0) == ':');
    }

    private static boolean isLiteralChar(char c) {
        return isHexDigit(c) || c == ':' || c == '.';
    }

    // Not Character.digit, which also takes non-ASCII digits such as U+0661.
    private static boolean isHexDigit(char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    }

    /** A GID and one way of writing it. */
    record GidText(Gid gid, String text) {
    }

    @Test
    void everyWayOfWritingAGidParsesToTheSameBytes() {
        List<GidText> edges = new ArrayList<>();
        for (byte[] b : new byte[][] {new byte[16], HexFormat.of().parseHex("00000000000000000000ffff00000000"),
                HexFormat.of().parseHex("ffffffffffffffffffffffffffffffff"),
                HexFormat.of().parseHex("00000000000000000000ffffffffffff")}) {
            Gid gid = Gid.of(b);
            for (String text : forms(b)) {
                edges.add(new GidText(gid, text));
                edges.add(new GidText(gid, text.toUpperCase(Locale.ROOT)));
            }
        }
        forAll(0xF0E35L, edges, 1000, InputPropertiesTest::gidText, g -> {
            assertEquals(g.gid(), Gid.parse(g.text()));
            assertEquals(g.gid(), Gid.parse(g.gid().toString()));
        });
    }

    /**
     * Random 16 bytes, often with runs of zero groups (for '::') and often IPv4-mapped, which
     * uniform bytes almost never are; written in a random one of the usual forms.
     */
    private static GidText gidText(SplittableRandom r) {
        byte[] bytes = new byte[16];
        if (r.nextInt(4) == 0) {
            bytes[10] = (byte) 0xff;
            bytes[11] = (byte) 0xff;
            for (int i = 12; i < 16; i++) {
                bytes[i] = (byte) r.nextInt(256);
            }
        } else {
            boolean sparse = r.nextBoolean();
            for (int i = 0; i < 16; i += 2) {
                if (!sparse || r.nextInt(3) == 0) {
                    bytes[i] = (byte) r.nextInt(256);
                    bytes[i + 1] = (byte) r.nextInt(256);
                }
            }
        }
        List<String> forms = forms(bytes);
        String text = forms.get(r.nextInt(forms.size()));
        return new GidText(Gid.of(bytes), r.nextBoolean() ? text.toUpperCase(Locale.ROOT) : text);
    }

    /** Canonical, zero-padded full, and the JDK's own; an IPv4-mapped GID also as dotted quad in full and as hex. */
    private static List<String> forms(byte[] bytes) {
        Gid gid = Gid.of(bytes);
        StringBuilder full = new StringBuilder();
        for (int i = 0; i < 16; i += 2) {
            full.append(i == 0 ? "" : ":").append(String.format("%02x%02x", bytes[i], bytes[i + 1]));
        }
        if (gid.isIpv4Mapped()) {
            String quad = gid.toString().substring("::ffff:".length());
            return List.of(gid.toString(), full.toString(), "0000:0000:0000:0000:0000:ffff:" + quad,
                    "0:0:0:0:0:ffff:" + quad);
        }
        try {
            // Not for mapped bytes: the JDK turns those into an Inet4Address, whose text has no ':'.
            return List.of(gid.toString(), full.toString(), InetAddress.getByAddress(bytes).getHostAddress());
        } catch (UnknownHostException e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void gidBytesMustBeSixteen() {
        List<byte[]> edges = new ArrayList<>();
        for (int length = 0; length <= 40; length++) {
            edges.add(new byte[length]);
        }
        forAll(0xB17E5L, edges, 300, r -> {
            byte[] b = new byte[r.nextInt(41)];
            for (int i = 0; i < b.length; i++) {
                b[i] = (byte) r.nextInt(256);
            }
            return b;
        }, bytes -> {
            try {
                Gid gid = Gid.of(bytes);
                assertEquals(16, bytes.length);
                assertEquals(gid, Gid.of(gid.toBytes()));
            } catch (IllegalArgumentException e) {
                assertTrue(bytes.length != 16, e.getMessage());
                assertTrue(e.getMessage().startsWith("gid: " + bytes.length + " bytes"), e.getMessage());
            }
        });
    }

    /**
     * Attributes a caller could build, every field within its C range but not always within the
     * device's limits, on an EFA or a RoCE mock. A null dgid or global is one left unset.
     */
    record Request(int port, int sgid, Gid dgid, Boolean global, int hop, int sl, boolean efa) {
        AddressHandleAttributes.Builder builder() {
            AddressHandleAttributes.Builder b = AddressHandleAttributes.builder().portNum(port).sgidIndex(sgid)
                    .hopLimit(hop).sl(sl);
            if (dgid != null) {
                b.dgid(dgid);
            }
            if (global != null) {
                b.isGlobal(global);
            }
            return b;
        }
    }

    @Test
    void acquireRefusesWhatTheDeviceWouldBeforeAnyProviderCall() {
        Gid peer = Gid.parse("fe80::1");
        List<Request> edges = new ArrayList<>();
        for (boolean efa : new boolean[] {true, false}) {
            edges.add(new Request(1, 0, peer, null, 64, 0, efa));
            edges.add(new Request(2, 0, peer, null, 64, 0, efa));
            edges.add(new Request(255, 0, peer, null, 64, 0, efa));
            edges.add(new Request(1, GID_TABLE_LENGTH - 1, peer, true, 0, AddressHandleAttributes.MAX_SL, efa));
            edges.add(new Request(1, GID_TABLE_LENGTH, peer, true, 255, 0, efa));
            edges.add(new Request(1, 255, peer, false, 64, 0, efa));
            edges.add(new Request(1, 0, peer, false, 64, 0, efa));
            edges.add(new Request(1, 0, null, null, 64, 0, efa));
            edges.add(new Request(1, 0, null, true, 64, 0, efa));
        }
        forAll(0xAC9E5L, edges, 1500, r -> {
            byte[] dgid = new byte[16];
            for (int i = 0; i < 16; i++) {
                dgid[i] = (byte) r.nextInt(256);
            }
            return new Request(r.nextBoolean() ? 1 : r.nextInt(1, 256),
                    r.nextBoolean() ? r.nextInt(0, GID_TABLE_LENGTH + 1) : r.nextInt(0, 256),
                    r.nextInt(10) == 0 ? null : Gid.of(dgid),
                    r.nextInt(10) < 3 ? null : Boolean.valueOf(r.nextBoolean()),
                    r.nextInt(0, 256), r.nextInt(0, AddressHandleAttributes.MAX_SL + 1), r.nextBoolean());
        }, InputPropertiesTest::checkAcquire);
    }

    private static void checkAcquire(Request request) {
        AddressHandleAttributes attributes;
        try {
            attributes = request.builder().build();
        } catch (IllegalArgumentException e) {
            assertTrue(e.getMessage().startsWith("dgid: required when is_global=1"), e.getMessage());
            return;
        }
        MockConfig config = MockFixture.strictDevice().efa(request.efa()).gidTableLength(GID_TABLE_LENGTH).build();
        try (MockFixture f = new MockFixture(config, LeakDetection.DISABLED)) {
            String expected = null;
            if (attributes.portNum() != 1) {
                expected = "port_num: " + attributes.portNum() + " is out of range; valid 1..1";
            } else if (!attributes.isGlobal()) {
                expected = "is_global: 0"; // EFA and RoCE (the mock's other model) both need a GRH
            } else if (attributes.isGlobal() && attributes.sgidIndex() >= GID_TABLE_LENGTH) {
                expected = "sgid_index: " + attributes.sgidIndex() + " is out of range; valid 0.." + (GID_TABLE_LENGTH - 1);
            }
            try (AddressHandle h = f.cache.acquire(f.pd, attributes)) {
                assertNull(expected, "accepted " + attributes);
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

    /**
     * Checks the edge cases, then {@code randomCases} drawn from the test's seed (or the one
     * {@value #SEED_PROPERTY} gives). A failure carries the seed, the case number and the input,
     * so that it can be replayed exactly.
     */
    private static <T> void forAll(long testSeed, List<T> edgeCases, int randomCases,
                                   Function<SplittableRandom, T> generator, ThrowingConsumer<T> property) {
        String override = System.getProperty(SEED_PROPERTY);
        long seed = override == null || override.isBlank() ? testSeed : Long.decode(override.trim());
        SplittableRandom random = new SplittableRandom(seed);
        int total = edgeCases.size() + randomCases;
        for (int i = 0; i < total; i++) {
            T input = i < edgeCases.size() ? edgeCases.get(i) : generator.apply(random);
            try {
                property.accept(input);
            } catch (Throwable t) {
                throw new AssertionError("seed " + seed + " (replay with -D" + SEED_PROPERTY + "=" + seed + "), case "
                        + (i + 1) + " of " + total + (i < edgeCases.size() ? " (an edge case)" : "") + ", input "
                        + show(input) + ": " + t, t);
            }
        }
    }

    /** The input as Java source would write it, so that NULs, surrogates and spaces show. */
    private static String show(Object input) {
        if (input instanceof byte[] b) {
            return b.length + " bytes [" + HexFormat.of().formatHex(b) + "]";
        }
        if (!(input instanceof String s)) {
            return String.valueOf(input);
        }
        StringBuilder sb = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
                sb.append(c);
            } else {
                sb.append(String.format("\\u%04x", (int) c));
            }
        }
        return sb.append('"').toString();
    }
}
