package org.efaah.cli;

import java.io.PrintWriter;
import java.util.List;
import java.util.Map;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.ScopeType;

/** Entry point of the {@code efa-ah} command line. */
@Command(name = "efa-ah", scope = ScopeType.INHERIT, mixinStandardHelpOptions = true,
        versionProvider = BuildVersion.class,
        description = "Deduplicated RDMA Address Handles for the JVM, over libibverbs or an EFA-like mock.",
        footerHeading = "%nSettings:%n",
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {"0:done; every check passed", "1:failed: the reason is printed on one line (--verbose adds the trace)",
                "2:usage error: a bad option or value (also a device name that is not present)",
                "130:interrupted (Ctrl-C): the summary so far is printed first"})
public final class Main {
    /*
     * The commands, in the order the usage lists them. picocli builds a command's model by
     * reflection over its options and mixins at every start; a command line that names its command
     * first (every run but the top-level usage, --version and a mistyped name) gets that command's
     * model only: the seven together were about a third of a second of a fresh JVM's start on 2
     * cores (docs/benchmarks.md, "A first run").
     */
    private static final List<Class<?>> COMMANDS = List.of(DevicesCommand.class, DemoCommand.class,
            StressCommand.class, PingpongCommand.class, StreamCommand.class, HealthCommand.class,
            EntriesCommand.class);

    /** Exit code when the command ran and failed (a device error, a violation, no answer). */
    static final int FAILED = 1;
    /** Exit code for a bad option or value. */
    static final int USAGE = 2;
    /** Exit code after Ctrl-C (SIGINT), as shells report it: 128 + 2. */
    static final int INTERRUPTED = 130;

    private Main() {
    }

