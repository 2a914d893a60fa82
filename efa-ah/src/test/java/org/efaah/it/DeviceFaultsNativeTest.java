package org.efaah.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.ud.DeviceCloseUnderEndpointTest;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.CallRecorder;
import org.efaah.verbs.Device;
import org.efaah.verbs.Errno;
import org.efaah.verbs.Gid;
import org.efaah.verbs.GidType;
import org.efaah.verbs.PortAttributes;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.spi.VerbsProvider;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Issue 11 cases 2, 6, 7 and 8 against the real kernel: what rxe0 answers, and that the library
 * says the same as the mock. RoCE-only checks skip on EFA saying why.
 */
@Tag("native")
class DeviceFaultsNativeTest {

    private static void assumeRoce(Device device) {
        Assumptions.assumeTrue(device.port(1).linkLayer() == PortAttributes.LINK_LAYER_ETHERNET,
                () -> device.name() + " is not RoCE (link layer " + device.port(1).linkLayerName() + "): RoCE check skipped");
    }

    /** Case 2: the device closed under a live UD endpoint; no call reaches libibverbs afterwards. */
    @Test
    void closingTheDeviceUnderALiveEndpointReachesNoFreedObject() {
        CallRecorder recorder = new CallRecorder(NativeDevice.provider());
        Device device = NativeDevice.open(recorder.provider());
        DeviceCloseUnderEndpointTest.closeDeviceUnderEndpoint(recorder, device, NativeDevice.gidIndex());
    }

    /** Case 6: RoCE needs a GRH (the kernel says EINVAL); Java refuses first with one line. */
    @Test
    void aRoceAhWithoutGrhIsEinvalInTheKernelAndRefusedInJava() {
        VerbsProvider provider = NativeDevice.provider();
        try (Device device = NativeDevice.open(provider); ProtectionDomain pd = device.allocatePd()) {
            assumeRoce(device);
            AddressHandleAttributes lidRouted = AddressHandleAttributes.builder().dlid(1).isGlobal(false).build();
            IllegalArgumentException refused = assertThrows(IllegalArgumentException.class, () -> pd.createAh(lidRouted));
            assertTrue(refused.getMessage().startsWith("is_global: 0;"), refused.getMessage());
            long context = provider.openDevice(device.name());
            long rawPd = provider.allocatePd(context);
            try {
                VerbsException e = assertThrows(VerbsException.class, () -> provider.createAh(rawPd, lidRouted));
                assertEquals(Errno.EINVAL, e.errno(), e.getMessage());
            } finally {
                provider.deallocatePd(rawPd);
                provider.closeDevice(context);
            }
        }
    }

    /** Case 6: an empty GID slot gives ENODATA, with the hint saying so. */
    @Test
    void anEmptyGidSlotIsEnodata() {
        try (Device device = NativeDevice.open(NativeDevice.provider()); ProtectionDomain pd = device.allocatePd()) {
            assumeRoce(device);
            int empty = -1;
            int length = device.port(1).gidTableLength();
            for (int i = 0; i < length && empty < 0; i++) {
                if (device.gid(1, i).isZero()) {
                    empty = i;
                }
            }
            assertTrue(empty >= 0, "no empty slot in " + length);
            int index = empty;
            VerbsException e = assertThrows(VerbsException.class, () -> pd.createAh(AddressHandleAttributes.builder()
                    .dgid(NativeDevice.peers(1).get(0)).sgidIndex(index).build()));
            assertEquals(Errno.ENODATA, e.errno(), e.getMessage());
            assertTrue(e.getMessage().contains("hint: the GID slot at sgid_index " + index + " is empty"), e.getMessage());
            NativeDevice.figure("empty GID slot " + index + " of " + device.name() + ": " + e.errno()
                    + "; max_pd " + device.attributes().maxPd() + " (PD max_pd+1 not tried natively: too many under TCG)");
        }
    }

