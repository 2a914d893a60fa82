package org.efaah.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Issue 12 case 5: progress on stderr, JSON for scripts, the build's version everywhere. */
class CliOutputTest {

    @Test
    void longRunsPrintProgressUnlessQuiet() {
        Cli c = Cli.run("stress", "-t", "2", "--duration", "1.5", "--progress-every", "0.3").expect(0);
        assertTrue(c.err().lines().filter(l -> l.contains("stress: ") && l.contains(" operations")).count() >= 2,
                c::toString);
        assertFalse(c.out().contains("operations,"), "progress goes to stderr only:\n" + c);
        c = Cli.run("stress", "-t", "2", "--duration", "1", "--progress-every", "0.2", "--quiet").expect(0);
        assertEquals("", c.err(), c::toString);
        Cli.run("stress", "--progress-every", "0").expect(2).oneLine("--progress-every: 0 s");
    }

    @Test
    void jsonIsOneObjectWithTheResults() {
        Cli c = Cli.run("stress", "-t", "2", "--duration", "0.5", "--json", "--quiet").expect(0);
        String json = c.out().strip();
        assertTrue(json.startsWith("{\"command\":\"stress\"") && json.endsWith("}") && !json.contains("\n"), c::toString);
        assertTrue(json.contains("\"passed\":true") && json.contains("\"violations\":[]"), c::toString);
        c = Cli.run("demo", "--provider", "mock", "-t", "2", "-r", "3", "-n", "100", "--create-latency-us", "0",
                "--json", "--quiet").expect(0);
        assertTrue(c.out().strip().matches("\\{\"command\":\"demo\".*\"hardware_creates\":3,.*"
                + "\"hit_latency\":\\{\"count\":200,\"p50_ns\":\\d+.*}"), c::toString);
        c = Cli.run("devices", "--provider", "mock", "--json").expect(0);
        assertTrue(c.out().contains("\"state\":4,\"state_name\":\"PORT_ACTIVE\""), c::toString);
    }

    @Test
    void jsonStringsAreEscaped() {
        assertEquals("{\"a\":\"q\\\"\\\\\\n\\u0001\",\"b\":[1,null,true]}", Report.toJson(new java.util.TreeMap<>(
                java.util.Map.of("a", "q\"\\\n\u0001", "b", java.util.Arrays.asList(1, Double.NaN, true)))));
    }

    @Test
    void everyCommandPrintsTheBuildsVersion() {
        String version = BuildVersion.version();
        assertTrue(version.matches("\\d+\\.\\d+\\.\\d+(-SNAPSHOT)?"), version);
        for (String command : new String[] {"", "devices", "demo", "stress", "pingpong"}) {
            Cli c = command.isEmpty() ? Cli.run("--version") : Cli.run(command, "--version");
            c.expect(0);
            assertTrue(c.out().startsWith("efa-ah " + version + "\n"), c::toString);
        }
    }
}
