package org.efaah.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class AddressHandleAttributesTest {

    static Stream<Arguments> outOfRange() {
        return Stream.of(
                Arguments.of("hop_limit: 256", "0..255", (Consumer<AddressHandleAttributes.Builder>) b -> b.hopLimit(256)),
                Arguments.of("hop_limit: -1", "0..255", (Consumer<AddressHandleAttributes.Builder>) b -> b.hopLimit(-1)),
                Arguments.of("traffic_class: 300", "0..255", (Consumer<AddressHandleAttributes.Builder>) b -> b.trafficClass(300)),
                Arguments.of("flow_label: 1048576", "0x0..0xfffff", (Consumer<AddressHandleAttributes.Builder>) b -> b.flowLabel(0x100000)),
                Arguments.of("sl: 16", "0..15", (Consumer<AddressHandleAttributes.Builder>) b -> b.sl(16)),
                Arguments.of("sgid_index: 256", "0..255", (Consumer<AddressHandleAttributes.Builder>) b -> b.sgidIndex(256)),
                Arguments.of("port_num: 0", "1..255", (Consumer<AddressHandleAttributes.Builder>) b -> b.portNum(0)),
                Arguments.of("static_rate: 25", "0..24", (Consumer<AddressHandleAttributes.Builder>) b -> b.staticRate(25)),
                Arguments.of("src_path_bits: 128", "0..127", (Consumer<AddressHandleAttributes.Builder>) b -> b.srcPathBits(128)),
                Arguments.of("dlid: 65536", "0x0..0xffff", (Consumer<AddressHandleAttributes.Builder>) b -> b.dlid(65536)));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("outOfRange")
    void rejectsOutOfRangeNamingFieldValueAndRange(String start, String range,
                                                     Consumer<AddressHandleAttributes.Builder> setter) {
        AddressHandleAttributes.Builder b = AddressHandleAttributes.builder().dgid("fe80::1");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> setter.accept(b));
        assertTrue(e.getMessage().startsWith(start), e.getMessage());
        assertTrue(e.getMessage().contains(range), e.getMessage());
    }

    @Test
    void acceptsBoundaries() {
        AddressHandleAttributes a = AddressHandleAttributes.builder().dgid("fe80::1").hopLimit(255).trafficClass(255)
                .flowLabel(0xFFFFF).sl(15).sgidIndex(255).portNum(255).staticRate(24).srcPathBits(127).dlid(0xFFFF)
                .build();
        assertEquals(0xFFFFF, a.flowLabel());
        assertEquals(255, a.portNum());
        assertTrue(a.isGlobal());
    }

    @Test
    void nullNamesTheParameter() {
        assertEquals("dgid", assertThrows(NullPointerException.class,
                () -> AddressHandleAttributes.builder().dgid((Gid) null)).getMessage());
        assertEquals("dgid", assertThrows(NullPointerException.class,
                () -> AddressHandleAttributes.builder().dgid((String) null)).getMessage());
    }

    @Test
    void globalNeedsDgid() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> AddressHandleAttributes.builder().isGlobal(true).build());
        assertTrue(e.getMessage().startsWith("dgid"), e.getMessage());
        assertFalse(AddressHandleAttributes.builder().dlid(7).build().isGlobal());
    }

    @Test
    void equalityCoversEveryField() {
        AddressHandleAttributes base = AddressHandleAttributes.forGid("fe80::1");
        assertEquals(base, AddressHandleAttributes.forGid(Gid.parse("fe80::1")));
        assertEquals(base.hashCode(), AddressHandleAttributes.forGid("fe80::1").hashCode());
        assertEquals(base, base.toBuilder().build());
        assertNotEquals(base, base.toBuilder().dgid("fe80::2").build());
        assertNotEquals(base, base.toBuilder().hopLimit(1).build());
        assertNotEquals(base, base.toBuilder().trafficClass(1).build());
        assertNotEquals(base, base.toBuilder().flowLabel(1).build());
        assertNotEquals(base, base.toBuilder().sgidIndex(1).build());
        assertNotEquals(base, base.toBuilder().sl(1).build());
        assertNotEquals(base, base.toBuilder().staticRate(1).build());
        assertNotEquals(base, base.toBuilder().dlid(1).build());
        assertNotEquals(base, base.toBuilder().srcPathBits(1).build());
        assertNotEquals(base, base.toBuilder().portNum(2).build());
        assertNotEquals(base, base.toBuilder().isGlobal(false).build());
    }

    @Test
    void withoutAGrhTheGrhFieldsDoNotMatter() {
        AddressHandleAttributes lid = AddressHandleAttributes.builder().dlid(7).build();
        AddressHandleAttributes noisy = AddressHandleAttributes.builder().dlid(7).dgid("fe80::9").isGlobal(false)
                .sgidIndex(3).hopLimit(1).trafficClass(2).flowLabel(5).build();
        assertEquals(lid, noisy);
        assertEquals(lid.hashCode(), noisy.hashCode());
        assertNotEquals(lid, AddressHandleAttributes.builder().dlid(8).build());
    }
}
