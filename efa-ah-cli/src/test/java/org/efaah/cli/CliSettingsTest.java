package org.efaah.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Issue 12 case 4: one precedence for every setting: option, then -D, then environment, then default. */
class CliSettingsTest {
    private static final String BEHAVIOUR = "efaah.mock.behaviour";
    private static final String[] LEGACY_DEMO = {"demo", "--provider", "mock", "-t", "4", "-r", "10", "--no-cache",
            "--create-latency-us", "0"};

    @AfterEach
    void clear() {
        System.clearProperty(BEHAVIOUR);
        System.clearProperty("efaah.mock.createLatencyNanos");
    }

    private static long duplicatesMade(Map<String, String> env, String... extra) {
        String[] args = java.util.Arrays.copyOf(LEGACY_DEMO, LEGACY_DEMO.length + extra.length);
        System.arraycopy(extra, 0, args, LEGACY_DEMO.length, extra.length);
        // A strict device refuses the duplicates: exit 1 (issue 17), a legacy one makes them: exit 0.
        Cli c = Cli.run(env, args);
        org.junit.jupiter.api.Assertions.assertTrue(c.exit() == 0 || c.exit() == 1, c::toString);
        return c.number("duplicate AHs made");
    }

    @Test
    void aSystemPropertyIsNotOverriddenByTheOptionsDefault() {
        System.setProperty(BEHAVIOUR, "legacy");
        assertEquals(30, duplicatesMade(Map.of()));
    }

    @Test
    void theEnvironmentComesAfterTheProperty() {
        assertEquals(30, duplicatesMade(Map.of("EFA_AH_MOCK_BEHAVIOUR", "legacy")));
        System.setProperty(BEHAVIOUR, "strict");
        assertEquals(0, duplicatesMade(Map.of("EFA_AH_MOCK_BEHAVIOUR", "legacy")));
    }

    @Test
    void theOptionWinsOverPropertyAndEnvironment() {
        System.setProperty(BEHAVIOUR, "legacy");
        assertEquals(0, duplicatesMade(Map.of("EFA_AH_MOCK_BEHAVIOUR", "legacy"), "--behaviour", "strict"));
    }

    @Test
    void helpShowsTheEffectiveDefaultAndTheOrder() {
        System.setProperty(BEHAVIOUR, "legacy");
        Cli c = Cli.run("demo", "--help").expect(0);
        assertTrue(c.out().contains("(default: legacy;"), c::toString);
        assertTrue(c.out().contains("the command-line option, the system") && c.out().contains("$EFA_AH_MOCK_MAX_AH"),
                c::toString);
    }

    @Test
    void thePropertyInNanosecondsBecomesTheOptionInMicroseconds() {
        System.setProperty("efaah.mock.createLatencyNanos", "1500");
        Cli c = Cli.run("demo", "--provider", "mock", "-t", "1", "-r", "1", "-n", "1").expect(0);
        assertTrue(c.out().contains("create 1.5 µs"), c::toString);
    }
}
