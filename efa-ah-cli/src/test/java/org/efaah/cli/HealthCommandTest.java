package org.efaah.cli;

import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Issue 18: {@code health} without {@code --jmx} checks this host's devices; its help states the exit codes. */
class HealthCommandTest {

    @Test
    void theHostsMockDevicesAreUp() {
        Cli r = Cli.run("health", "--provider", "mock", "--mock-devices", "2").expect(0);
        assertTrue(r.out().contains("device efa_0: UP") && r.out().contains("device efa_1: UP"), r::toString);
        assertTrue(r.out().contains("UP       port_state       efa_0 port 1: PORT_ACTIVE (4)"), r::toString);
        assertTrue(r.out().contains("status: UP"), r::toString);
    }

    /** Issue 34 item 4: one DOWN NIC of 32 (a p5) is DEGRADED for the host; all DOWN is DOWN. */
    @Test
    void oneDownDeviceOf32IsDegradedAndAllDownIsDown() {
        org.efaah.verbs.mock.MockVerbsProvider mock = new org.efaah.verbs.mock.MockVerbsProvider(
                org.efaah.verbs.mock.MockConfig.builder().deviceCount(32).build());
        Cli up = Cli.runOn(mock, "health", "--provider", "mock").expect(0);
        assertTrue(up.out().contains("devices DOWN: 0 of 32") && up.out().contains("status: UP"), up::toString);
        mock.setPortState("efa_5", 1);
        Cli one = Cli.runOn(mock, "health", "--provider", "mock").expect(0);
        assertTrue(one.out().contains("device efa_5: DOWN") && one.out().contains("devices DOWN: 1 of 32")
                && one.out().contains("status: DEGRADED"), one::toString);
        Cli.runOn(mock, "health", "--provider", "mock", "--fail-on", "DEGRADED").expect(1);
        for (String d : mock.deviceNames()) {
            mock.setPortState(d, 1);
        }
        Cli all = Cli.runOn(mock, "health", "--provider", "mock", "--json").expect(1);
        assertTrue(all.out().contains("\"devices_down\":32") && all.out().contains("\"status\":\"DOWN\""), all::toString);
    }

    @Test
    void autoFallingBackToTheMockIsDown() {
        org.junit.jupiter.api.Assumptions.assumeFalse(org.efaah.verbs.VerbsProviders.factory("native").isAvailable(),
                "the native provider is available here");
        Cli r = Cli.run("health", "--provider", "auto").expect(1);
        assertTrue(r.out().contains("DOWN     provider") && r.out().contains("fell back to the mock"), r::toString);
    }

    @Test
    void anUnknownDeviceFailsOnOneLine() {
        // A usage error, as in every command (issue 27): 1 would read as "unhealthy" to a probe.
        Cli.run("health", "--provider", "mock", "-d", "efa_7").expect(2)
                .oneLine("--ib-dev: 'efa_7' is not a device of the mock provider; present: efa_0");
    }

    @Test
    void failOnUpIsAUsageError() {
        Cli.run("health", "--provider", "mock", "--fail-on", "UP").expect(2).oneLine("--fail-on", "DEGRADED, DOWN");
    }

    @Test
    void helpStatesTheExitCodes() {
        Cli r = Cli.run("health", "--help").expect(0);
        assertTrue(r.out().contains("--jmx=HOST:PORT") && r.out().contains("Kubernetes exec probe"), r::toString);
        assertTrue(r.out().contains("1   status at or above --fail-on"), r::toString);
        Cli top = Cli.run("--help").expect(0);
        assertTrue(top.out().contains("health") && top.out().contains("entries"), top::toString);
    }
}
