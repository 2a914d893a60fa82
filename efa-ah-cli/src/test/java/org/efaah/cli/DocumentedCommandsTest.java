package org.efaah.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import picocli.CommandLine;

/**
 * Issue 27: the commands the README lists are the ones {@code efa-ah --help} lists, no more, no
 * fewer; and every {@code scripts/efa-ah} command line that the README or docs/ gives names a
 * command and options that exist, with values of the right type (what each one then does is
 * checked by the command's own tests).
 */
class DocumentedCommandsTest {
    private static final Path README = Path.of("..", "README.md");
    private static final Path DOCS = Path.of("..", "docs");
    /** A command in the README's layout: indented under {@code efa-ah-cli/}, then its summary. */
    private static final Pattern LAYOUT_COMMAND = Pattern.compile("^ {6}([a-z][a-z-]*) {2,}\\S");
    /** A command in the top-level --help: two spaces, its name, its summary. */
    private static final Pattern HELP_COMMAND = Pattern.compile("^  ([a-z][a-z-]*)(\\s|$)");
    private static final Pattern SCRIPT_LINE = Pattern.compile("scripts/efa-ah((?: [^#`]*)?)");

    @Test
    void theReadmesCommandsAreThoseOfTheTopLevelHelp() throws IOException {
        assertEquals(helpCommands(), readmeLayoutCommands(), "README.md's layout against efa-ah --help");
    }

    static Set<String> helpCommands() {
        String help = Cli.run("--help").expect(0).out();
        Set<String> commands = new LinkedHashSet<>();
        boolean in = false;
        for (String line : help.split("\n")) {
            if (line.startsWith("Commands:")) {
                in = true;
            } else if (in && !line.startsWith(" ")) {
                break;
            } else if (in) {
                Matcher m = HELP_COMMAND.matcher(line);
                if (m.find()) {
                    commands.add(m.group(1));
                }
            }
        }
        assertFalse(commands.isEmpty(), () -> "no Commands: section in\n" + help);
        return commands;
    }

    /** The lines under {@code efa-ah-cli/} in the README's layout block, up to the next entry. */
    static Set<String> readmeLayoutCommands() throws IOException {
        List<String> lines = Files.readAllLines(README, StandardCharsets.UTF_8);
        int cli = -1;
        for (int i = 0; i < lines.size() && cli < 0; i++) {
            if (lines.get(i).startsWith("    efa-ah-cli/")) {
                cli = i;
            }
        }
        assertTrue(cli >= 0, "README.md's layout has no efa-ah-cli/ line");
        Set<String> commands = new LinkedHashSet<>();
        for (int i = cli + 1; i < lines.size(); i++) {
            Matcher m = LAYOUT_COMMAND.matcher(lines.get(i));
            if (!m.find()) {
                break;
            }
            commands.add(m.group(1));
        }
        return commands;
    }

    @TestFactory
    Stream<DynamicTest> everyScriptsEfaAhLineInTheDocsParses() throws IOException {
        List<Path> documents = new ArrayList<>(List.of(README));
        try (Stream<Path> files = Files.list(DOCS)) {
            files.filter(f -> f.getFileName().toString().endsWith(".md")).sorted().forEach(documents::add);
        }
        List<DynamicTest> tests = new ArrayList<>();
        Set<String> named = new LinkedHashSet<>();
        for (Path document : documents) {
            for (String line : Files.readAllLines(document, StandardCharsets.UTF_8)) {
                Matcher m = SCRIPT_LINE.matcher(line);
                while (m.find()) {
                    String[] args = m.group(1).strip().isEmpty() ? new String[0] : m.group(1).strip().split("\\s+");
                    String text = "scripts/efa-ah " + String.join(" ", args);
                    if (named.add(text)) {
                        tests.add(DynamicTest.dynamicTest(document.getFileName() + ": " + text, () -> parses(args)));
                    }
                }
            }
        }
        assertTrue(named.size() >= 15, "expected the docs' command lines, found " + named);
        return tests.stream();
    }

    private static void parses(String[] args) {
        CommandLine cli = Main.commandLine(CommandLine.defaultFactory(), args);
        cli.setCaseInsensitiveEnumValuesAllowed(true);
        try {
            CommandLine.ParseResult result = cli.parseArgs(args);
            if (args.length > 0 && !args[0].startsWith("-")) {
                assertTrue(result.hasSubcommand(), () -> Arrays.toString(args) + " names no command");
            }
        } catch (CommandLine.ParameterException e) {
            throw new AssertionError("scripts/efa-ah " + String.join(" ", args) + ": " + e.getMessage(), e);
        }
    }
}
