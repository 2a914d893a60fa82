package org.efaah.cache;

import static org.efaah.cache.MockFixture.peer;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.efaah.fixture.LogCapture;
import org.efaah.verbs.Device;
import org.efaah.verbs.DeviceEvent;
import org.efaah.verbs.mock.MockConfig;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A device closed on DEVICE_FATAL (rdma link delete, in CacheInvalidationNativeTest on rxe): every
 * later acquire on it is refused naming the device and the event, also the one that finds the
 * cache's table of that PD forgotten and would listen to the device again (which refused the
 * listener saying only "closed" once listeners could no longer be added during a close).
 */
class FatalCloseRefusalTest {

    @ParameterizedTest(name = "efa={0}")
    @ValueSource(booleans = {true, false})
    void acquiresOnADeviceClosedByDeviceFatalNameTheEvent(boolean efa) throws InterruptedException {
        try (MockFixture f = new MockFixture(MockConfig.builder().efa(efa).build());
             LogCapture logs = LogCapture.of(Device.class, AddressHandleCache.class)) {
            f.device.setCloseOnFatal(true);
            f.cache.acquire(f.pd, peer(1)).close();
            f.mock.raiseEvent(f.device.name(), DeviceEvent.Kind.DEVICE_FATAL, 0);
            for (int i = 0; i < 1000 && !f.device.isClosed(); i++) {
                Thread.sleep(10);
            }
            assertTrue(f.device.isClosed(), "closed on DEVICE_FATAL");
            for (int p = 1; p <= 3; p++) {
                int peer = p;
                IllegalStateException e = assertThrows(IllegalStateException.class, () -> f.cache.acquire(f.pd, peer(peer)));
                assertTrue(e.getMessage().contains(f.device.name()) && e.getMessage().contains("DEVICE_FATAL"),
                        e.getMessage());
            }
        }
    }
}
