package org.efaah.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** Entry point of the {@code efa-ah} command line. */
@Command(name = "efa-ah", mixinStandardHelpOptions = true, version = "efa-ah 0.1.0",
        description = "Deduplicated RDMA Address Handles for the JVM, over libibverbs or an EFA-like mock.",
        subcommands = {DevicesCommand.class, DemoCommand.class, StressCommand.class, PingpongCommand.class})
public final class Main {

    public static void main(String[] args) {
        if (System.getProperty("logback.configurationFile") == null) {
            System.setProperty("logback.configurationFile", "org/efaah/cli/logback-cli.xml");
        }
        System.exit(run(args));
    }

    /** Runs the command line on standard output and returns its exit code. */
    public static int run(String... args) {
        return run(new java.io.PrintWriter(System.out, true), args);
    }

    /** Runs the command line, printing to {@code out}, and returns its exit code. */
    public static int run(java.io.PrintWriter out, String... args) {
        CommandLine cli = new CommandLine(new Main());
        cli.setCaseInsensitiveEnumValuesAllowed(true);
        cli.setOut(out);
        cli.setExecutionExceptionHandler((e, commandLine, parseResult) -> {
            if (e instanceof CommandLine.ParameterException || e instanceof IllegalArgumentException) {
                // Values checked after parsing are usage errors too.
                commandLine.getErr().println(e.getMessage());
                commandLine.usage(commandLine.getErr());
                return commandLine.getCommandSpec().exitCodeOnInvalidInput();
            }
            throw e;
        });
        return cli.execute(args);
    }
}
