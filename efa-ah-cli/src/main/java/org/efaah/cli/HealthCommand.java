package org.efaah.cli;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import javax.management.ObjectName;
import javax.management.openmbean.CompositeData;
import org.efaah.health.HealthCheck;
import org.efaah.health.HealthReport;
import org.efaah.health.HealthStatus;
import org.efaah.health.HealthThresholds;
import org.efaah.verbs.Device;
import org.efaah.verbs.spi.VerbsProvider;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * Prints a health report and exits with a code a probe can use: this host's devices (opened
 * here), or a running service's caches read over JMX.
 */
@Command(name = "health",
        description = {"Check health: UP, DEGRADED or DOWN, with every check and its figure. Without --jmx, "
                + "this host's devices (open, not fatal, ports active; PDs and AHs against max_pd and max_ah as "
                + "this process sees them); "
                + "with --jmx, the caches of a running service (its devices, create failures of the last "
                + "minute, undestroyed AHs, leaks).",
            "Exit 0 when the status is below --fail-on, 1 when at or above it (or nothing answers), 2 on a "
                + "usage error: a Kubernetes exec probe runs 'efa-ah health --jmx 127.0.0.1:PORT'."},
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {"0:status below --fail-on (default: UP or DEGRADED)", "1:status at or above --fail-on, "
                + "or the service did not answer", "2:usage error (a device -d names that is not present too)"})
final class HealthCommand implements Callable<Integer> {
    @ArgGroup(exclusive = false)
    JmxTarget jmx;

    @Mixin
    ProviderOptions providerOptions;

    @Option(names = {"-d", "--ib-dev"}, paramLabel = "NAME", description = "Without --jmx: only this device (default: all).")
    String deviceName;

    @Option(names = "--fail-on", paramLabel = "DEGRADED|DOWN",
            description = "The status from which the exit code is 1 (default: ${DEFAULT-VALUE}).")
    HealthStatus failOn = HealthStatus.DOWN;

    @Mixin
    OutputOptions output;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        if (failOn == HealthStatus.UP) {
            throw Check.fail(spec, "--fail-on", "UP would fail every check; valid DEGRADED, DOWN");
        }
        Report report = new Report(spec.commandLine().getOut(), output.json);
        report.put("command", "health");
        Map<String, HealthReport> reports = jmx != null ? fromJmx(report) : fromDevices(report);
        HealthStatus status = HealthStatus.UP;
        List<Object> all = new ArrayList<>();
        // As a cache's report does: a host whose other devices still work is DEGRADED by a DOWN one, DOWN
        // only when every device is.
        long devices = reports.keySet().stream().filter(k -> k.startsWith("device ")).count();
        long down = reports.entrySet().stream().filter(e -> e.getKey().startsWith("device ")
                && e.getValue().status() == HealthStatus.DOWN).count();
        for (Map.Entry<String, HealthReport> e : reports.entrySet()) {
            HealthReport r = e.getValue();
            boolean spared = e.getKey().startsWith("device ") && down < devices;
            status = status.worse(spared && r.status() == HealthStatus.DOWN ? HealthStatus.DEGRADED : r.status());
            report.line("%s: %s", e.getKey(), r.status());
            for (HealthCheck c : r.checks()) {
                report.line("  %-8s %-16s %s%s", c.status(), c.name(), c.subject().isEmpty() ? "" : c.subject() + ": ",
                        c.message());
            }
            all.add(json(e.getKey(), r));
        }
        if (devices > 1) {
            report.line("devices DOWN: %d of %d", down, devices);
            report.put("devices_down", down);
        }
        report.line("status: %s", status);
        report.put("status", status.name()).put("reports", all);
        report.finish();
        return status.ordinal() >= failOn.ordinal() ? Main.FAILED : 0;
    }

    private Map<String, HealthReport> fromJmx(Report report) throws Exception {
        Map<String, HealthReport> out = new LinkedHashMap<>();
        report.put("jmx", jmx.address);
        try (JmxTarget.Connection c = jmx.connect(spec)) {
            for (ObjectName cache : c.caches()) {
                CompositeData data = jmx.within("reading " + cache + " at " + jmx.address,
                        () -> (CompositeData) c.server().getAttribute(cache, "Health"));
                out.put("cache " + JmxTarget.label(cache), HealthReport.from(data));
            }
        }
        return out;
    }

    private Map<String, HealthReport> fromDevices(Report report) {
        Map<String, HealthReport> out = new LinkedHashMap<>();
        try (VerbsProvider provider = providerOptions.open(spec, 0)) {
            report.put("provider", provider.name());
            List<String> names = provider.deviceNames();
            if (deviceName != null) {
                providerOptions.openDevice(spec, provider, "--ib-dev", deviceName).close(); // absent: usage error
                names = List.of(deviceName);
            }
            providerOptions.announceMock(spec, report, output, provider);
            if (names.isEmpty()) {
                throw new IllegalStateException("no verbs device on the " + provider.name() + " provider");
            }
            if (provider.name().equals("mock") && !providerOptions.mockChosen()) {
                // A probe must not pass on the mock because the native library is missing.
                out.put("provider", HealthReport.of(List.of(new HealthCheck("provider", providerOptions.describe(provider, false),
                        HealthStatus.DOWN, -1, -1, "no native provider: '" + providerOptions.choice.provider
                        + "' fell back to the mock (--provider mock checks the mock on purpose)"))));
            }
            for (String name : names) {
                try (Device device = Device.open(provider, name)) {
                    out.put("device " + name, device.health(HealthThresholds.DEFAULTS));
                }
            }
        }
        return out;
    }

    private static Map<String, Object> json(String of, HealthReport r) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("of", of);
        m.put("status", r.status().name());
        List<Object> checks = new ArrayList<>();
        for (HealthCheck c : r.checks()) {
            Map<String, Object> cm = new LinkedHashMap<>();
            cm.put("name", c.name());
            cm.put("subject", c.subject());
            cm.put("status", c.status().name());
            cm.put("value", c.value());
            cm.put("limit", c.limit());
            cm.put("message", c.message());
            checks.add(cm);
        }
        m.put("checks", checks);
        return m;
    }
}
