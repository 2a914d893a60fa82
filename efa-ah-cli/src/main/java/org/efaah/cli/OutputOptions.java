package org.efaah.cli;

import picocli.CommandLine.Option;

/** How a command reports: traces, progress, JSON. */
final class OutputOptions {
    @Option(names = "--verbose", description = "On failure, print the stack trace after the one-line reason.")
    boolean verbose;

    @Option(names = {"-q", "--quiet"}, description = "No progress lines on stderr.")
    boolean quiet;

    @Option(names = "--json", description = "Print the results as one JSON object on stdout, for scripts.")
    boolean json;

    @Option(names = "--progress-every", paramLabel = "SECONDS",
            description = "Seconds between progress lines on stderr during long runs (default: ${DEFAULT-VALUE}).")
    double progressSeconds = 5;

    /** The progress interval, checked. */
    long progressMillis(picocli.CommandLine.Model.CommandSpec spec) {
        Check.range(spec, "--progress-every", progressSeconds, 0.1, 3600, "s");
        return (long) (progressSeconds * 1000);
    }
}
