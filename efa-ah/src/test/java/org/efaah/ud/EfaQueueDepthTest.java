package org.efaah.ud;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.OptionalInt;
import org.efaah.cache.AddressHandleCache;
import org.efaah.verbs.Device;
import org.efaah.verbs.Errno;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.QueuePairType;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;

/**
 * Issue 33, device limits: since rdma-core 63 libefa's {@code efa_check_qp_limits} holds
 * {@code max_send_wr} and {@code max_recv_wr} to what {@code efadv_get_max_sq_depth} and
 * {@code efadv_get_max_rq_depth} compute, which may be below efadv's {@code max_sq_wr} and
 * {@code max_rq_wr}. Where the device reports them the endpoint refuses a deeper queue first,
 * naming that limit; where not (an older libefa, RoCE) {@code max_sq_wr}, {@code max_rq_wr} and
 * {@code max_qp_wr} stay the rule.
 */
class EfaQueueDepthTest {

    private static MockVerbsProvider mock(boolean efa, int sqDepth, int rqDepth) {
        return new MockVerbsProvider(MockConfig.builder().efa(efa).efaMaxDepths(sqDepth, rqDepth).build());
    }

    @Test
    void reportedDepthsBelowTheDevicesWrLimitsBoundTheEndpointAndTheRefusalNamesThem() {
        try (MockVerbsProvider provider = mock(true, 1024, 2048);
             Device device = Device.openFirst(provider);
             ProtectionDomain pd = device.allocatePd();
             AddressHandleCache cache = AddressHandleCache.create()) {
            assertEquals(OptionalInt.of(1024), device.efaMaxSqDepth());
            assertEquals(OptionalInt.of(2048), device.efaMaxRqDepth());
            assertTrue(device.efaAttributes().maxSqWr() > 1024, "max_sq_wr is above the reported depth");
            for (QueuePairType transport : QueuePairType.values()) {
                UdEndpoint.Options options = UdEndpoint.Options.defaults().withTransport(transport);
                IllegalArgumentException send = assertThrows(IllegalArgumentException.class,
                        () -> UdEndpoint.open(pd, cache, options.withDepths(1025, 16)));
                assertEquals("sendDepth: 1025 is out of range; valid 1..1024 (" + device.name()
                        + "'s efadv_get_max_sq_depth)", send.getMessage());
                IllegalArgumentException receive = assertThrows(IllegalArgumentException.class,
                        () -> UdEndpoint.open(pd, cache, options.withDepths(16, 2049)));
                assertEquals("receiveDepth: 2049 is out of range; valid 1..2048 (" + device.name()
                        + "'s efadv_get_max_rq_depth)", receive.getMessage());
                UdEndpoint.open(pd, cache, options.withDepths(1024, 2048)).close();
            }
        }
    }

    /** The mock's device is no kinder than libefa: a QP deeper than the reported depth fails EINVAL. */
    @Test
    void theMockDeviceRefusesAQpDeeperThanItsReportedDepth() {
        try (MockVerbsProvider provider = mock(true, 1024, 2048)) {
            long context = provider.openDevice(provider.deviceNames().get(0));
            try {
                long cq = provider.createCq(context, 16);
                long mockPd = provider.allocatePd(context);
                VerbsException e = assertThrows(VerbsException.class,
                        () -> provider.createUdQp(mockPd, cq, cq, 1025, 16));
                assertEquals(Errno.EINVAL, e.errno());
                provider.destroyQp(provider.createUdQp(mockPd, cq, cq, 1024, 2048).handle());
                provider.deallocatePd(mockPd);
                provider.destroyCq(cq);
            } finally {
                provider.closeDevice(context);
            }
        }
    }

    @Test
    void withoutReportedDepthsTodaysRuleHolds() {
        try (MockVerbsProvider provider = mock(true, 0, 0);
             Device device = Device.openFirst(provider);
             ProtectionDomain pd = device.allocatePd();
             AddressHandleCache cache = AddressHandleCache.create()) {
            assertEquals(OptionalInt.empty(), device.efaMaxSqDepth());
            assertEquals(OptionalInt.empty(), device.efaMaxRqDepth());
            int maxSqWr = device.efaAttributes().maxSqWr();
            int maxRqWr = device.efaAttributes().maxRqWr();
            int maxQpWr = device.attributes().limits().maxQpWr();
            int send = Math.min(maxSqWr, maxQpWr);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> UdEndpoint.open(pd, cache, UdEndpoint.Options.defaults().withDepths(send + 1, 16)));
            assertEquals("sendDepth: " + (send + 1) + " is out of range; valid 1.." + send + " (" + device.name() + "'s "
                    + (maxSqWr < maxQpWr ? "max_sq_wr" : "max_qp_wr") + ")", e.getMessage());
            e = assertThrows(IllegalArgumentException.class,
                    () -> UdEndpoint.open(pd, cache, UdEndpoint.Options.defaults().withDepths(16, maxRqWr + 1)));
            assertEquals("receiveDepth: " + (maxRqWr + 1) + " is out of range; valid 1.." + maxRqWr + " ("
                    + device.name() + "'s max_rq_wr)", e.getMessage());
            UdEndpoint.open(pd, cache, UdEndpoint.Options.defaults().withDepths(send, maxRqWr)).close();
        }
    }

    /** RoCE has no efadv: the depths configured for EFA devices are not asked, max_qp_wr is the rule. */
    @Test
    void aRoceDeviceReportsNoDepthAndKeepsMaxQpWr() {
        try (MockVerbsProvider provider = mock(false, 1024, 2048);
             Device device = Device.openFirst(provider);
             ProtectionDomain pd = device.allocatePd();
             AddressHandleCache cache = AddressHandleCache.create()) {
            assertEquals(OptionalInt.empty(), device.efaMaxSqDepth());
            assertEquals(OptionalInt.empty(), device.efaMaxRqDepth());
            int maxQpWr = device.attributes().limits().maxQpWr();
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> UdEndpoint.open(pd, cache, UdEndpoint.Options.defaults().withDepths(maxQpWr + 1, 16)));
            assertEquals("sendDepth: " + (maxQpWr + 1) + " is out of range; valid 1.." + maxQpWr + " (" + device.name()
                    + "'s max_qp_wr)", e.getMessage());
            UdEndpoint.open(pd, cache, UdEndpoint.Options.defaults().withDepths(2048, 2048)).close();
        }
    }

    @Test
    void mockConfigTakesNoDepthBeyondTheDevice() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> MockConfig.builder().efaMaxDepths(8193, 0).build());
        assertEquals("efaMaxSqDepth: 8193 is out of range; valid 0..8192", e.getMessage());
    }
}
