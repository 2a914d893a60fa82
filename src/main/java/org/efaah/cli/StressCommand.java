package org.efaah.cli;

import java.io.PrintWriter;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** Runs {@link StressRun} and exits non-zero on any violation. */
@Command(name = "stress", mixinStandardHelpOptions = true,
        description = "Seeded random acquire/close across threads on a strict mock EFA device with faults "
                + "injected, checking the cache's invariants; exits 1 on a violation.")
final class StressCommand implements Callable<Integer> {
    @Option(names = {"-t", "--threads"}, description = "Threads (default: ${DEFAULT-VALUE}).")
    int threads = 8;

    @Option(names = {"-d", "--duration"}, description = "Seconds to run (default: ${DEFAULT-VALUE}).")
    double seconds = 10;

    @Option(names = "--ops", description = "Stop after this many operations in all (default: no limit).")
    long operations = Long.MAX_VALUE;

    @Option(names = {"-r", "--peers"}, description = "Distinct peers (default: ${DEFAULT-VALUE}).")
    int peers = 64;

    @Option(names = "--pds", description = "Protection domains (default: ${DEFAULT-VALUE}).")
    int pds = 2;

    @Option(names = "--seed", description = "Seed (default: ${DEFAULT-VALUE}).")
    long seed = 1;

    @Option(names = "--fault-probability", description = "Chance a create fails on purpose (default: ${DEFAULT-VALUE}).")
    double faultProbability = 0.01;

    @Option(names = "--create-latency-us", description = "Mock create time, µs (default: ${DEFAULT-VALUE}).")
    long createLatencyMicros = 5;

    @picocli.CommandLine.Mixin
    RetentionOptions retention;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws InterruptedException {
        PrintWriter out = spec.commandLine().getOut();
        if (threads < 1 || peers < 1 || pds < 1 || seconds <= 0 || faultProbability < 0 || faultProbability > 1) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(),
                    "threads, peers, pds >= 1; duration > 0; fault probability 0..1");
        }
        org.efaah.cache.RetentionPolicy policy;
        try {
            policy = retention.policy();
        } catch (IllegalArgumentException e) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(), e.getMessage());
        }
        // The run injects destroy failures on purpose; one warning each would bury the report.
        ((ch.qos.logback.classic.Logger) org.slf4j.LoggerFactory.getLogger("org.efaah.cache"))
                .setLevel(ch.qos.logback.classic.Level.ERROR);
        out.printf("stress: %d threads, %d peers x %d PDs, %.0f s, seed %d, fault probability %.3f (mock, strict)%n",
                threads, peers, pds, seconds, seed, faultProbability);
        out.flush();
        StressRun.Result r = new StressRun(new StressRun.Settings(threads, peers, pds, (long) (seconds * 1e9),
                operations, seed, faultProbability, TimeUnit.MICROSECONDS.toNanos(createLatencyMicros))).retention(policy).run();
        out.printf("operations %,d (acquires %,d, closes %,d) in %.1f s; injected create failures seen %,d%n",
                r.operations(), r.acquires(), r.closes(), r.elapsedNanos() / 1e9, r.injectedFailures());
        out.printf("cache: hits %,d, misses %,d, creates %,d, destroys %,d, create failures %,d, destroy failures %,d%n",
                r.cache().hits(), r.cache().misses(), r.cache().hardwareCreates(), r.cache().hardwareDestroys(),
                r.cache().createFailures(), r.cache().destroyFailures());
        out.printf("retained %,d, evicted %,d, invalidated %,d (retention: --idle-ms %d, --max-unreferenced %d)%n",
                r.cache().retained(), r.cache().evictions(), r.cache().invalidated(), retention.idleMillis,
                retention.maxUnreferenced);
        out.printf("device: creates %,d, destroys %,d, live %d, duplicates refused %d, injected failures %,d%n",
                r.device().hardwareCreates(), r.device().hardwareDestroys(), r.device().liveAhs(),
                r.device().duplicatesRefused(), r.device().injectedFailures());
        out.printf("violations: %d%n", r.violations().size());
        r.violations().forEach(v -> out.println("  " + v));
        out.flush();
        return r.passed() ? 0 : 1;
    }
}
