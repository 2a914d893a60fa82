package org.efaah.verbs.ibverbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.CreatedAh;
import org.efaah.verbs.Device;
import org.efaah.verbs.DeviceAttributes;
import org.efaah.verbs.Errno;
import org.efaah.verbs.Gid;
import org.efaah.verbs.HardwareAddressHandle;
import org.efaah.verbs.PortAttributes;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.VerbsProvider;
import org.efaah.verbs.VerbsProviders;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Against a real device: EFA on AWS, or soft-RoCE (rxe) in the test VM. Excluded from the
 * default build by its tag; run with {@code mvn -Pnative-it verify}.
 */
@Tag("native")
class NativeDeviceTest {

    @BeforeEach
    void needsDevice() {
        NativeTestSupport.assumeDevice();
    }

    @Test
    void providerRoundTripOnFirstDevice() {
        try (VerbsProvider p = VerbsProviders.open("native")) {
            List<String> names = p.deviceNames();
            assertFalse(names.isEmpty());
            long context = p.openDevice(names.get(0));
            try {
                DeviceAttributes device = p.queryDevice(context);
                assertEquals(names.get(0), device.name());
                assertTrue(device.portCount() >= 1, device.toString());
                PortAttributes port = p.queryPort(context, 1);
                assertTrue(port.gidTableLength() > 0, port.toString());
                assertTrue(List.of(256, 512, 1024, 2048, 4096).contains(port.activeMtu()), port.toString());
                Gid own = p.queryGid(context, 1, 0);
                assertFalse(own.isZero(), "GID 0 of port 1 is empty on " + device.name());

                long pd = p.allocatePd(context);
                try {
                    CreatedAh ah = p.createAh(pd, AddressHandleAttributes.builder().dgid(own).portNum(1).build());
                    assertNotEquals(0, ah.handle());
                    if (device.efa()) {
                        assertTrue(ah.ahn() >= 0 && ah.ahn() <= 0xFFFF, "AHN " + ah.ahn());
                    } else {
                        assertEquals(CreatedAh.NO_AHN, ah.ahn(), "a non-EFA device has no AHN");
                    }
                    // The kernel refuses to free a PD that an AH still uses.
                    VerbsException busy = assertThrows(VerbsException.class, () -> p.deallocatePd(pd));
                    assertEquals(Errno.EBUSY, busy.errno(), busy.getMessage());
                    p.destroyAh(ah.handle());
                } finally {
                    p.deallocatePd(pd);
                }
            } finally {
                p.closeDevice(context);
            }
        }
    }

    @Test
    void deviceApiOverNative() {
        try (VerbsProvider p = VerbsProviders.open("native"); Device device = Device.openFirst(p)) {
            Gid own = device.gid(1, 0);
            try (ProtectionDomain pd = device.allocatePd()) {
                HardwareAddressHandle ah = pd.createAh(AddressHandleAttributes.forGid(own));
                assertEquals(device.isEfa(), ah.ahn() != CreatedAh.NO_AHN);
                assertEquals(1, pd.liveAhCount());
                ah.destroy();
                assertEquals(0, pd.liveAhCount());
            }
        }
    }

    @Test
    void autoChoosesNativeWhenADeviceIsPresent() {
        assertEquals("native", VerbsProviders.factory("auto").name());
    }
}
