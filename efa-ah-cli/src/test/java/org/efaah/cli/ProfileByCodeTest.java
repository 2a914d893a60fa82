package org.efaah.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * scripts/lib/profile-by-code.awk, the table of {@code scripts/bench-stream --profile}: a sample
 * counts if and only if it falls inside a measured run's window of its own side, to the nanosecond,
 * and its CPU is divided by the datagrams that side delivered.
 */
class ProfileByCodeTest {
    private static final Path SCRIPT = Path.of("..", "scripts", "lib", "profile-by-code.awk");

    // perf script's times (seconds since boot, 9 decimals) and the runs' windows in ns, as on a
    // host up for 7.5 hours
    private static final String LINES = String.join("\n",
            "run side=c pair=0 sent=1000 delivered=1000 wall_ns=100000000 start_ns=27178400000000"
                    + " end_ns=27178500000000 load1=0.5",
            "run side=efa-ah pair=0 sent=1000 delivered=1000 wall_ns=112532561 start_ns=27178822384893"
                    + " end_ns=27178934917454 load1=0.5") + "\n";

    @Test
    void aSampleCountsInsideItsSidesWindowToTheNanosecond(@TempDir Path dir) throws Exception {
        String samples = String.join("\n",
                // efa-ah: 7 ns before its window (the JIT's), at its first and last nanosecond, 46 ns
                // after (the stub's)
                sample("java", 22425, 22425, "27178.822384886", 1000, "/tmp/perf-22425.map"),
                sample("java", 22425, 22425, "27178.822384893", 2000, "/tmp/perf-22425.map"),
                sample("stream-receiver", 22425, 22449, "27178.934917454", 3000, "/tmp/perf-22425.map"),
                sample("stream-receiver", 22425, 22449, "27178.934917500", 4000,
                        "/work/efa-ah/target/native/libjniNativeVerbs.so"),
                // in the C run's window, and one of C's after it, inside the efa-ah window
                sample("stream_referenc", 23000, 23000, "27178.450000000", 5000, "/tmp/stream_reference"),
                sample("stream_referenc", 23000, 23001, "27178.850000000", 6000, "/tmp/stream_reference"))
                + "\n";
        Path lines = Files.writeString(dir.resolve("lines.txt"), LINES);
        String table = awk(lines, samples);

        assertTrue(table.contains("| sender | own: JIT code | 0.0 | 2.0 |"), table);
        assertTrue(table.contains("| receiver | own: JIT code | 0.0 | 3.0 |"), table);
        assertTrue(table.contains("| sender | own: the C program | 5.0 | 0.0 |"), table);
        assertTrue(table.contains("| sender and receiver | own code | 5.0 | 5.0 |"), table);
        assertTrue(table.contains("| every thread | all | 5.0 | 5.0 |"), table);
        assertTrue(table.contains("1 and 2 samples; 1000 and 1000 datagrams delivered"), table);
        for (String outside : List.of("own: JNI stub", "| receiver | own: the C program | 6.0")) {
            assertTrue(!table.contains(outside), () -> outside + " was counted:\n" + table);
        }
    }

    /** A line of {@code perf script --ns -F comm,pid,tid,time,period,ip,dso}: COMM PID/TID TIME: PERIOD IP (DSO). */
    private static String sample(String comm, int pid, int tid, String time, long period, String dso) {
        return String.format("%16s %d/%d %s: %10d 7f0012345678 (%s)", comm, pid, tid, time, period, dso);
    }

    private static String awk(Path lines, String stdin) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("awk", "-f", SCRIPT.toString(), lines.toString(), "-")
                .redirectErrorStream(true).start();
        try (OutputStream in = p.getOutputStream()) {
            in.write(stdin.getBytes(StandardCharsets.UTF_8));
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(30, TimeUnit.SECONDS), "awk did not end in 30 s");
        assertEquals(0, p.exitValue(), out);
        return out;
    }
}
