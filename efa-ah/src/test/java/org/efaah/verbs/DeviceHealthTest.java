package org.efaah.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.efaah.health.HealthCheck;
import org.efaah.health.HealthReport;
import org.efaah.health.HealthStatus;
import org.efaah.health.HealthThresholds;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;

/** Attack round, item 3: {@link Device#health}'s refusals and its report on a closed device, as its Javadoc says. */
class DeviceHealthTest {

    @Test
    void nullThresholdsAreRefusedAndAClosedDeviceIsOneDownCheck() {
        Device device = Device.openFirst(new MockVerbsProvider());
        NullPointerException npe = assertThrows(NullPointerException.class, () -> device.health(null));
        assertEquals("thresholds", npe.getMessage());
        assertEquals(HealthStatus.UP, device.health(HealthThresholds.DEFAULTS).status());
        device.close();
        HealthReport closed = device.health(HealthThresholds.DEFAULTS);
        assertEquals(HealthStatus.DOWN, closed.status());
        List<HealthCheck> checks = closed.checks();
        assertEquals(1, checks.size(), checks.toString());
        assertEquals("device_open", checks.get(0).name());
        assertEquals(device.name(), checks.get(0).subject());
    }
}
