package org.efaah.verbs.mock;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.DeviceAttributes;
import org.efaah.verbs.Errno;
import org.efaah.verbs.HardwareAddressHandle;
import org.efaah.verbs.PortAttributes;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.VerbsException;
import org.junit.jupiter.api.Test;

class MockVerbsProviderTest {

    private static AddressHandleAttributes peer(int n) {
        return AddressHandleAttributes.forGid("fe80::" + Integer.toHexString(n));
    }

    @Test
    void looksLikeAnEfaDevice() {
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().deviceCount(2).gidTableLength(3).build());
        assertEquals(List.of("efa_0", "efa_1"), mock.deviceNames());
        try (Device d = Device.open(mock, "efa_1")) {
            DeviceAttributes a = d.attributes();
            assertEquals(0x1d0f, a.vendorId());
            assertEquals(MockConfig.DEFAULT_MAX_AH, a.maxAh());
            assertEquals(1, a.portCount());
            assertTrue(d.isEfa());
            PortAttributes p = d.port(1);
            assertEquals(PortAttributes.LINK_LAYER_UNSPECIFIED, p.linkLayer());
            assertEquals(3, p.gidTableLength());
            assertNotEquals(d.gid(1, 0), d.gid(1, 1));
        }
    }

    @Test
    void strictRefusesADuplicateWithEinval() {
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().duplicatePolicy(DuplicatePolicy.STRICT).build());
        try (Device d = Device.openFirst(mock); ProtectionDomain pd = d.allocatePd()) {
            HardwareAddressHandle first = pd.createAh(peer(1));
            VerbsException e = assertThrows(VerbsException.class, () -> pd.createAh(peer(1)));
            assertEquals(Errno.EINVAL, e.errno());
            assertEquals("ibv_create_ah", e.operation());
            assertTrue(e.getMessage().startsWith("ibv_create_ah failed: EINVAL (22)"), e.getMessage());
            assertEquals(1, mock.counters().duplicatesRefused());
            first.destroy();
            pd.createAh(peer(1)).destroy(); // allowed again once the first is gone
            assertEquals(0, mock.counters().liveAhs());
        }
    }

    @Test
    void strictErrnoIsConfigurable() {
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().duplicatePolicy(DuplicatePolicy.STRICT)
                .duplicateErrno(Errno.EAGAIN).build());
        try (Device d = Device.openFirst(mock); ProtectionDomain pd = d.allocatePd()) {
            HardwareAddressHandle first = pd.createAh(peer(1));
            assertEquals(Errno.EAGAIN, assertThrows(VerbsException.class, () -> pd.createAh(peer(1))).errno());
            first.destroy();
        }
    }

    @Test
    void legacyMakesASecondHardwareAh() {
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().duplicatePolicy(DuplicatePolicy.LEGACY).build());
        try (Device d = Device.openFirst(mock); ProtectionDomain pd = d.allocatePd()) {
            HardwareAddressHandle a = pd.createAh(peer(1));
            HardwareAddressHandle b = pd.createAh(peer(1));
            assertNotEquals(a.ahn(), b.ahn());
            assertEquals(2, mock.counters().hardwareCreates());
            assertEquals(1, mock.counters().duplicatesCreated());
            a.destroy();
            b.destroy();
        }
    }

    @Test
    void kernelCachedReturnsTheSameAhnAndFreesOnLastDestroy() {
        MockVerbsProvider mock = new MockVerbsProvider(
                MockConfig.builder().duplicatePolicy(DuplicatePolicy.KERNEL_CACHED).build());
        try (Device d = Device.openFirst(mock); ProtectionDomain pd = d.allocatePd()) {
            HardwareAddressHandle a = pd.createAh(peer(1));
            HardwareAddressHandle b = pd.createAh(peer(1));
            assertEquals(a.ahn(), b.ahn());
            assertNotEquals(a.nativeHandle(), b.nativeHandle());
            MockCounters c = mock.counters();
            assertEquals(1, c.hardwareCreates());
            assertEquals(1, c.kernelCacheHits());
            a.destroy();
            assertEquals(1, mock.counters().liveAhs());
            b.destroy();
            assertEquals(0, mock.counters().liveAhs());
            assertEquals(1, mock.counters().hardwareDestroys());
        }
    }

    @Test
    void theDefaultDeviceIsACurrentEfaHostWithTheKernelsAhCache() {
        assertEquals(DuplicatePolicy.KERNEL_CACHED, MockConfig.defaults().duplicatePolicy());
        assertEquals(DuplicatePolicy.KERNEL_CACHED, MockConfig.fromSystemProperties().duplicatePolicy());
        MockVerbsProvider mock = new MockVerbsProvider();
        try (Device d = Device.openFirst(mock); ProtectionDomain pd = d.allocatePd()) {
            HardwareAddressHandle a = pd.createAh(peer(1));
            HardwareAddressHandle b = pd.createAh(peer(1));
            assertEquals(a.ahn(), b.ahn());
            assertEquals(1, mock.counters().kernelCacheHits());
            b.destroy();
            a.destroy();
        }
    }

    @Test
    void theKernelCacheIsPerPd() {
        MockVerbsProvider mock = new MockVerbsProvider();
        try (Device d = Device.openFirst(mock); ProtectionDomain pd1 = d.allocatePd(); ProtectionDomain pd2 = d.allocatePd()) {
            HardwareAddressHandle a = pd1.createAh(peer(1));
            HardwareAddressHandle b = pd2.createAh(peer(1));
            assertNotEquals(a.ahn(), b.ahn());
            assertEquals(2, mock.counters().hardwareCreates());
            assertEquals(0, mock.counters().kernelCacheHits());
            a.destroy();
            assertEquals(1, mock.counters().liveAhs(), "pd2's AH is its own");
            b.destroy();
            assertEquals(2, mock.counters().hardwareDestroys());
        }
    }

    @Test
    void aKernelCacheHitSendsTheDeviceNoCommand() {
        MockVerbsProvider mock = new MockVerbsProvider();
        try (Device d = Device.openFirst(mock); ProtectionDomain pd = d.allocatePd()) {
            HardwareAddressHandle a = pd.createAh(peer(1));
            mock.failNextCreates(1, Errno.ETIMEDOUT); // a device command would fail
            HardwareAddressHandle b = pd.createAh(peer(1));
            assertEquals(a.ahn(), b.ahn());
            assertEquals(Errno.ETIMEDOUT, assertThrows(VerbsException.class, () -> pd.createAh(peer(2))).errno(),
                    "the next create that reaches the device meets the fault");
            assertEquals(1, mock.counters().hardwareCreates());
            b.destroy();
            a.destroy();
        }
    }

    @Test
    void onlyTheLastUsersDestroyReachesTheDeviceAndItsFailureLeavesTheAhCached() {
        MockVerbsProvider mock = new MockVerbsProvider();
        try (Device d = Device.openFirst(mock); ProtectionDomain pd = d.allocatePd()) {
            HardwareAddressHandle a = pd.createAh(peer(1));
            HardwareAddressHandle b = pd.createAh(peer(1));
            mock.failNextDestroys(1, Errno.ETIMEDOUT);
            b.destroy(); // not the last user: no device command, so the fault waits
            assertEquals(0, mock.counters().hardwareDestroys());
            assertEquals(Errno.ETIMEDOUT, assertThrows(VerbsException.class, a::destroy).errno());
            // The failed device destroy left the entry cached: a later create gets its AHN, no command.
            HardwareAddressHandle c = pd.createAh(peer(1));
            assertEquals(a.ahn(), c.ahn());
            assertEquals(1, mock.counters().hardwareCreates());
            assertEquals(2, mock.counters().kernelCacheHits());
            c.destroy();
            a.destroy();
            assertEquals(0, mock.counters().liveAhs());
            assertEquals(1, mock.counters().hardwareDestroys());
        }
    }

    @Test
    void everyCreateAndDestroyCostsASystemCallApartFromTheDeviceCommand() {
        long systemCall = 20_000_000;
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().systemCallNanos(systemCall).build());
        try (Device d = Device.openFirst(mock); ProtectionDomain pd = d.allocatePd()) {
            HardwareAddressHandle a = pd.createAh(peer(1));
            long t0 = System.nanoTime();
            HardwareAddressHandle hit = pd.createAh(peer(1));
            long hitNanos = System.nanoTime() - t0;
            t0 = System.nanoTime();
            hit.destroy();
            long dropNanos = System.nanoTime() - t0;
            // Lower bounds only: a kernel cache hit and a non-last destroy enter the kernel too.
            assertTrue(hitNanos >= systemCall, () -> "hit took " + hitNanos + " ns");
            assertTrue(dropNanos >= systemCall, () -> "destroy took " + dropNanos + " ns");
            a.destroy();
        }
        assertTrue(assertThrows(IllegalArgumentException.class, () -> MockConfig.builder().systemCallNanos(-1).build())
                .getMessage().startsWith("systemCallNanos: -1"));
        System.setProperty(MockConfig.PROPERTY_PREFIX + "systemCallNanos", "1300");
        try {
            assertEquals(1300, MockConfig.fromSystemProperties().toBuilder().build().systemCallNanos());
        } finally {
            System.clearProperty(MockConfig.PROPERTY_PREFIX + "systemCallNanos");
        }
    }

    @Test
    void ahnsAreUniqueAmongLiveAndReusedAfterDestroy() {
        MockVerbsProvider mock = new MockVerbsProvider();
        try (Device d = Device.openFirst(mock); ProtectionDomain pd = d.allocatePd()) {
            List<HardwareAddressHandle> ahs = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                ahs.add(pd.createAh(peer(i + 1)));
            }
            assertArrayEquals(new int[] {0, 1, 2, 3, 4}, mock.liveAhns(0));
            int freed = ahs.get(2).ahn();
            ahs.remove(2).destroy();
            HardwareAddressHandle again = pd.createAh(peer(99));
            assertEquals(freed, again.ahn());
            ahs.add(again);
            ahs.forEach(HardwareAddressHandle::destroy);
            assertArrayEquals(new int[0], mock.liveAhns(0));
        }
    }

    @Test
    void maxAhGivesEnomem() {
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().maxAh(3).build());
        try (Device d = Device.openFirst(mock); ProtectionDomain pd = d.allocatePd()) {
            List<HardwareAddressHandle> ahs = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                ahs.add(pd.createAh(peer(i + 1)));
            }
            assertEquals(Errno.ENOMEM, assertThrows(VerbsException.class, () -> pd.createAh(peer(9))).errno());
            assertEquals(3, mock.counters().peakLiveAhs());
            ahs.forEach(HardwareAddressHandle::destroy);
        }
    }

    @Test
    void destroyingAnUnknownOrDestroyedAhIsEinvalAtTheProvider() {
        MockVerbsProvider mock = new MockVerbsProvider();
        try (Device d = Device.openFirst(mock); ProtectionDomain pd = d.allocatePd()) {
            HardwareAddressHandle a = pd.createAh(peer(1));
            long raw = a.nativeHandle();
            a.destroy();
            assertEquals(Errno.EINVAL, assertThrows(VerbsException.class, () -> mock.destroyAh(raw)).errno());
            assertEquals(Errno.EINVAL, assertThrows(VerbsException.class, () -> mock.destroyAh(12345)).errno());
            // The owning layer never lets a second destroy reach the provider.
            long calls = mock.counters().destroyCalls();
            assertThrows(IllegalStateException.class, a::destroy);
            assertEquals(calls, mock.counters().destroyCalls());
        }
    }

    @Test
    void pdWithAhsCannotBeDeallocated() {
        MockVerbsProvider mock = new MockVerbsProvider();
        try (Device d = Device.openFirst(mock)) {
            ProtectionDomain pd = d.allocatePd();
            HardwareAddressHandle a = pd.createAh(peer(1));
            assertEquals(Errno.EBUSY, assertThrows(VerbsException.class, pd::close).errno());
            a.destroy();
            pd.close();
            assertThrows(IllegalStateException.class, () -> pd.createAh(peer(1)));
        }
    }

    @Test
    void deviceCloseDestroysChildrenFirst() {
        MockVerbsProvider mock = new MockVerbsProvider();
        Device d = Device.openFirst(mock);
        ProtectionDomain pd = d.allocatePd();
        HardwareAddressHandle a = pd.createAh(peer(1));
        d.close();
        assertTrue(a.isDestroyed());
        assertTrue(pd.isClosed());
        assertEquals(0, mock.counters().liveAhs());
        assertThrows(IllegalStateException.class, d::allocatePd);
    }

    @Test
    void injectedFaultsFailTheNextCreatesAndDestroys() {
        MockVerbsProvider mock = new MockVerbsProvider();
        try (Device d = Device.openFirst(mock); ProtectionDomain pd = d.allocatePd()) {
            mock.failNextCreates(2, Errno.ETIME);
            assertEquals(Errno.ETIME, assertThrows(VerbsException.class, () -> pd.createAh(peer(1))).errno());
            assertEquals(Errno.ETIME, assertThrows(VerbsException.class, () -> pd.createAh(peer(1))).errno());
            HardwareAddressHandle a = pd.createAh(peer(1));
            mock.failNextDestroys(1, Errno.EIO);
            assertEquals(Errno.EIO, assertThrows(VerbsException.class, a::destroy).errno());
            assertEquals(1, mock.counters().liveAhs(), "a failed destroy leaves the AH allocated");
            a.destroy();
            assertEquals(3, mock.counters().injectedFailures());
            assertEquals(0, mock.counters().liveAhs());
        }
    }

    @Test
    void randomFaultsAreReproducibleFromTheSeed() {
        assertEquals(failurePattern(42), failurePattern(42));
        assertNotEquals(failurePattern(42), failurePattern(43));
    }

    private static List<Boolean> failurePattern(long seed) {
        MockVerbsProvider mock = new MockVerbsProvider(
                MockConfig.builder().failureProbability(0.5).randomFailureErrno(Errno.ENODEV).seed(seed).build());
        List<Boolean> pattern = new ArrayList<>();
        try (Device d = Device.openFirst(mock); ProtectionDomain pd = d.allocatePd()) {
            for (int i = 0; i < 64; i++) {
                try {
                    pd.createAh(peer(i + 1)).destroy();
                    pattern.add(true);
                } catch (VerbsException e) {
                    assertEquals(Errno.ENODEV, e.errno());
                    pattern.add(false);
                }
            }
        }
        return pattern;
    }

    @Test
    void perCallRandomFaultsDrawEachErrnoFromTheSetAndLeaveTheDeviceTableAlone() {
        List<Errno> errnos = List.of(Errno.ENOMEM, Errno.EINVAL, Errno.ETIME, Errno.ENODEV, Errno.EAGAIN);
        MockVerbsProvider mock = new MockVerbsProvider();
        try (Device d = Device.openFirst(mock); ProtectionDomain pd = d.allocatePd()) {
            mock.injectRandomFaults(new RandomFaults(0.5, errnos, 0.5, List.of(Errno.EIO, Errno.EBUSY), 7));
            java.util.EnumMap<Errno, Integer> createFailures = new java.util.EnumMap<>(Errno.class);
            java.util.EnumMap<Errno, Integer> destroyFailures = new java.util.EnumMap<>(Errno.class);
            int creates = 2000;
            for (int i = 0; i < creates; i++) {
                HardwareAddressHandle ah;
                try {
                    ah = pd.createAh(peer(1));
                } catch (VerbsException e) {
                    createFailures.merge(e.errno(), 1, Integer::sum);
                    assertEquals(0, mock.counters().liveAhs(), "a failed create leaves nothing behind");
                    continue;
                }
                for (;;) {
                    try {
                        ah.destroy();
                        break;
                    } catch (VerbsException e) {
                        destroyFailures.merge(e.errno(), 1, Integer::sum);
                        assertEquals(1, mock.counters().liveAhs(), "a failed destroy keeps the AH");
                    }
                }
            }
            assertEquals(java.util.Set.copyOf(errnos), createFailures.keySet(), "every errno of the set was drawn");
            assertEquals(java.util.Set.of(Errno.EIO, Errno.EBUSY), destroyFailures.keySet());
            int failed = createFailures.values().stream().mapToInt(Integer::intValue).sum();
            assertTrue(failed > creates * 0.4 && failed < creates * 0.6, failed + " of " + creates);
            MockCounters m = mock.counters();
            int destroyFailed = destroyFailures.values().stream().mapToInt(Integer::intValue).sum();
            assertEquals(failed + destroyFailed, m.injectedFailures());
            assertEquals(m.hardwareCreates(), m.hardwareDestroys());
            assertEquals(m.hardwareDestroys() + destroyFailed, m.destroyCalls());

            mock.injectRandomFaults(RandomFaults.NONE);
            for (int i = 0; i < 100; i++) {
                pd.createAh(peer(1)).destroy();
            }
        }
    }

    @Test
    void randomFaultsRejectProbabilitiesWithoutErrnosOrOutOfRange() {
        assertTrue(assertThrows(IllegalArgumentException.class,
                () -> new RandomFaults(0.1, List.of(), 0, List.of(), 1)).getMessage().startsWith("createProbability: 0.1"));
        assertTrue(assertThrows(IllegalArgumentException.class,
                () -> new RandomFaults(0, List.of(), 2, List.of(Errno.EIO), 1)).getMessage().startsWith("destroyProbability: 2"));
        assertThrows(NullPointerException.class, () -> new MockVerbsProvider().injectRandomFaults(null));
    }

    @Test
    void roceModeKeysByEveryFieldAndHasNoAhn() {
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().efa(false).gidTableLength(2)
                .duplicatePolicy(DuplicatePolicy.STRICT).build());
        try (Device d = Device.openFirst(mock); ProtectionDomain pd = d.allocatePd()) {
            assertEquals("roce_0", d.name());
            HardwareAddressHandle a = pd.createAh(peer(1));
            HardwareAddressHandle b = pd.createAh(peer(1).toBuilder().hopLimit(1).build());
            assertEquals(-1, a.ahn());
            assertEquals(Errno.EINVAL, assertThrows(VerbsException.class, () -> pd.createAh(peer(1))).errno());
            a.destroy();
            b.destroy();
        }
    }

    @Test
    void aNonGlobalRoceAhIsRefusedLikeAKernel() {
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().efa(false).gidTableLength(2).build());
        try (Device d = Device.openFirst(mock); ProtectionDomain pd = d.allocatePd()) {
            // RoCE frames are built from the GRH: the kernel answers EINVAL without one (rxe0 does).
            AddressHandleAttributes lidRouted = AddressHandleAttributes.builder().dlid(7).sgidIndex(9).build();
            assertThrows(IllegalArgumentException.class, () -> d.validate(lidRouted));
            long context = mock.openDevice("roce_0");
            long rawPd = mock.allocatePd(context);
            assertEquals(Errno.EINVAL, assertThrows(VerbsException.class, () -> mock.createAh(rawPd, lidRouted)).errno());
            mock.closeDevice(context);
        }
    }

    @Test
    void deviceValidationRejectsBeforeTheProvider() {
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().gidTableLength(2).build());
        try (Device d = Device.openFirst(mock); ProtectionDomain pd = d.allocatePd()) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> pd.createAh(peer(1).toBuilder().portNum(2).build()));
            assertTrue(e.getMessage().startsWith("port_num: 2 is out of range; valid 1..1"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> pd.createAh(peer(1).toBuilder().sgidIndex(2).build()));
            assertTrue(e.getMessage().startsWith("sgid_index: 2 is out of range; valid 0..1"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class,
                    () -> pd.createAh(AddressHandleAttributes.builder().dlid(5).build()));
            assertTrue(e.getMessage().startsWith("is_global"), e.getMessage());
            assertEquals(0, mock.counters().createCalls());
        }
    }

    @Test
    void configRejectsOutOfRangeValues() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> MockConfig.builder().maxAh(70000).build());
        assertTrue(e.getMessage().startsWith("maxAh: 70000"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> MockConfig.builder().failureProbability(1.5).build());
        assertEquals(DuplicatePolicy.KERNEL_CACHED, DuplicatePolicy.parse("Kernel-Cached"));
        assertThrows(IllegalArgumentException.class, () -> DuplicatePolicy.parse("lenient"));
    }

    @Test
    void theEfaDoubleHasTheMocksDefaultMaxAh() throws java.io.IOException {
        // One max_ah whether a test runs on the mock or the EFA double (issue 34): the double's default
        // is stated beside the mock's; this holds them equal.
        String verbs = java.nio.file.Files.readString(java.nio.file.Path.of("src/test/native/efa-double/verbs.c"));
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("#define DEFAULT_MAX_AH (\\d+)").matcher(verbs);
        assertTrue(m.find(), "no #define DEFAULT_MAX_AH in the double's verbs.c");
        assertEquals(MockConfig.DEFAULT_MAX_AH, Integer.parseInt(m.group(1)));
        assertTrue(verbs.contains("env_int(\"EFA_DOUBLE_MAX_AH\", DEFAULT_MAX_AH)"), "the double's max_ah default");
        assertEquals(MockConfig.DEFAULT_MAX_AH, MockConfig.defaults().maxAh());
    }
}
