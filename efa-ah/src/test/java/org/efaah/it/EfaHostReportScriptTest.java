package org.efaah.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * docs/native-hosts.md's claim that {@code scripts/efa-host-report} on a machine without an EFA device says
 * so in one line and exits 0, checked against fake sysfs trees (the script reads
 * {@code $EFA_AH_SYSFS/class/infiniband/}); and that on an EFA device its report carries every
 * figure the tests printed, the libraries the test JVM mapped and each result once: from surefire
 * reports made here, and, where {@value #DOUBLE_REPORTS} names them (scripts/test does), from the
 * reports of the native tests run over the EFA double.
 */
class EfaHostReportScriptTest {
    private static final Path SCRIPT = Path.of("..", "scripts", "efa-host-report");
    /** Environment variable: a directory of surefire reports of the native tests over the EFA double. */
    static final String DOUBLE_REPORTS = "EFA_AH_DOUBLE_REPORTS";

    @TempDir
    Path sysfs;

    @Test
    void noRdmaDeviceAtAll() throws Exception {
        assertOneLineNoEfa(run(sysfs));
    }

    @Test
    void onlyDevicesOfOtherVendors() throws Exception {
        for (String[] device : new String[][] {{"mlx5_0", "0x15b3"}, {"rxe0", ""}}) {
            Path dir = Files.createDirectories(sysfs.resolve("class/infiniband/" + device[0] + "/device"));
            if (!device[1].isEmpty()) {
                Files.writeString(dir.resolve("vendor"), device[1] + "\n");
            }
        }
        assertOneLineNoEfa(run(sysfs));
    }

    @Test
    void aReportCarriesEveryFigureTheMappedLibrariesAndEachResultOnce(@TempDir Path reports) throws Exception {
        Files.writeString(reports.resolve("org.efaah.A-output.txt"), String.join("\n", "some log line",
                "FIGURE EFA mapped libibverbs: /opt/x/libibverbs.so.1.0.0", "FIGURE EFA mapped libefa: /opt/x/libefa.so.1",
                "FIGURE EFA mapped provider: none", "FIGURE a: 1 µs", "FIGURE b: 2 of 3", "") );
        Files.writeString(reports.resolve("org.efaah.B-output.txt"), "FIGURE c: RNR, rnr_retry 1\n");
        Files.writeString(reports.resolve("org.efaah.A.txt"), String.join("\n", "----", "Test set: org.efaah.A", "----",
                "Tests run: 2, Failures: 1, Errors: 0, Skipped: 0, Time elapsed: 1.0 s <<< FAILURE! -- in org.efaah.A",
                "org.efaah.A.one -- Time elapsed: 0.5 s <<< FAILURE!", "org.opentest4j.AssertionFailedError: no",
                "org.efaah.A.one -- Time elapsed: 0.5 s <<< FAILURE!", ""));
        Files.writeString(reports.resolve("org.efaah.B.txt"),
                "Tests run: 1, Failures: 0, Errors: 0, Skipped: 0, Time elapsed: 0.1 s -- in org.efaah.B\n");
        String report = report(reports, 1);
        assertEquals(List.of("a: 1 µs", "b: 2 of 3", "c: RNR, rnr_retry 1"), section(report, "## figures"));
        assertTrue(report.contains("\nlibibverbs (mapped by the test JVM): /opt/x/libibverbs.so.1.0.0\n"), report);
        assertTrue(report.contains("\nlibefa (mapped by the test JVM): /opt/x/libefa.so.1\n"), report);
        assertEquals(List.of("  org.efaah.A: Tests run: 2, Failures: 1, Errors: 0, Skipped: 0, Time elapsed: 1.0 s <<< FAILURE!",
                "  org.efaah.B: Tests run: 1, Failures: 0, Errors: 0, Skipped: 0, Time elapsed: 0.1 s",
                "  org.efaah.A.one FAILURE!"), section(report, "## tests"));
    }

    /* scripts/test runs this after the native tests over the EFA double, naming their reports. */
    @Test
    void aReportOverTheEfaDoubleCarriesEveryFigureTheDoublesLibrariesAndEachResultOnce() throws Exception {
        String dir = System.getenv(DOUBLE_REPORTS);
        assumeTrue(dir != null, DOUBLE_REPORTS + " does not name the reports of a run over the EFA double");
        Path reports = Path.of(dir);
        List<String> printed = new ArrayList<>();
        List<String> classes = new ArrayList<>();
        try (Stream<Path> files = Files.list(reports)) {
            for (Path f : files.sorted().toList()) {
                String name = f.getFileName().toString();
                if (name.endsWith("-output.txt")) {
                    Files.readAllLines(f).stream().filter(l -> l.startsWith("FIGURE ") && !l.startsWith("FIGURE EFA mapped "))
                            .map(l -> l.substring("FIGURE ".length())).forEach(printed::add);
                } else if (name.endsWith(".txt")) {
                    classes.add(name.substring(0, name.length() - ".txt".length()));
                }
            }
        }
        String report = report(reports, 0);
        List<String> figures = section(report, "## figures");
        assertTrue(!printed.isEmpty(), "the tests over the double printed figures");
        assertEquals(printed.size(), figures.size(), report);
        assertTrue(figures.containsAll(printed), report);
        assertTrue(report.matches("(?s).*\nlibibverbs \\(mapped by the test JVM\\): \\S*/efa-double/lib/libibverbs\\.so[^\n]*\n.*"),
                report);
        assertTrue(report.matches("(?s).*\nlibefa \\(mapped by the test JVM\\): \\S*/efa-double/lib/libefa\\.so[^\n]*\n.*"),
                report);
        List<String> results = section(report, "## tests");
        assertEquals(results.size(), results.stream().distinct().count(), "each result once: " + results);
        for (String c : classes) {
            assertEquals(1, results.stream().filter(r -> r.startsWith("  " + c + ": Tests run: ")).count(), c + ": " + results);
        }
    }

    /** The report the script writes from the surefire reports in {@code reports}, as if Maven exited {@code exit}. */
    private String report(Path reports, int exit) throws IOException, InterruptedException {
        Path dir = Files.createDirectories(sysfs.resolve("class/infiniband/rdmap0s31/device"));
        Files.writeString(dir.resolve("vendor"), "0x1d0f\n");
        Path out = Files.createTempFile(sysfs, "report", ".txt");
        Result result = run(sysfs, Map.of("EFA_AH_REPORTS", reports.toString(), "EFA_AH_MVN_EXIT", String.valueOf(exit)),
                out.toString());
        assertEquals(exit == 0 ? 0 : 1, result.exit(), result.output());
        return Files.readString(out);
    }

    /** The lines of the report's section whose heading starts with {@code heading}, up to a blank line. */
    private static List<String> section(String report, String heading) {
        List<String> lines = report.lines().toList();
        int start = -1;
        for (int i = 0; i < lines.size() && start < 0; i++) {
            start = lines.get(i).startsWith(heading) ? i : -1;
        }
        assertTrue(start >= 0, "no " + heading + " in\n" + report);
        List<String> body = new ArrayList<>();
        for (int i = start + 1; i < lines.size() && !lines.get(i).isEmpty() && !lines.get(i).startsWith("## "); i++) {
            body.add(lines.get(i));
        }
        return body;
    }

    private void assertOneLineNoEfa(Result result) {
        assertEquals(0, result.exit(), result.output());
        assertEquals("efa-host-report: no EFA device on this host (no RDMA device with PCI vendor 0x1d0f in "
                + sysfs + "/class/infiniband); nothing to report\n", result.output());
    }

    private record Result(int exit, String output) {
    }

    private static Result run(Path sysfs) throws IOException, InterruptedException {
        return run(sysfs, Map.of());
    }

    private static Result run(Path sysfs, Map<String, String> env, String... args)
            throws IOException, InterruptedException {
        assumeTrue(Files.isExecutable(SCRIPT), "run from the efa-ah module directory: no " + SCRIPT);
        List<String> command = new ArrayList<>(List.of("bash", SCRIPT.toString()));
        command.addAll(List.of(args));
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        builder.environment().put("EFA_AH_SYSFS", sysfs.toString());
        builder.environment().putAll(env);
        Process process = builder.start();
        String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(process.waitFor(30, TimeUnit.SECONDS), "the script did not finish");
        return new Result(process.exitValue(), out);
    }
}