    /**
     * Case 7: sgid_index not given picks the RoCE v2 GID of the destination's family; before, 0
     * (rxe's IPv6 link-local GID) was used and an IPv4 peer failed with EINVAL.
     */
    @Test
    void sgidIndexNotGivenPicksTheRoceV2GidOfTheDestinationsFamily() {
        try (Device device = NativeDevice.open(NativeDevice.provider()); ProtectionDomain pd = device.allocatePd();
             AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.PARANOID).build()) {
            assumeRoce(device);
            Gid peer = NativeDevice.peers(1).get(0);
            AddressHandleAttributes v4 = device.resolve(AddressHandleAttributes.forGid(peer));
            assertTrue(device.gid(1, v4.sgidIndex()).isIpv4Mapped(), "picked " + v4.sgidIndex());
            assertEquals(GidType.ROCE_V2, gidType(device, v4.sgidIndex()));
            if (NativeDevice.inVm()) {
                assertEquals(NativeDevice.gidIndex(), v4.sgidIndex(), "the first RoCE v2 IPv4 GID is the VM's address");
            }
            AddressHandleAttributes v6 = device.resolve(AddressHandleAttributes.forGid("fe80::1234"));
            assertTrue(!device.gid(1, v6.sgidIndex()).isIpv4Mapped(), "picked " + v6.sgidIndex());
            try (AddressHandle ah = cache.acquire(pd, AddressHandleAttributes.forGid(peer))) {
                assertEquals(v4.sgidIndex(), ah.hardware().attributes().sgidIndex());
            }
            NativeDevice.figure("sgid_index default on " + device.name() + ": IPv4 dgid -> " + v4.sgidIndex()
                    + ", IPv6 dgid -> " + v6.sgidIndex());
        }
    }

    /** Case 8: the kernel's failures come back with device, PD, local and remote GID and a hint. */
    @Test
    void failedCreatesNameWhereAndWhy() {
        try (Device device = NativeDevice.open(NativeDevice.provider()); ProtectionDomain pd = device.allocatePd()) {
            assumeRoce(device);
            Assumptions.assumeTrue(NativeDevice.inVm(), "needs the VM's addressing (10.9.0.0/16 on veth0)");
            int v6Index = device.resolve(AddressHandleAttributes.forGid("fe80::1")).sgidIndex();
            // An IPv4 peer from an IPv6 source GID: the kernel cannot route it.
            VerbsException wrongFamily = assertThrows(VerbsException.class, () -> pd.createAh(
                    AddressHandleAttributes.builder().dgid(NativeDevice.peers(1).get(0)).sgidIndex(v6Index).build()));
            assertEquals(Errno.EINVAL, wrongFamily.errno(), wrongFamily.getMessage());
            String m = wrongFamily.getMessage();
            assertTrue(m.contains("device " + device.name()) && m.contains(", PD 0x")
                    && m.contains("local GID " + device.gid(1, v6Index)) && m.contains("remote GID ::ffff:10.9.1.1")
                    && m.contains("hint: the destination is not reachable from this GID"), m);
            // No neighbour entry for an address off the VM's peers: ETIMEDOUT.
            VerbsException noNeighbour = assertThrows(VerbsException.class,
                    () -> pd.createAh(AddressHandleAttributes.forGid("::ffff:10.9.200.1")));
            assertEquals(Errno.ETIMEDOUT, noNeighbour.errno(), noNeighbour.getMessage());
            assertTrue(noNeighbour.getMessage().contains("hint: no neighbour entry for the destination")
                    && noNeighbour.getMessage().contains("local GID ::ffff:" + System.getenv("EFA_AH_VM_LOCAL_IP")),
                    noNeighbour.getMessage());
            NativeDevice.figure("create_ah failure messages on " + device.name() + ": " + m + " | " + noNeighbour.getMessage());
        }
    }

    /** ibv_query_gid_ex's type through the SPI, on a context of its own closed at once. */
    private static GidType gidType(Device device, int index) {
        long context = device.provider().openDevice(device.name());
        try {
            return device.provider().queryGidType(context, 1, index);
        } finally {
            device.provider().closeDevice(context);
        }
    }
}
