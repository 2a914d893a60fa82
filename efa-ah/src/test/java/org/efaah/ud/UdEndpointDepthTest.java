package org.efaah.ud;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.concurrent.atomic.AtomicInteger;
import org.efaah.cache.AddressHandleCache;
import org.efaah.verbs.DeviceAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.ForwardingVerbsProvider;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;

/**
 * Issue 29 item 5: queue depths are checked against the device before anything is created, and
 * the refusal names the limit (a device's {@code max_qp_wr} of 512 here), not a bare EINVAL from
 * {@code ibv_create_qp}.
 */
class UdEndpointDepthTest {

    /** The mock's RoCE device with {@code max_qp_wr} 512, counting CQ creates. */
    static final class SmallQueues extends ForwardingVerbsProvider {
        final AtomicInteger cqs = new AtomicInteger();

        SmallQueues() {
            super(new MockVerbsProvider(MockConfig.builder().efa(false).build()));
        }

        @Override
        public DeviceAttributes queryDevice(long context) {
            DeviceAttributes a = super.queryDevice(context);
            DeviceAttributes.Limits l = a.limits();
            return new DeviceAttributes(a.name(), a.vendorId(), a.vendorPartId(), a.maxAh(), a.maxPd(), a.portCount(),
                    a.efa(), a.transportType(), a.fwVer(), a.nodeGuid(), a.sysImageGuid(), a.hwVer(),
                    new DeviceAttributes.Limits(l.maxMrSize(), l.pageSizeCap(), l.maxQp(), 512, l.deviceCapFlags(),
                            l.maxSge(), l.maxSgeRd(), l.maxCq(), l.maxCqe(), l.maxMr(), l.maxMw(), l.maxFmr(), l.maxMapPerFmr(),
                            l.maxSrq(), l.maxSrqWr(), l.maxSrqSge()), a.ibLimits());
        }

        @Override
        public long createCq(long context, int entries) {
            cqs.incrementAndGet();
            return super.createCq(context, entries);
        }

        @Override
        public long createCq(long context, int entries, long channel) {
            cqs.incrementAndGet();
            return super.createCq(context, entries, channel);
        }
    }

    @Test
    void depthsAboveTheDevicesLimitAreRefusedBeforeAnyCreateNamingTheLimit() {
        SmallQueues provider = new SmallQueues();
        try (Device device = Device.openFirst(provider);
             ProtectionDomain pd = device.allocatePd();
             AddressHandleCache cache = AddressHandleCache.create()) {
            IllegalArgumentException send = assertThrows(IllegalArgumentException.class,
                    () -> UdEndpoint.open(pd, cache, UdEndpoint.Options.defaults().withDepths(1024, 256)));
            assertEquals("sendDepth: 1024 is out of range; valid 1..512 (" + device.name() + "'s max_qp_wr)",
                    send.getMessage());
            IllegalArgumentException receive = assertThrows(IllegalArgumentException.class,
                    () -> UdEndpoint.open(pd, cache, UdEndpoint.Options.defaults().withDepths(64, 513)));
            assertEquals("receiveDepth: 513 is out of range; valid 1..512 (" + device.name() + "'s max_qp_wr)",
                    receive.getMessage());
            assertEquals(0, provider.cqs.get(), "nothing was created");
            UdEndpoint.open(pd, cache, UdEndpoint.Options.defaults().withDepths(512, 512)).close();
        }
    }
}
