package org.efaah.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 34 item 5: a bad {@code -Defaah.*} value is refused in one line naming no Java type, and the
 * help that refusal points to names every setting the library reads for that command.
 */
class LibrarySettingsHelpTest {
    private static final Path MOCK_CONFIG = Path.of("..", "efa-ah", "src", "main", "java", "org", "efaah", "verbs",
            "mock", "MockConfig.java");

    @AfterEach
    void clear() {
        System.clearProperty("efaah.leakDetection");
    }

    /** The CLI's list is the one MockConfig.fromSystemProperties reads, name for name. */
    @Test
    void theMockSettingsAreThoseTheLibraryReads() throws IOException {
        Matcher m = Pattern.compile("\\bset\\(\"([A-Za-z]+)\"").matcher(Files.readString(MOCK_CONFIG));
        List<String> read = new ArrayList<>();
        while (m.find()) {
            read.add(m.group(1));
        }
        assertEquals(read, Defaults.MOCK_SETTINGS);
    }

    @Test
    void everyCommandsHelpNamesTheLibrarySettingsItReads() {
        for (String command : DocumentedCommandsTest.helpCommands()) {
            String help = Cli.run(command, "--help").expect(0).out();
            boolean provider = help.contains("--provider");
            if (provider) {
                assertTrue(help.contains("-Defaah.native.disable") && help.contains("-Defaah.mock.NAME"), help);
                for (String name : Defaults.MOCK_SETTINGS) {
                    assertTrue(Pattern.compile("\\b" + name + "\\b").matcher(help).find(), () -> name + " in\n" + help);
                }
            }
            boolean cache = Defaults.CACHE_COMMANDS.contains(command);
            assertEquals(cache, help.contains("-Defaah.leakDetection="), () -> command + ":\n" + help);
            assertEquals(cache, help.contains("-Defaah.network.watch="), () -> command + ":\n" + help);
        }
    }

    @Test
    void aBadLeakDetectionValueIsOneLineThatTheHelpExplains() {
        System.setProperty("efaah.leakDetection", "BOGUS");
        for (String command : Defaults.CACHE_COMMANDS) {
            Cli c = Cli.run(command, "--provider", "mock", command.equals("stress") ? "--duration=0.2" : "-n=1").expect(2)
                    .oneLine("efaah.leakDetection", "'BOGUS'", "valid", "see 'efa-ah " + command + " --help'");
            assertTrue(!c.err().contains("No enum constant"), c::toString);
        }
    }
}
