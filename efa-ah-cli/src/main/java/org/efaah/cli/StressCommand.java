package org.efaah.cli;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import org.efaah.verbs.spi.VerbsProvider;
import org.efaah.verbs.spi.VerbsProviderFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * Runs {@link StressRun} and exits non-zero on any violation, or when it did nothing. On the mock
 * it makes its own strict device (so it takes {@code --provider} alone, none of the mock's
 * settings); on a device it injects nothing, as nothing can be injected there.
 */
@Command(name = "stress",
        description = "Seeded random acquire/close across threads, checking the cache's invariants; exits 1 on a "
                + "violation. On the mock: a strict mock EFA device of its own with faults injected. On a device "
                + "(native): its own GIDs as the peers and no faults, as faults are injected only on the mock "
                + "(--fault-probability or --create-latency-us with another provider is a usage error).")
final class StressCommand implements Callable<Integer> {
    @Mixin
    ProviderChoice providerChoice;

    @Option(names = {"-t", "--threads"}, description = "Threads, 1..1024 (default: ${DEFAULT-VALUE}).")
    int threads = 8;

    // No -d: in rdma-core's tools (and devices, pingpong) -d names the device.
    @Option(names = "--duration", paramLabel = "SECONDS",
            description = "Seconds to run, 0.1..604800 (default: ${DEFAULT-VALUE}).")
    double seconds = 10;

    @Option(names = "--ops", description = "Stop after this many operations in all, >= 1 (default: no limit).")
    long operations = Long.MAX_VALUE;

    @Option(names = {"-r", "--peers"}, description = "Distinct peers, 1..1048576 (default: ${DEFAULT-VALUE}).")
    int peers = 64;

    @Option(names = "--pds", description = "Protection domains, 1..64 (default: ${DEFAULT-VALUE}).")
    int pds = 2;

    @Option(names = "--seed", description = "Seed (default: ${DEFAULT-VALUE}).")
    long seed = 1;

    @Option(names = "--fault-probability",
            description = "Chance a create fails on purpose, 0..1, mock only (default: ${DEFAULT-VALUE}).")
    double faultProbability = 0.01;

    @Option(names = "--create-latency-us", paramLabel = "MICROSECONDS",
            description = "Mock create time, 0..1000000 µs, mock only (default: ${DEFAULT-VALUE}; "
                    + "-Defaah.mock.createLatencyNanos in ns).")
    double createLatencyMicros = 5;

    @Mixin
    OutputOptions output;

