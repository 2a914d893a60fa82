package org.efaah.verbs;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.efaah.health.HealthCheck;
import org.efaah.health.HealthReport;
import org.efaah.health.HealthStatus;
import org.efaah.health.HealthThresholds;

/**
 * The health of one open {@link Device}, asked of the device now: open and not fatal; every port
 * active, queried with {@code ibv_query_port(3)} rather than remembered from events (EFA raises
 * no port events); the AHs and PDs made through this object against {@code max_ah} and
 * {@code max_pd}; its reader of asynchronous events, DEGRADED with the cause while its reads
 * fail (the RoCE network reader's health is its subscription's, {@code org.efaah.roce}). Checks
 * that cannot be asked of a closed or fatal device are left out. Never throws for a failing
 * device: a failed query is a DOWN check with its errno. Thread-safe.
 */
public final class DeviceHealth {
    private DeviceHealth() {
    }

    /**
     * Checks {@code device} against {@code thresholds}.
     *
     * @param device     the device
     * @param thresholds where the figures turn DEGRADED
     * @return the report, one check per figure
     * @throws NullPointerException if an argument is null
     */
    public static HealthReport check(Device device, HealthThresholds thresholds) {
        Objects.requireNonNull(device, "device");
        Objects.requireNonNull(thresholds, "thresholds");
        String name = device.name();
        List<HealthCheck> checks = new ArrayList<>();
        if (device.isClosed()) {
            checks.add(new HealthCheck("device_open", name, HealthStatus.DOWN, 0, -1, "device is closed"));
            return HealthReport.of(checks);
        }
        if (device.isFatal()) {
            checks.add(new HealthCheck("device_fatal", name, HealthStatus.DOWN, 1, -1,
                    "device reported IBV_EVENT_DEVICE_FATAL: it makes no AH any more; close and reopen it"));
            return HealthReport.of(checks);
        }
        checks.add(new HealthCheck("device_fatal", name, HealthStatus.UP, 0, -1, "no IBV_EVENT_DEVICE_FATAL"));
        DeviceAttributes a = device.attributes();
        for (int port = 1; port <= a.portCount(); port++) {
            checks.add(port(device, port));
        }
        checks.addAll(device.readerHealth());
        checks.add(HealthThresholds.usage("ah_usage", name, "live AHs", device.liveAhCount(), a.maxAh(), "max_ah",
                thresholds.ahUsage()));
        checks.add(HealthThresholds.usage("pd_usage", name, "PDs", device.livePdCount(), a.maxPd(), "max_pd",
                thresholds.pdUsage()));
        return HealthReport.of(checks);
    }

    private static HealthCheck port(Device device, int port) {
        String subject = device.name() + " port " + port;
        try {
            PortAttributes p = device.port(port);
            boolean active = p.state() == PortAttributes.STATE_ACTIVE;
            return new HealthCheck("port_state", subject, active ? HealthStatus.UP : HealthStatus.DOWN, p.state(),
                    PortAttributes.STATE_ACTIVE, "PORT_" + p.stateName() + " (" + p.state() + ")"
                    + (active ? "" : "; AHs need PORT_ACTIVE (4)"));
        } catch (VerbsException e) {
            return new HealthCheck("port_state", subject, HealthStatus.DOWN, -1, PortAttributes.STATE_ACTIVE,
                    "ibv_query_port failed: " + e.getMessage());
        } catch (IllegalStateException e) {
            return new HealthCheck("port_state", subject, HealthStatus.DOWN, -1, PortAttributes.STATE_ACTIVE,
                    e.getMessage());
        }
    }
}