    /**
     * Runs the command line and exits with its exit code.
     *
     * @param args the command line, e.g. {@code demo --threads 4}
     */
    public static void main(String[] args) {
        useCliLogging();
        // Ctrl-C: the JVM runs its shutdown hooks; this one interrupts the command, which stops, prints
        // what it did so far and returns. The JVM then exits with SIGINT's status, 130.
        Thread command = Thread.currentThread();
        java.util.concurrent.atomic.AtomicBoolean signalled = new java.util.concurrent.atomic.AtomicBoolean();
        java.util.concurrent.atomic.AtomicBoolean finished = new java.util.concurrent.atomic.AtomicBoolean();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            if (!finished.get()) {
                signalled.set(true);
                command.interrupt();
                try {
                    command.join(10_000);
                } catch (InterruptedException e) {
                    // exiting anyway
                }
            }
        }, "efa-ah-ctrl-c"));
        int exit = run(new PrintWriter(System.out, true), new PrintWriter(System.err, true), System.getenv(), args);
        finished.set(true);
        if (!signalled.get()) {
            System.exit(exit);
        }
        // Signalled: returning lets the hook's join end; the JVM is already exiting with 130.
    }

    /** Logback takes the command line's configuration ({@link CliLogging}) unless the user named a file. */
    static void useCliLogging() {
        CliLogging.ask();
    }

    /**
     * Runs the command line, printing results to {@code out} and failures and progress to standard
     * error.
     *
     * @param out  where results go
     * @param args the command line
     * @return the exit code: 0 done, 1 failed, 2 usage error
     */
    public static int run(PrintWriter out, String... args) {
        return run(out, new PrintWriter(System.err, true), System.getenv(), args);
    }

    /**
     * Runs the command line and returns its exit code.
     *
     * @param out         standard output: results
     * @param err         standard error: progress, warnings and the one-line reason of a failure
     * @param environment the environment variables that settings are read from
     */
    static int run(PrintWriter out, PrintWriter err, Map<String, String> environment, String... args) {
        return run(out, err, environment, null, args);
    }

    /**
     * Runs the command line with every command's mock being {@code inProcess} (when not null):
     * for tests that hold that mock too, and so can reach a server on it.
     */
    static int run(PrintWriter out, PrintWriter err, Map<String, String> environment,
                   org.efaah.verbs.mock.MockVerbsProvider inProcess, String... args) {
        Defaults defaults = new Defaults(System.getProperties(), environment);
        CommandLine.IFactory factory = inProcess == null ? CommandLine.defaultFactory() : new CommandLine.IFactory() {
            @Override
            public <K> K create(Class<K> type) throws Exception {
                return type == ProviderOptions.class ? type.cast(new ProviderOptions(inProcess))
                        : CommandLine.defaultFactory().create(type);
            }
        };
        CommandLine cli = commandLine(factory, args);
        cli.setCaseInsensitiveEnumValuesAllowed(true);
        cli.setOut(out);
        cli.setErr(err);
        cli.setDefaultValueProvider(defaults);
        cli.getCommandSpec().usageMessage().footerHeading("%n").footer("Every command's --help lists the settings "
                + "it takes from a system property or the environment.");
        for (CommandLine c : cli.getSubcommands().values()) {
            if (Defaults.hasSettings(c.getCommandSpec())) {
                c.getCommandSpec().usageMessage().footer(Defaults.PRECEDENCE, defaults.table(c.getCommandSpec()));
            } else {
                c.getCommandSpec().usageMessage().footerHeading("");
            }
        }
        Failures failures = new Failures(defaults, args);
        cli.setParameterExceptionHandler(failures::onParameterException);
        cli.setExecutionExceptionHandler(failures::onExecutionException);
        if (!java.util.Arrays.asList(args).contains("--json")) {
            return cli.execute(args);
        }
        // --json promises one object on stdout whatever the exit: a command that failed before its
        // report was printed (a usage error, no device, a refused peer) gets one naming the failure,
        // which is the last line it wrote on stderr.
        Watched watchedOut = new Watched(out);
        Watched watchedErr = new Watched(err);
        cli.setOut(watchedOut);
        cli.setErr(watchedErr);
        int exit = cli.execute(args);
        if (!watchedOut.wrote) {
            String command = java.util.Arrays.stream(args).filter(cli.getSubcommands()::containsKey).findFirst()
                    .orElse("efa-ah");
            String error = watchedErr.lastLine().replaceFirst("^efa-ah( " + command + ")?: ", "");
            Map<String, Object> failure = new java.util.LinkedHashMap<>();
            failure.put("command", command);
            failure.put("exit_code", exit);
            failure.put("error", error.isEmpty() ? "exit " + exit : error);
            out.println(Report.toJson(failure));
            out.flush();
        }
        return exit;
    }

    /** The command line for {@code args}: the command they name, or all of them when they name none first. */
    static CommandLine commandLine(CommandLine.IFactory factory, String... args) {
        CommandLine cli = new CommandLine(new Main(), factory);
        Class<?> named = null;
        for (Class<?> command : COMMANDS) {
            if (args.length > 0 && command.getAnnotation(Command.class).name().equals(args[0])) {
                named = command;
            }
        }
        for (Class<?> command : COMMANDS) {
            if (named == null || command == named) {
                cli.addSubcommand(command);
            }
        }
        return cli;
    }

    /** A writer that remembers whether anything went through it, and the last line that did. */
    private static final class Watched extends PrintWriter {
        private final StringBuilder line = new StringBuilder();
        private String last = "";
        boolean wrote;

        Watched(PrintWriter target) {
            super(target, true);
        }

        @Override
        public void write(int c) {
            write(new char[] {(char) c}, 0, 1);
        }

        @Override
        public void write(char[] buf, int off, int len) {
            synchronized (lock) {
                wrote |= len > 0;
                for (int i = off; i < off + len; i++) {
                    if (buf[i] == '\n') {
                        if (!line.toString().isBlank()) {
                            last = line.toString().strip();
                        }
                        line.setLength(0);
                    } else if (line.length() < 4096) {
                        line.append(buf[i]);
                    }
                }
            }
            super.write(buf, off, len);
        }

        @Override
        public void write(String s, int off, int len) {
            write(s.toCharArray(), off, len);
        }

        String lastLine() {
            synchronized (lock) {
                return line.toString().isBlank() ? last : line.toString().strip();
            }
        }
    }
}
