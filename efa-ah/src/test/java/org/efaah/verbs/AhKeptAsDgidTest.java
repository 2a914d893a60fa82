package org.efaah.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;

/**
 * Issue 19: on EFA an AH made with {@link AddressHandleAttributes#forEfa} is kept as its dgid
 * alone (64 bytes less per AH); what it answers must not change.
 */
class AhKeptAsDgidTest {
    private static final Gid PEER = Gid.parse("fe80::a");

    @Test
    void anEfaAhAnswersTheAttributesItWasCreatedWith() {
        try (Device device = Device.openFirst(new MockVerbsProvider(MockConfig.defaults()))) {
            ProtectionDomain pd = device.allocatePd();
            assertTrue(device.isEfa());
            HardwareAddressHandle plain = pd.createAh(AddressHandleAttributes.forGid(PEER));
            assertEquals(AddressHandleAttributes.forEfa(PEER), plain.attributes());
            assertTrue(plain.attributes().isForEfa());
            assertSame(PEER, plain.dgid());
            plain.destroy();
            // Anything else EFA would ignore is still kept and answered as given.
            AddressHandleAttributes other = AddressHandleAttributes.builder().dgid(PEER).hopLimit(9).build();
            HardwareAddressHandle kept = pd.createAh(other);
            assertFalse(kept.attributes().isForEfa());
            assertEquals(9, kept.attributes().hopLimit());
            assertEquals(PEER, kept.dgid());
            kept.destroy();
            pd.close();
        }
    }

    @Test
    void forEfaIsForGidWithSgidIndexZeroGiven() {
        AddressHandleAttributes a = AddressHandleAttributes.forEfa(PEER);
        assertTrue(a.isForEfa());
        assertTrue(a.hasSgidIndex());
        assertEquals(0, a.sgidIndex());
        assertEquals(1, a.portNum());
        assertEquals(AddressHandleAttributes.DEFAULT_HOP_LIMIT, a.hopLimit());
        assertFalse(AddressHandleAttributes.forGid(PEER).isForEfa(), "sgid_index not given");
        assertFalse(a.toBuilder().trafficClass(1).build().isForEfa());
        assertFalse(a.toBuilder().portNum(2).build().isForEfa());
    }
}
