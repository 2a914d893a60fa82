package org.efaah.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;

/**
 * Issue 11 cases 6 (device parts), 7 and 8 on the mock: the mock refuses what the kernel refuses,
 * sgid_index defaults to the right RoCE v2 GID, and failures say where they happened.
 */
class DeviceFaultsTest {
    /** A RoCE port as rxe fills it: a v1 and a v2 entry per address, empty slots between. */
    static final List<Gid> ROCE_GIDS = List.of(Gid.parse("fe80::1"), Gid.parse("fe80::1"),
            Gid.parse("::ffff:10.0.0.1"), Gid.parse("::ffff:10.0.0.1"), Gid.parse("::"),
            Gid.parse("2001:db8::1"), Gid.parse("2001:db8::1"));
    static final List<GidType> ROCE_TYPES = List.of(GidType.ROCE_V1, GidType.ROCE_V2, GidType.ROCE_V1,
            GidType.ROCE_V2, GidType.ROCE_V2, GidType.ROCE_V1, GidType.ROCE_V2);

    private static MockVerbsProvider roce() {
        return new MockVerbsProvider(MockConfig.builder().efa(false).gidTableLength(ROCE_GIDS.size())
                .gids(ROCE_GIDS).gidTypes(ROCE_TYPES).build());
    }

    @Test
    void theMockRefusesPdNumberMaxPdPlusOneWithEnomem() {
        MockVerbsProvider mock = new MockVerbsProvider();
        try (Device d = Device.openFirst(mock)) {
            int maxPd = d.attributes().maxPd();
            assertEquals(256, maxPd);
            List<ProtectionDomain> pds = new ArrayList<>();
            for (int i = 0; i < maxPd; i++) {
                pds.add(d.allocatePd());
            }
            VerbsException e = assertThrows(VerbsException.class, d::allocatePd);
            assertEquals(Errno.ENOMEM, e.errno());
            assertTrue(e.getMessage().contains("device efa_0") && e.getMessage().contains("max_pd 256"), e.getMessage());
            pds.remove(0).close();
            pds.add(d.allocatePd()); // one freed, one more fits
        }
    }

