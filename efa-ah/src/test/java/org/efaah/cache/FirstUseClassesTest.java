package org.efaah.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 35 item 3 (a first run): a cache that nobody inspects through JMX or records with JFR
 * costs a fresh JVM neither. Before, every cache's first AH create looked up its JFR event types
 * (JFR's whole metadata, about 200 classes) and every close asked for the platform MBean server
 * (the JDK's MXBeans, JFR's among them, about 200 more), a fifth of a second of a command line's
 * run. Their behaviour stays: a recording started after the cache's first create gets its events.
 * The workload runs in a JVM of its own, as a user's first run does.
 */
class FirstUseClassesTest {
    @TempDir
    Path dir;

    @Test
    void aCacheOffJmxAndJfrLoadsNeither() throws Exception {
        Path classes = dir.resolve("classes.log");
        Path recording = dir.resolve("late.jfr");
        Path output = dir.resolve("child.out");
        Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xlog:class+load:file=" + classes, "-cp", System.getProperty("java.class.path"),
                Workload.class.getName(), recording.toString())
                .redirectErrorStream(true).redirectOutput(output.toFile())
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null"))).start();
        boolean ended = p.waitFor(60, TimeUnit.SECONDS);
        if (!ended) {
            p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
        String text = Files.readString(output, StandardCharsets.UTF_8);
        assertTrue(ended, () -> "the child JVM did not end within 60 s:\n" + text);
        assertEquals(0, p.exitValue(), text);

        String loaded = Files.readString(classes, StandardCharsets.UTF_8);
        String beforeRecording = loaded.substring(0, loaded.indexOf("jdk.jfr.Recording "));
        for (String kind : List.of("javax.management.MBeanServer ", "jdk.jfr.internal.MetadataRepository ",
                "jdk.jfr.EventType ")) {
            assertFalse(beforeRecording.contains(kind), "loaded before any recording or MXBean: " + kind.strip());
        }
        List<RecordedEvent> events = RecordingFile.readAllEvents(recording);
        assertTrue(events.stream().anyMatch(e -> e.getEventType().getName().equals("org.efaah.AhCreate")),
                () -> "no AH create in a recording started after the cache's first create: " + events);
    }

    /** A cache's first creates and its close, then a recording of one more create. */
    static final class Workload {
        public static void main(String[] args) throws Exception {
            MockVerbsProvider mock = new MockVerbsProvider();
            try (Device device = Device.open(mock, "efa_0"); ProtectionDomain pd = device.allocatePd()) {
                AddressHandleCache first = AddressHandleCache.create();
                first.acquire(pd, AddressHandleAttributes.forGid("fe80::1")).close();
                first.close();
                AddressHandleCache second = AddressHandleCache.create();
                try (Recording recording = new Recording()) {
                    recording.enable("org.efaah.AhCreate");
                    recording.start();
                    second.acquire(pd, AddressHandleAttributes.forGid("fe80::2")).close();
                    recording.stop();
                    recording.dump(Path.of(args[0]));
                }
                second.close();
            }
        }
    }
}
