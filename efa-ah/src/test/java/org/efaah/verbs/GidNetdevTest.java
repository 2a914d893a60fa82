package org.efaah.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockNetwork;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;

/** {@link Device#queryGidNetdev}: the GID's netdev on RoCE, none on EFA, its range checks and refusals. */
class GidNetdevTest {

    @Test
    void aRoceGidNamesItsNetdevAndAnEfaGidNone() {
        try (Device roce = Device.openFirst(new MockVerbsProvider(MockConfig.builder().efa(false).build()));
             Device efa = Device.openFirst(new MockVerbsProvider())) {
            assertEquals(MockNetwork.ifindex(0), roce.queryGidNetdev(1, 0));
            assertEquals(0, efa.queryGidNetdev(1, 0));
        }
    }

    @Test
    void badInputIsRefusedBeforeTheProviderAndAClosedDeviceRefusesAll() {
        Device device = Device.openFirst(new MockVerbsProvider(MockConfig.builder().efa(false).build()));
        int length = device.port(1).gidTableLength();
        IllegalArgumentException index = assertThrows(IllegalArgumentException.class,
                () -> device.queryGidNetdev(1, length));
        assertTrue(index.getMessage().startsWith("sgid_index: " + length + " is out of range; valid 0.."),
                index.getMessage());
        assertThrows(IllegalArgumentException.class, () -> device.queryGidNetdev(2, 0));
        device.close();
        IllegalStateException closed = assertThrows(IllegalStateException.class, () -> device.queryGidNetdev(1, 0));
        assertTrue(closed.getMessage().contains("is closed"), closed.getMessage());
    }

    @Test
    void aProviderWithoutTheNetworkFacetAnswersEopnotsupp() {
        try (Device device = Device.openFirst(new CoreOnlyProviderTest.CoreOnly())) {
            VerbsException e = assertThrows(VerbsException.class, () -> device.queryGidNetdev(1, 0));
            assertEquals(Errno.EOPNOTSUPP, e.errno());
        }
    }
}
