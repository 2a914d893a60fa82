package org.efaah.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class CommandLineTest {

    private static String run(int expectedExit, String... args) {
        StringWriter text = new StringWriter();
        int exit = Main.run(new PrintWriter(text, true), args);
        assertEquals(expectedExit, exit, text.toString());
        return text.toString();
    }

    private static long number(String output, String label) {
        Matcher m = Pattern.compile(Pattern.quote(label) + "\\s*([\\d,]+)").matcher(output);
        assertTrue(m.find(), label + " missing in:\n" + output);
        return Long.parseLong(m.group(1).replace(",", ""));
    }

    @Test
    void devicesListsTheMockDevice() {
        String out = run(0, "devices", "--provider", "mock", "--mock-devices", "2");
        assertTrue(out.contains("provider: mock"), out);
        assertTrue(out.contains("device efa_1"), out);
        assertTrue(out.contains("vendor_id:      0x1d0f (EFA)"), out);
        assertTrue(out.contains("GID[  0]: fe80::"), out);
    }

    @Test
    void demoMakesOneHardwareAhPerPdAndGid() {
        String out = run(0, "demo", "--provider", "mock", "-t", "4", "-r", "40", "--pds", "2", "-n", "2000",
                "--create-latency-us", "20");
        assertEquals(80, number(out, "hardware AHs created:"));
        assertEquals(4 * 80 + 4 * 2000, number(out, "logical AH requests:"));
        assertEquals(0, number(out, "duplicates refused"));
        assertEquals(0, number(out, "failed requests:"));
    }

    @Test
    void demoWithoutTheCacheShowsTheDeviceRefusingDuplicates() {
        String out = run(0, "demo", "--provider", "mock", "-t", "4", "-r", "10", "--no-cache", "--create-latency-us", "0");
        assertEquals(10, number(out, "AHs created (ibv_create_ah succeeded):"));
        assertEquals(30, number(out, "duplicates refused"));
        out = run(0, "demo", "--provider", "mock", "-t", "4", "-r", "10", "--no-cache", "--behaviour", "legacy",
                "--create-latency-us", "0");
        assertEquals(40, number(out, "AHs created (ibv_create_ah succeeded):"));
        assertEquals(30, number(out, "duplicate AHs made"));
    }

    @Test
    void stressReportsNoViolations() {
        String out = run(0, "stress", "-t", "4", "-d", "2", "--fault-probability", "0.05", "--seed", "7");
        assertEquals(0, number(out, "violations:"));
        assertTrue(number(out, "injected create failures seen") > 0, out);
    }

    @Test
    void pingpongVerifiesEveryEchoThroughOneCachedAh() {
        String out = run(0, "pingpong", "--provider", "mock", "-n", "300", "-s", "4096");
        assertTrue(out.contains("300 round trips of 4096 bytes"), out);
        assertTrue(out.contains("every payload verified"), out);
        assertEquals(1, number(out, "AHs:"));
        run(2, "pingpong", "--provider", "mock", "-s", "4097");
    }

    @Test
    void badOptionsAreRejected() {
        String out = run(2, "demo", "--threads", "0");
        assertTrue(out.isEmpty() || !out.contains("hardware AHs"), out);
        run(2, "demo", "--provider", "nonsense");
    }

    @Test
    void pingpongRunsOverSrdWhenAskedAndRefusesAnUnknownTransport() {
        String out = run(0, "pingpong", "--provider", "mock", "--transport", "srd", "-n", "200", "-s", "1000");
        assertTrue(out.contains("200 round trips of 1000 bytes"), out);
        assertTrue(out.contains("every payload verified"), out);
        run(2, "pingpong", "--provider", "mock", "--transport", "rc");
    }
}
