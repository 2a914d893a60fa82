package org.efaah.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Issue 27: Ctrl-C stops every long-running command within a second with its partial summary, exit
 * 130. Each runs as a user runs it, in a JVM of its own, and gets a real SIGINT once its progress
 * line shows it at work ({@code stream} ignored it for about 10 s, then exited 130 printing nothing).
 */
class CtrlCTest {

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "stream --provider mock -n 1000000000                                  | sent ",
        "pingpong --provider mock -n 1000000000                                | round trips of 64 bytes",
        "demo --provider mock -t 2 -r 16 -n 1000000000 --create-latency-us 0    | logical AH requests:",
        "stress -t 2 --duration 600                                             | violations: 0",
    })
    void stopsWithinASecondWithItsSummaryAndExit130(String command, String summary, @TempDir Path dir)
            throws Exception {
        assumeSigintReachesChildren();
        List<String> args = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"), Main.class.getName()));
        args.addAll(List.of(command.trim().split("\\s+")));
        args.addAll(List.of("--progress-every", "0.2"));
        Path out = dir.resolve("out");
        Path err = dir.resolve("err");
        Process p = new ProcessBuilder(args).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (!read(err).contains("[")) { // the first progress line: the run is under way
                assertTrue(p.isAlive(), () -> "ended early:\n" + read(out) + read(err));
                assertTrue(System.nanoTime() < deadline, () -> "no progress line in 120 s:\n" + read(err));
                Thread.sleep(50);
            }
            long start = System.nanoTime();
            Process kill = new ProcessBuilder("kill", "-INT", Long.toString(p.pid())).inheritIO().start();
            assertEquals(0, kill.waitFor());
            boolean ended = p.waitFor(2, TimeUnit.SECONDS);
            long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertTrue(ended, () -> "still running 2 s after SIGINT:\n" + read(out) + read(err));
            assertEquals(Main.INTERRUPTED, p.exitValue(), () -> "after " + millis + " ms:\n" + read(out) + read(err));
            assertTrue(read(out).contains(summary), () -> "no summary:\n" + read(out) + read(err));
            assertTrue(read(err).contains("interrupted after"), () -> read(err));
        } finally {
            p.destroyForcibly();
        }
    }

    /** A process started in the background by a non-interactive shell ignores SIGINT, and so do its children. */
    private static void assumeSigintReachesChildren() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("SigIgn:")) {
                long ignored = Long.parseLong(line.substring("SigIgn:".length()).trim(), 16);
                Assumptions.assumeTrue((ignored & (1L << (2 - 1))) == 0,
                        "SIGINT is ignored in this process tree (started in the background by a shell): no Ctrl-C");
            }
        }
    }

    private static String read(Path file) {
        try {
            return Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "(unreadable: " + e.getMessage() + ")";
        }
    }
}
