package org.efaah.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Issue 18: a JFR recording of {@code demo} holds its AH creates and destroys, read back with jdk.jfr.consumer. */
class DemoRecordingTest {
    @TempDir
    Path dir;

    @Test
    void aRecordingOfDemoHoldsItsCreatesAndDestroys() throws Exception {
        Path file = dir.resolve("demo.jfr");
        Cli demo;
        try (Recording recording = new Recording()) {
            recording.enable("org.efaah.AhCreate");
            recording.enable("org.efaah.AhDestroy");
            recording.start();
            demo = Cli.run("demo", "--provider", "mock", "-t", "2", "-r", "20", "-n", "64").expect(0);
            recording.stop();
            recording.dump(file);
        }
        Map<String, List<RecordedEvent>> byName = RecordingFile.readAllEvents(file).stream()
                .collect(Collectors.groupingBy(e -> e.getEventType().getName()));
        long creates = demo.number("hardware AHs created:");
        // The demo's warm-up runs on a throwaway cache first: its creates are recorded too.
        long recordedCreates = byName.get("org.efaah.AhCreate").size();
        assertTrue(recordedCreates >= creates && creates > 0, () -> recordedCreates + " events, demo said " + creates
                + "\n" + demo);
        assertEquals(recordedCreates, byName.get("org.efaah.AhDestroy").size(), "every AH created was destroyed");
        assertTrue(byName.get("org.efaah.AhDestroy").stream().allMatch(e -> e.getString("cause") != null));

        // docs/operations.md's way to read it: the JDK's jfr tool.
        Process jfr = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "jfr").toString(), "print",
                "--categories", "efa-ah", file.toString()).redirectErrorStream(true).start();
        String printed = new String(jfr.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        assertEquals(0, jfr.waitFor(), printed);
        assertTrue(printed.contains("org.efaah.AhCreate {") && printed.contains("org.efaah.AhDestroy {")
                && printed.contains("cause = \"CLOSED\""), printed.substring(0, Math.min(2000, printed.length())));
    }
}
