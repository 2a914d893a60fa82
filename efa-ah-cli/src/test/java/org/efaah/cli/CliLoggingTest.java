package org.efaah.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * The command line's logging (issue 35 item 3, a first run): the same lines as its XML
 * configuration printed ({@code LEVEL Logger: message} on stderr, INFO and up, the provider's
 * choice left to the commands), set up without Joran or the JDK's XML parser, which were about 450
 * classes and a quarter of a second of every command's start; a file the user names still rules.
 * Each case runs in a JVM of its own, as a command does.
 */
class CliLoggingTest {
    @TempDir
    Path dir;

    @Test
    void theCommandLinesLinesWithoutJoranOrXml() throws Exception {
        Path classes = dir.resolve("classes.log");
        String err = run(List.of("-Xlog:class+load:file=" + classes));
        List<String> lines = err.lines().toList();
        assertEquals("INFO  Invalidator: port 1: 2 AH(s) invalidated", lines.get(0), err);
        assertEquals("WARN  Probe: refused", lines.get(1), err);
        assertEquals("java.lang.IllegalStateException: why", lines.get(2), err);
        assertTrue(lines.get(3).startsWith("\tat org.efaah.cli.CliLoggingTest$Probe.main"), err);
        assertFalse(err.contains("not shown"), err);
        String loaded = Files.readString(classes, StandardCharsets.UTF_8);
        for (String kind : List.of("ch.qos.logback.classic.util.DefaultJoranConfigurator ",
                "ch.qos.logback.core.joran.event.", "com.sun.org.apache.xerces.",
                "ch.qos.logback.classic.PatternLayout ")) {
            assertFalse(loaded.contains(kind), "loaded: " + kind);
        }
    }

    @Test
    void aFileTheUserNamesRules() throws Exception {
        String err = run(List.of("-Dlogback.configurationFile=logback-test.xml"));
        // logback-test.xml: WARN and up, "HH:mm:ss.SSS LEVEL logger - message"
        assertFalse(err.contains("Invalidator"), err);
        assertTrue(err.lines().anyMatch(l -> l.matches("\\d\\d:\\d\\d:\\d\\d\\.\\d{3} WARN  Probe - refused")), err);
    }

    private String run(List<String> options) throws Exception {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
                .toString()));
        command.addAll(options);
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), Probe.class.getName()));
        Path out = dir.resolve("out");
        Path err = dir.resolve("err");
        Process p = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile())
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null"))).start();
        boolean ended = p.waitFor(60, TimeUnit.SECONDS);
        if (!ended) {
            p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
        String text = Files.readString(err, StandardCharsets.UTF_8);
        assertTrue(ended, () -> "the child JVM did not end within 60 s:\n" + text);
        assertEquals(0, p.exitValue(), text);
        return text;
    }

    /** Logs as the command line's main would have it set up. */
    static final class Probe {
        public static void main(String[] args) {
            Main.useCliLogging();
            LoggerFactory.getLogger("org.efaah.cache.Invalidator").info("port {}: {} AH(s) invalidated", 1, 2);
            LoggerFactory.getLogger("org.efaah.verbs.VerbsProviders").info("not shown: the commands say it");
            LoggerFactory.getLogger("org.efaah.cli.Probe").debug("not shown: below INFO");
            LoggerFactory.getLogger("org.efaah.cli.Probe").warn("refused", new IllegalStateException("why"));
        }
    }
}
