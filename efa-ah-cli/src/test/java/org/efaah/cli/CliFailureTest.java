package org.efaah.cli;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.nio.file.Files;
import java.nio.file.Path;
import org.efaah.verbs.VerbsProviders;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Issue 12 cases 1 to 3: no false success, no stack trace for ordinary mistakes, no nonsense accepted. */
class CliFailureTest {

    // Case 1: the mock gives a client's first QP the number 0x100, so this is the client's own address.
    @Test
    void aClientNeverTakesItsOwnEchoForTheServers() {
        Cli c = Cli.run("pingpong", "--provider", "mock", "--connect", "fe80::200:ff:fe00:0/0x000100/0x11111111",
                "-n", "5", "--timeout", "2").expect(1).oneLine("own endpoint");
        assertFalse(c.out().contains("verified"), c::toString);
    }

    @Test
    void aClientOfATimedOutServerInAnotherProcessFails(@TempDir Path dir) {
        Path file = dir.resolve("addr");
        Cli.runOn(new MockVerbsProvider(), "pingpong", "--provider", "mock", "--server", "--port", "0",
                "--address-file", file.toString(), "--timeout", "1").expect(1).oneLine("no client came in 1 s (--timeout)", "mock");
        Cli c = Cli.run("pingpong", "--provider", "mock", "--address-file", file.toString(), "-n", "5",
                "--timeout", "2").expect(1).oneLine("client");
        assertFalse(c.out().contains("verified"), c::toString);
    }

    // Case 2
    @Test
    void noDeviceForTheNativeProviderIsOneLine() {
        assumeFalse(VerbsProviders.factory("native").isAvailable(), "this host has an RDMA device");
        Cli.run("devices", "--provider", "native").expect(1).oneLine("native", "unavailable");
    }

    @Test
    void verboseAddsTheStackTrace() {
        assumeFalse(VerbsProviders.factory("native").isAvailable(), "this host has an RDMA device");
        Cli c = Cli.run("devices", "--provider", "native", "--verbose").expect(1);
        assertTrue(c.err().contains("\tat "), c::toString);
    }

    @Test
    void anSgidIndexBeyondTheGidTableIsAUsageError() {
        Cli.run("demo", "--provider", "mock", "--sgid-index", "99", "-n", "1", "-r", "1")
                .expect(2).oneLine("--sgid-index: 99", "valid 0..0", "gid_tbl_len");
    }

    @Test
    void aMissingOrDirectoryAddressFileIsOneLine(@TempDir Path dir) {
        Cli.run("pingpong", "--provider", "mock", "--address-file", "/nonexistent/addr")
                .expect(1).oneLine("/nonexistent/addr", "no such file");
        Cli.run("pingpong", "--provider", "mock", "--address-file", dir.toString())
                .expect(1).oneLine(dir.toString(), "directory");
    }

    @Test
    void aServerWithoutClientOrWithAnUnwritableFileIsOneLine() {
        Cli.runOn(new MockVerbsProvider(), "pingpong", "--provider", "mock", "--server", "--port", "0", "--timeout", "1")
                .expect(1).oneLine("no client came in 1 s (--timeout)");
        Cli.runOn(new MockVerbsProvider(), "pingpong", "--provider", "mock", "--server", "--port", "0",
                "--address-file", "/nonexistent/addr")
                .expect(1).oneLine("/nonexistent/addr", "cannot write");
    }

    @Test
    void aClientWithoutServerIsOneLine() {
        Cli.run("pingpong", "--provider", "mock", "--connect", "fe80::1/0x100/0x11111111", "--timeout", "2")
                .expect(1).oneLine("no echo of message 0", "2 s");
    }

    @Test
    void helpListsTheExitCodes() {
        for (String command : new String[] {"devices", "demo", "stress", "pingpong"}) {
            Cli c = Cli.run(command, "--help").expect(0);
            assertTrue(c.out().contains("Exit codes:") && c.out().matches("(?s).*\\n +2 +usage error.*")
                    && c.out().matches("(?s).*\\n +130 +interrupted \\(Ctrl-C\\).*"), c::toString);
        }
    }

    // Case 3
    @Test
    void stressRefusesDurationsThatAreNotARun() {
        for (String d : new String[] {"NaN", "0.001", "1e308", "-1", "Infinity"}) {
            Cli.run("stress", "--duration", d).expect(2).oneLine("--duration: ", "out of range", "s");
        }
        Cli.run("stress", "--fault-probability", "NaN").expect(2).oneLine("--fault-probability: NaN");
        Cli.run("stress", "--ops", "0").expect(2).oneLine("--ops: 0");
    }