    @Mixin
    RetentionOptions retention;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        Check.range(spec, "--threads", threads, 1, 1024, "");
        Check.range(spec, "--duration", seconds, 0.1, 604_800, "s");
        Check.range(spec, "--ops", operations, 1, Long.MAX_VALUE, "");
        Check.range(spec, "--peers", peers, 1, 1 << 20, "");
        Check.range(spec, "--pds", pds, 1, 64, "");
        Check.range(spec, "--fault-probability", faultProbability, 0, 1, "");
        Check.range(spec, "--create-latency-us", createLatencyMicros, 0, 1_000_000, "µs");
        long progressMillis = output.progressMillis(spec);
        org.efaah.cache.RetentionPolicy policy;
        try {
            policy = retention.policy();
        } catch (IllegalArgumentException e) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(), e.getMessage());
        }
        VerbsProviderFactory factory = providerChoice.factory();
        boolean mock = factory.name().equals("mock");
        if (!mock) {
            refuseMockOnly("--fault-probability", faultProbability, factory.name());
            refuseMockOnly("--create-latency-us", createLatencyMicros, factory.name());
        }
        // Opened before the first line: a provider that cannot open is the only line.
        VerbsProvider provider = mock ? null : factory.create();
        Report report = new Report(spec.commandLine().getOut(), output.json);
        if (mock) {
            // The run injects destroy failures on purpose; one warning each would bury the report.
            ((ch.qos.logback.classic.Logger) org.slf4j.LoggerFactory.getLogger("org.efaah.cache"))
                    .setLevel(ch.qos.logback.classic.Level.ERROR);
            report.line("stress: %d threads, %d peers x %d PDs, %s s, seed %d, fault probability %.3f (%s, strict)",
                    threads, peers, pds, seconds, seed, faultProbability,
                    providerChoice.describe(factory.name(), output.verbose));
        } else {
            report.line("stress: %d threads, up to %d peers (the device's GIDs) x %d PDs, %s s, seed %d, no faults (%s: "
                    + "faults are injected only on the mock)", threads, peers, pds, seconds, seed, factory.name());
        }
        StressRun run = new StressRun(new StressRun.Settings(threads, peers, pds, (long) (seconds * 1e9),
                operations, seed, mock ? faultProbability : 0, mock ? (long) (createLatencyMicros * 1e3) : 0))
                .retention(policy);
        StressRun.Result r;
        try (Progress p = Progress.start(spec.commandLine().getErr(), output, progressMillis,
                () -> String.format("stress: %,d operations, %,d injected create failures, %d violations (of %s s)",
                        run.operationsSoFar(), run.injectedFailuresSoFar(), run.violationsSoFar(), seconds))) {
            r = mock ? run.run() : run.runOn(provider);
        } finally {
            if (provider != null) {
                provider.close();
            }
        }
        // Ctrl-C ended the run early: the report below is what it did; the closes are done.
        boolean interrupted = Thread.interrupted() || r.interrupted();
        report.line("operations %,d (acquires %,d, failed acquires %,d, closes %,d) in %.1f s; injected create failures "
                        + "seen %,d", r.operations(), r.acquires(), r.failedAcquires(), r.closes(), r.elapsedNanos() / 1e9,
                r.injectedFailures());
        report.line("cache: hits %,d, misses %,d, creates %,d, destroys %,d, create failures %,d, destroy failures %,d",
                r.cache().hits(), r.cache().misses(), r.cache().hardwareCreates(), r.cache().hardwareDestroys(),
                r.cache().createFailures(), r.cache().destroyFailures());
        report.line("retained %,d, evicted %,d, invalidated %,d (retention: --idle-ms %d, --max-unreferenced %d)",
                r.cache().retained(), r.cache().evictions(), r.cache().invalidated(), retention.idleMillis,
                retention.maxUnreferenced);
        if (r.device() != null) {
            report.line("device: creates %,d, destroys %,d, live %d, duplicates refused %d, injected failures %,d",
                    r.device().hardwareCreates(), r.device().hardwareDestroys(), r.device().liveAhs(),
                    r.device().duplicatesRefused(), r.device().injectedFailures());
        } else {
            report.line("device: %d peer GID(s) of its port 1; its AH table cannot be read: the cache's creates and "
                    + "destroys above stand for it", r.peers());
        }
        report.line("violations: %d", r.violations().size());
        r.violations().forEach(v -> report.line("  %s", v));
        Map<String, Object> cache = new LinkedHashMap<>();
        cache.put("hits", r.cache().hits());
        cache.put("misses", r.cache().misses());
        cache.put("creates", r.cache().hardwareCreates());
        cache.put("destroys", r.cache().hardwareDestroys());
        cache.put("create_failures", r.cache().createFailures());
        cache.put("destroy_failures", r.cache().destroyFailures());
        cache.put("retained", r.cache().retained());
        cache.put("evicted", r.cache().evictions());
        cache.put("invalidated", r.cache().invalidated());
        report.put("command", "stress").put("provider", factory.name()).put("peers", r.peers())
                .put("operations", r.operations()).put("acquires", r.acquires())
                .put("failed_acquires", r.failedAcquires()).put("closes", r.closes()).put("elapsed_ns", r.elapsedNanos())
                .put("injected_create_failures", r.injectedFailures()).put("cache", cache)
                .put("device_duplicates_refused", r.device() == null ? null : r.device().duplicatesRefused())
                .put("violations", r.violations()).put("passed", r.passed() && r.acquires() > 0);
        report.put("interrupted", interrupted);
        report.finish();
        if (!r.passed()) {
            spec.commandLine().getErr().printf("%s: %d violation(s) of the cache's invariants%n",
                    spec.qualifiedName(), r.violations().size());
            return Main.FAILED;
        }
        if (interrupted) {
            spec.commandLine().getErr().printf("%s: interrupted after %,d operations%n", spec.qualifiedName(),
                    r.operations());
            return Main.INTERRUPTED;
        }
        if (r.acquires() == 0) {
            // A run that exercised nothing checked nothing: not a pass.
            spec.commandLine().getErr().printf("%s: no acquire succeeded in %,d operations: nothing was checked%n",
                    spec.qualifiedName(), r.operations());
            return Main.FAILED;
        }
        return 0;
    }

    /**
     * A fault or mock setting given on the command line for another provider is a usage error:
     * faults are injected only into the mock (a real device takes no orders to fail).
     */
    private void refuseMockOnly(String option, double value, String provider) {
        if (value == 0 || !spec.commandLine().getParseResult().hasMatchedOption(option)) {
            return;
        }
        String from = spec.commandLine().getParseResult().hasMatchedOption("--provider")
                ? " (--provider " + providerChoice.provider + ")" : Check.origin(spec, "--provider");
        String text = value == Math.rint(value) ? Long.toString((long) value) : Double.toString(value);
        String what = option.equals("--fault-probability") ? text + "; faults are injected only on the mock"
                : text + " µs; the mock's create time applies only on the mock";
        throw Check.fail(spec, option, what + "; the provider is " + provider
                + (from.isEmpty() ? " (auto: a device is present)" : from) + "; use --provider mock");
    }
}
