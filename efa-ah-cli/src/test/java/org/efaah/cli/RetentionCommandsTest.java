package org.efaah.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Issue 10 item 6: demo and stress take the retention settings and report what retention did. */
class RetentionCommandsTest {

    private static String run(int expectedExit, String... args) {
        return Cli.run(args).expect(expectedExit).out();
    }

    @Test
    void stressWithRetentionReportsRetainedEvictedAndInvalidated() {
        String out = run(0, "stress", "-t", "4", "--duration", "1", "--fault-probability", "0.02", "--seed", "3",
                "--idle-ms", "5", "--max-unreferenced", "8");
        assertTrue(out.matches("(?s).*retained [1-9][0-9,]*, evicted [1-9][0-9,]*, invalidated 0 \\(retention: --idle-ms 5, "
                + "--max-unreferenced 8\\).*"), out);
        assertTrue(out.contains("violations: 0"), out);
    }

    @Test
    void demoWithRetentionReportsIt() {
        String out = run(0, "demo", "--provider", "mock", "-t", "2", "-r", "20", "-n", "200", "--idle-ms", "60000");
        assertTrue(out.contains("retention (idle 60000 ms, at most 1024 unreferenced): retained 20,"), out);
        out = run(0, "demo", "--provider", "mock", "-t", "2", "-r", "20", "-n", "200");
        assertTrue(out.contains("retention (none): retained 0,"), out);
    }

    @Test
    void badRetentionSettingsAreOneLineErrors() {
        run(2, "stress", "--duration", "1", "--idle-ms", "-1");
        run(2, "demo", "--provider", "mock", "--max-unreferenced", "70000");
        RetentionOptions o = new RetentionOptions();
        o.idleMillis = -1;
        IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class, o::policy);
        assertEquals("--idle-ms: -1 is out of range; valid 0..9223372036854 ms (a long of nanoseconds)", e.getMessage());
        // Issue 17 case 9: beyond a long of nanoseconds is the same one-line usage error, not "long overflow".
        Cli.run("demo", "--provider", "mock", "--idle-ms", "9223372036854775807")
                .expect(2).oneLine("--idle-ms: 9223372036854775807 is out of range; valid 0..9223372036854 ms");
    }
}