    @Test
    void aTimeoutThatOverflowsIsRefusedBeforeTheRun() {
        Cli c = Cli.run("pingpong", "--provider", "mock", "--timeout", "2147483647", "-n", "10")
                .expect(2).oneLine("--timeout: 2147483647 s is out of range; valid 1..86400 s");
        assertFalse(c.out().contains("round trips"), c::toString);
    }

    @Test
    void theCreateLatencyIsCheckedInMicroseconds() {
        Cli.run("demo", "--create-latency-us", "-5").expect(2).oneLine("--create-latency-us: -5 µs", "0..1000000 µs");
        Cli.run("stress", "--create-latency-us", "-5").expect(2).oneLine("--create-latency-us: -5 µs");
    }

    @Test
    void aTooSmallMaxAhSaysWhyAndCountsEachPhase() {
        Cli c = Cli.run("demo", "--provider", "mock", "--max-ah", "1", "-t", "2", "-r", "4", "-n", "100",
                "--create-latency-us", "0").expect(1).oneLine("max_ah=1", "needs 4", "--max-ah");
        assertTrue(c.number("failed look-ups:") <= 200, c::toString);
        assertTrue(c.number("failed connects:") <= 8, c::toString);
    }

    @Test
    void aBadMockPropertyIsNamed() {
        String before = System.getProperty("efaah.mock.maxAh");
        System.setProperty("efaah.mock.maxAh", "abc");
        try {
            Cli.run("demo", "--provider", "mock").expect(2).oneLine("--max-ah", "-Defaah.mock.maxAh=abc");
            IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                    org.efaah.verbs.mock.MockConfig::fromSystemProperties);
            assertTrue(e.getMessage().contains("-Defaah.mock.maxAh=abc"), e.getMessage());
            System.setProperty("efaah.mock.maxAh", "0");
            e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                    org.efaah.verbs.mock.MockConfig::fromSystemProperties);
            assertTrue(e.getMessage().startsWith("-Defaah.mock.maxAh=0: 0 is out of range"), e.getMessage());
        } finally {
            if (before == null) {
                System.clearProperty("efaah.mock.maxAh");
            } else {
                System.setProperty("efaah.mock.maxAh", before);
            }
        }
    }

    @Test
    void aBadEnvironmentValueIsNamed() {
        Cli.run(java.util.Map.of("EFA_AH_MOCK_MAX_AH", "0"), "demo", "--provider", "mock")
                .expect(2).oneLine("--max-ah: 0", "$EFA_AH_MOCK_MAX_AH=0");
    }

    @Test
    void hugeLookUpCountsKeepNoSamples() throws Exception {
        assertRunsUntilInterrupted("demo", "--provider", "mock", "-n", "2000000000", "-t", "2", "-r", "4",
                "--create-latency-us", "0", "--progress-every", "0.2");
        assertRunsUntilInterrupted("pingpong", "--provider", "mock", "-n", "2000000000", "--progress-every", "0.2");
    }

    /**
     * The run must still be going (not out of heap) after its first progress lines; interrupted (as
     * Ctrl-C does), it prints what it did and ends with exit 130 (issue 17 case 8).
     */
    private static void assertRunsUntilInterrupted(String... args) throws Exception {
        java.io.StringWriter out = new java.io.StringWriter();
        java.io.StringWriter err = new java.io.StringWriter();
        int[] exit = {-1};
        Thread t = new Thread(() -> exit[0] = Main.run(new java.io.PrintWriter(out, true),
                new java.io.PrintWriter(err, true), java.util.Map.of(), args));
        t.start();
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (err.toString().split("\\[").length < 3 && t.isAlive() && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        assertTrue(t.isAlive(), () -> "ended before two progress lines:\n" + out + err);
        t.interrupt();
        t.join(30_000);
        assertFalse(t.isAlive(), "still running 30 s after the interrupt");
        org.junit.jupiter.api.Assertions.assertEquals(Main.INTERRUPTED, exit[0], () -> out + "\n" + err);
        assertTrue(err.toString().contains("interrupted"), err::toString);
        assertFalse(err.toString().contains("OutOfMemoryError") || err.toString().contains("heap"), err::toString);
    }
}
