package org.efaah.ud;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.CallRecorder;
import org.efaah.verbs.Device;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;

/**
 * Issue 11 case 2: a device closed under a live endpoint frees its children in order, and then
 * every child refuses use in Java; nothing reaches the provider with a freed handle.
 */
public class DeviceCloseUnderEndpointTest {

    /** Runs the scenario on {@code device}'s first PD; shared with the native test in the VM. */
    public static void closeDeviceUnderEndpoint(CallRecorder recorder, Device device, int sgidIndex) {
        ProtectionDomain pd = device.allocatePd();
        AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED).build();
        UdEndpoint endpoint = UdEndpoint.open(pd, cache, UdEndpoint.Options.defaults().withSgidIndex(sgidIndex));
        AddressHandle ah = cache.acquire(pd, AddressHandleAttributes.builder().dgid(endpoint.address().gid())
                .sgidIndex(sgidIndex).build());
        endpoint.send(ah, endpoint.address(), ByteBuffer.wrap(new byte[] {1, 2, 3}));

        device.close();
        assertTrue(device.isClosed());
        assertTrue(pd.isClosed(), "the PD was freed with the context");
        recorder.clear();

        IllegalStateException send = assertThrows(IllegalStateException.class,
                () -> endpoint.send(ah, endpoint.address(), ByteBuffer.wrap(new byte[] {4})));
        assertTrue(send.getMessage().contains("closed") || send.getMessage().contains("destroyed"), send.getMessage());
        IllegalStateException receive = assertThrows(IllegalStateException.class,
                () -> endpoint.receive(10, TimeUnit.MILLISECONDS));
        assertTrue(receive.getMessage().contains("closed"), receive.getMessage());
        assertThrows(IllegalStateException.class, () -> pd.createAh(AddressHandleAttributes.forGid("fe80::9")));
        assertThrows(IllegalStateException.class, device::allocatePd);
        endpoint.close();
        ah.close();
        cache.close();
        pd.close();
        device.close();
        assertEquals(List.of(), recorder.calls(), "provider calls after the device was closed");
    }

    @Test
    void closingTheDeviceUnderALiveEndpointFreesEverythingOnceAndRefusesLaterUse() {
        for (boolean efa : new boolean[] {true, false}) {
            MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().efa(efa).build());
            CallRecorder recorder = new CallRecorder(mock);
            Device device = Device.openFirst(recorder.provider());
            recorder.clear();
            closeDeviceUnderEndpoint(recorder, device, 0);
            assertEquals(0, mock.counters().liveAhs(), "the mock freed the context's AHs");
        }
    }
}
