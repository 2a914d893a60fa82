package org.efaah.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** Entry point of the {@code efa-ah} command line. */
@Command(name = "efa-ah", mixinStandardHelpOptions = true, version = "efa-ah 0.1.0",
        description = "Deduplicated RDMA Address Handles for the JVM, over libibverbs or an EFA-like mock.",
        subcommands = {DevicesCommand.class, DemoCommand.class, StressCommand.class})
public final class Main {

    public static void main(String[] args) {
        if (System.getProperty("logback.configurationFile") == null) {
            System.setProperty("logback.configurationFile", "org/efaah/cli/logback-cli.xml");
        }
        System.exit(run(args));
    }

    /** Runs the command line and returns its exit code (for tests). */
    public static int run(String... args) {
        CommandLine cli = new CommandLine(new Main());
        cli.setCaseInsensitiveEnumValuesAllowed(true);
        return cli.execute(args);
    }
}
