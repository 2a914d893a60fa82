package org.efaah.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * Issue 35 item 3 (a first run): a command line that names its command builds that command alone
 * (picocli makes each command's model by reflection at every start: the seven were about a third
 * of a second of a fresh JVM's); one that names none, as the usage, --version and a mistyped name
 * need, gets them all, in the usage's order.
 */
class NamedCommandOnlyTest {
    private static final List<String> ALL = List.of("devices", "demo", "stress", "pingpong", "stream", "health",
            "entries");

    @Test
    void aNamedCommandIsTheOnlyOneMade() {
        List<Class<?>> made = new ArrayList<>();
        CommandLine cli = Main.commandLine(recording(made), "stream", "--provider", "mock", "-n", "1");
        assertEquals(List.of("stream"), List.copyOf(cli.getSubcommands().keySet()));
        assertEquals(List.of(StreamCommand.class), made.stream().filter(ALL_COMMANDS::contains).toList());
    }

    @Test
    void noCommandFirstMakesThemAll() {
        for (String[] args : List.of(new String[0], new String[] {"--help"}, new String[] {"strem"},
                new String[] {"--version", "stream"})) {
            CommandLine cli = Main.commandLine(CommandLine.defaultFactory(), args);
            assertEquals(ALL, List.copyOf(cli.getSubcommands().keySet()), String.join(" ", args));
        }
    }

    private static final List<Class<?>> ALL_COMMANDS = List.of(DevicesCommand.class, DemoCommand.class,
            StressCommand.class, PingpongCommand.class, StreamCommand.class, HealthCommand.class,
            EntriesCommand.class);

    private static CommandLine.IFactory recording(List<Class<?>> made) {
        return new CommandLine.IFactory() {
            @Override
            public <K> K create(Class<K> type) throws Exception {
                made.add(type);
                return CommandLine.defaultFactory().create(type);
            }
        };
    }
}