    @Test
    void aRoceAhWithoutGrhIsRefusedInJavaAndByTheMock() {
        MockVerbsProvider mock = roce();
        AddressHandleAttributes lidRouted = AddressHandleAttributes.builder().dlid(1).isGlobal(false).build();
        try (Device d = Device.openFirst(mock); ProtectionDomain pd = d.allocatePd()) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> pd.createAh(lidRouted));
            assertTrue(e.getMessage().startsWith("is_global: 0;") && e.getMessage().contains("RoCE"), e.getMessage());
            assertFalse(e.getMessage().contains("\n"));
        }
        long context = mock.openDevice("roce_0");
        long pd = mock.allocatePd(context);
        assertEquals(Errno.EINVAL, assertThrows(VerbsException.class, () -> mock.createAh(pd, lidRouted)).errno());
        mock.closeDevice(context);
    }

    @Test
    void anEmptyGidSlotGivesEnodata() {
        MockVerbsProvider mock = roce();
        try (Device d = Device.openFirst(mock); ProtectionDomain pd = d.allocatePd()) {
            assertTrue(d.gid(1, 4).isZero());
            assertEquals(GidType.ROCE_V2, mock.queryGidType(0x1000, 1, 3));
            VerbsException e = assertThrows(VerbsException.class, () -> pd.createAh(
                    AddressHandleAttributes.builder().dgid("::ffff:10.0.0.5").sgidIndex(4).build()));
            assertEquals(Errno.ENODATA, e.errno());
            assertTrue(e.getMessage().contains("hint: the GID slot at sgid_index 4 is empty"), e.getMessage());
        }
    }

    @Test
    void sgidIndexNotGivenOnRocePicksTheRoceV2GidOfTheDestinationsFamily() {
        MockVerbsProvider mock = roce();
        try (Device d = Device.openFirst(mock); ProtectionDomain pd = d.allocatePd();
             AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.PARANOID).build()) {
            AddressHandleAttributes v4 = AddressHandleAttributes.forGid("::ffff:10.0.0.5");
            assertFalse(v4.hasSgidIndex());
            assertEquals(3, d.resolve(v4).sgidIndex());
            assertTrue(d.resolve(v4).hasSgidIndex());
            assertEquals(6, d.resolve(AddressHandleAttributes.forGid("2001:db8::5")).sgidIndex(),
                    "a global peer: the global v2 GID, not the link-local one at 1 (RoceSourceGidTest)");
            AddressHandleAttributes given = AddressHandleAttributes.builder().dgid("::ffff:10.0.0.5").sgidIndex(2).build();
            assertEquals(given, d.resolve(given));
            // The cache keys on the resolved attributes: unset and the index it resolves to share one AH.
            try (AddressHandle a = cache.acquire(pd, v4);
                 AddressHandle b = cache.acquire(pd, v4.toBuilder().sgidIndex(3).build())) {
                assertEquals(a.nativeHandle(), b.nativeHandle());
                assertEquals(3, a.hardware().attributes().sgidIndex());
                assertEquals(1, mock.counters().hardwareCreates());
            }
        }
    }

    @Test
    void theGidTableIsReadOnceAndAgainAfterAGidChange() throws Exception {
        MockVerbsProvider mock = roce();
        CallRecorder recorder = new CallRecorder(mock);
        try (Device d = Device.openFirst(recorder.provider())) {
            java.util.concurrent.BlockingQueue<DeviceEvent> events = new java.util.concurrent.LinkedBlockingQueue<>();
            d.addEventListener(events::add);
            AddressHandleAttributes v4 = AddressHandleAttributes.forGid("::ffff:10.0.0.5");
            recorder.clear();
            assertEquals(3, d.resolve(v4).sgidIndex());
            assertTrue(recorder.calls().contains("queryGidType"), recorder.calls().toString());
            recorder.clear();
            assertEquals(3, d.resolve(AddressHandleAttributes.forGid("::ffff:10.0.0.6")).sgidIndex());
            assertFalse(recorder.calls().contains("queryGidType"), "read again without a change");
            mock.raiseEvent("roce_0", DeviceEvent.Kind.GID_CHANGE, 1);
            assertEquals(DeviceEvent.Kind.GID_CHANGE, events.poll(10, java.util.concurrent.TimeUnit.SECONDS).kind());
            recorder.clear();
            assertEquals(3, d.resolve(v4).sgidIndex());
            assertTrue(recorder.calls().contains("queryGidType"), "read again after GID_CHANGE");
        }
    }

    @Test
    void sgidIndexNotGivenFailsClearlyWithoutARoceV2GidOfThatFamily() {
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().efa(false).gidTableLength(3)
                .gids(List.of(Gid.parse("fe80::1"), Gid.parse("::ffff:10.0.0.1"), Gid.parse("fe80::1")))
                .gidTypes(List.of(GidType.ROCE_V1, GidType.ROCE_V1, GidType.ROCE_V2)).build());
        try (Device d = Device.openFirst(mock)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> d.resolve(AddressHandleAttributes.forGid("::ffff:10.0.0.5")));
            assertTrue(e.getMessage().contains("roce_0 port 1") && e.getMessage().contains("::ffff:10.0.0.5")
                    && e.getMessage().contains("no RoCE v2 IPv4 GID"), e.getMessage());
            assertEquals(2, d.resolve(AddressHandleAttributes.forGid("fe80::7")).sgidIndex());
        }
    }

    /**
     * Issue 28 (one "unsupported" signal): a provider that cannot tell GID types (a libibverbs
     * without ibv_query_gid_ex) answers EOPNOTSUPP; resolve then says to give sgid_index instead
     * of letting the provider's exception escape, and a given sgid_index still works.
     */
    @Test
    void sgidIndexNotGivenOnAProviderWithoutGidTypesAsksForOne() {
        MockVerbsProvider mock = roce();
        mock.lackQueryGidEx(true);
        try (Device d = Device.openFirst(mock)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> d.resolve(AddressHandleAttributes.forGid("::ffff:10.0.0.5")));
            assertTrue(e.getMessage().startsWith("sgid_index: not given") && e.getMessage().contains("roce_0 port 1")
                    && e.getMessage().contains("cannot tell GID types"), e.getMessage());
            VerbsException type = assertThrows(VerbsException.class, () -> d.gidType(1, 3));
            assertEquals(Errno.EOPNOTSUPP, type.errno());
            AddressHandleAttributes given = AddressHandleAttributes.forGid("::ffff:10.0.0.5").withSgidIndex(3);
            assertEquals(given, d.resolve(given));
            mock.lackQueryGidEx(false);
            assertEquals(3, d.resolve(AddressHandleAttributes.forGid("::ffff:10.0.0.5")).sgidIndex(),
                    "the refusal is not remembered");
        }
    }

    @Test
    void onEfaSgidIndexNotGivenIsZero() {
        try (Device d = Device.openFirst(new MockVerbsProvider(MockConfig.builder().gidTableLength(4).build()))) {
            AddressHandleAttributes resolved = d.resolve(AddressHandleAttributes.forGid("fe80::5"));
            assertEquals(0, resolved.sgidIndex());
            assertTrue(resolved.hasSgidIndex());
        }
    }

    @Test
    void aFailedCreateNamesDevicePdLocalAndRemoteGidWithAHintPerErrno() {
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().efa(false).gidTableLength(ROCE_GIDS.size())
                .gids(ROCE_GIDS).gidTypes(ROCE_TYPES).maxAh(2).build());
        try (Device d = Device.openFirst(mock); ProtectionDomain pd = d.allocatePd()) {
            AddressHandleAttributes far = AddressHandleAttributes.forGid("::ffff:10.99.0.5");
            mock.failNextCreates(1, Errno.EINVAL);
            VerbsException e = assertThrows(VerbsException.class, () -> pd.createAh(far));
            assertEquals(Errno.EINVAL, e.errno());
            assertEquals("ibv_create_ah", e.operation());
            String m = e.getMessage();
            assertTrue(m.startsWith("ibv_create_ah failed: EINVAL (22)"), m);
            assertTrue(m.contains("device roce_0") && m.contains(", PD 0x") && m.contains("local GID ::ffff:10.0.0.1")
                    && m.contains("sgid_index 3") && m.contains("remote GID ::ffff:10.99.0.5")
                    && m.contains("hint: the destination is not reachable from this GID"), m);
            assertFalse(m.contains("\n"));

            mock.failNextCreates(1, Errno.ETIMEDOUT);
            m = assertThrows(VerbsException.class, () -> pd.createAh(far)).getMessage();
            assertTrue(m.contains("hint: no neighbour entry for the destination"), m);

            HardwareAddressHandle one = pd.createAh(AddressHandleAttributes.forGid("::ffff:10.0.0.7"));
            HardwareAddressHandle two = pd.createAh(AddressHandleAttributes.forGid("::ffff:10.0.0.8"));
            e = assertThrows(VerbsException.class, () -> pd.createAh(far));
            assertEquals(Errno.ENOMEM, e.errno());
            assertTrue(e.getMessage().contains("hint: max_ah 2 reached? 2 AH(s) live on roce_0"), e.getMessage());
            one.destroy();
            two.destroy();
        }
    }
}
