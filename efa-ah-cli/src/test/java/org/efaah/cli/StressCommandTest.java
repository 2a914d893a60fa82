package org.efaah.cli;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Issue 29 item 7: {@code stress --provider auto|native|mock}, the option and settings order of
 * the other commands. Faults can be injected only into the mock: on another provider a fault or
 * mock setting given is a usage error, before any provider opens.
 */
class StressCommandTest {

    @Test
    void theMockRunsStrictWithFaultsAsBefore() {
        Cli c = Cli.run("stress", "--provider", "mock", "-t", "2", "--duration", "0.5", "--fault-probability", "0.05")
                .expect(0);
        assertTrue(c.out().contains("(mock, strict)") && c.out().contains("violations: 0"), c::toString);
        Cli.run("stress", "--provider", "nonsense").expect(2).oneLine("provider: 'nonsense' is unknown");
    }

    @Test
    void faultsOrMockSettingsOnAnotherProviderAreUsageErrors() {
        Cli.run("stress", "--provider", "native", "--fault-probability", "0.1").expect(2)
                .oneLine("--fault-probability: 0.1", "only on the mock", "--provider native");
        Cli.run("stress", "--provider", "native", "--create-latency-us", "5").expect(2)
                .oneLine("--create-latency-us", "only on the mock");
        // The provider from the environment, in the one settings order, and named with its source.
        Cli.run(Map.of("EFA_AH_PROVIDER", "native"), "stress", "--fault-probability", "0.1").expect(2)
                .oneLine("--fault-probability: 0.1", "$EFA_AH_PROVIDER=native");
        // The option wins over the environment.
        Cli.run(Map.of("EFA_AH_PROVIDER", "native"), "stress", "--provider", "mock", "--fault-probability", "0.1",
                "-t", "1", "--duration", "0.2").expect(0);
    }

    @Test
    void helpSaysWhereFaultsCanBeInjectedAndListsTheProviderSettingOnly() {
        String help = Cli.run("stress", "--help").expect(0).out();
        assertTrue(help.contains("--provider=auto|native|mock") && help.contains("EFA_AH_PROVIDER"), help);
        assertTrue(help.replaceAll("\\s+", " ").contains("Verbs provider (default: auto;"), help);
        assertTrue(help.replaceAll("\\s+", " ").contains("faults are injected only on the mock"), help);
        assertFalse(help.contains("--behaviour") || help.contains("EFA_AH_MOCK_BEHAVIOUR"), help);
    }
}
