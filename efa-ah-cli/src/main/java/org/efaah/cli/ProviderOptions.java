package org.efaah.cli;

import java.util.List;
import org.efaah.verbs.Device;
import org.efaah.verbs.spi.VerbsProvider;
import org.efaah.verbs.spi.VerbsProviderFactory;
import org.efaah.verbs.mock.DuplicatePolicy;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;

/** Options shared by commands that open a provider: {@code --provider} and the mock's settings. */
final class ProviderOptions {
    /**
     * The mock every command of this command line opens instead of a new one, or null: set by
     * the in-process tests only ({@link Main#run(java.io.PrintWriter, java.io.PrintWriter,
     * java.util.Map, MockVerbsProvider, String...)}), which hold it too and so can reach a server
     * on it. No option sets it: a user's mock is always the command's own.
     */
    private final MockVerbsProvider inProcess;

    ProviderOptions() {
        this(null);
    }

    ProviderOptions(MockVerbsProvider inProcess) {
        this.inProcess = inProcess;
    }

    @Mixin
    ProviderChoice choice;

    @Option(names = "--behaviour", paramLabel = "kernel-cached|strict|legacy",
            description = "Mock device's answer to a duplicate (PD, GID) create: kernel-cached (a current EFA host: "
                    + "the kernel's AH cache returns the same AHN for a system call), strict (new hardware without "
                    + "that cache: EINVAL) or legacy (another hardware AH) (default: ${DEFAULT-VALUE}; "
                    + "-Defaah.mock.behaviour).",
            converter = PolicyConverter.class)
    DuplicatePolicy behaviour = DuplicatePolicy.KERNEL_CACHED;

    @Option(names = "--max-ah", description = "Mock max_ah per device, 1.." + MockConfig.MAX_AH_LIMIT
            + " (default: ${DEFAULT-VALUE}, what an EFA device reports, as the library's mock; -Defaah.mock.maxAh).")
    int maxAh = MockConfig.DEFAULT_MAX_AH;

    @Option(names = "--mock-devices", description = "Mock device count, 1..64 (default: ${DEFAULT-VALUE}; "
            + "-Defaah.mock.devices).")
    int mockDevices = 1;

    static final class PolicyConverter implements picocli.CommandLine.ITypeConverter<DuplicatePolicy> {
        @Override
        public DuplicatePolicy convert(String value) {
            try {
                return DuplicatePolicy.parse(value);
            } catch (IllegalArgumentException e) {
                // picocli would name the Java type; the user knows only the option.
                throw new picocli.CommandLine.TypeConversionException(
                        e.getMessage().replaceFirst("^behaviour: ", ""));
            }
        }
    }

    /** The factory chosen; logs why when auto falls back to the mock. */
    VerbsProviderFactory factory() {
        return choice.factory();
    }

    /** Checks the mock's settings in the options' names. */
    void check(CommandSpec spec) {
        Check.range(spec, "--max-ah", maxAh, 1, MockConfig.MAX_AH_LIMIT, "");
        Check.range(spec, "--mock-devices", mockDevices, 1, 64, "");
    }

    /**
     * What one system call costs the mock unless {@code -Defaah.mock.systemCallNanos} says otherwise:
     * an {@code ioctl} measured 1.3 µs on the machine issue 27 was filed from ({@code getppid} 1.06 µs).
     */
    static final long SYSTEM_CALL_NANOS = 1_300;

    /**
     * Opens the chosen provider; the mock gets the command-line settings, the given create latency
     * and a system call's cost.
     */
    VerbsProvider open(CommandSpec spec, long createLatencyNanos) {
        check(spec);
        VerbsProviderFactory f = factory();
        if (f.name().equals("mock")) {
            if (inProcess != null) {
                return inProcess;
            }
            MockConfig base = MockConfig.fromSystemProperties();
            boolean systemCallUnset = System.getProperty(MockConfig.PROPERTY_PREFIX + "systemCallNanos", "").isBlank();
            return new MockVerbsProvider(base.toBuilder()
                    .duplicatePolicy(behaviour).maxAh(maxAh).deviceCount(mockDevices)
                    .createLatencyNanos(createLatencyNanos).destroyLatencyNanos(createLatencyNanos / 2)
                    .systemCallNanos(systemCallUnset ? SYSTEM_CALL_NANOS : base.systemCallNanos()).build());
        }
        return f.create();
    }

    /**
     * A server on the mock is a usage error: the mock joins the endpoints of one provider in one
     * process, so no client could ever reach it.
     */
    void refuseServerOnMock(CommandSpec spec, VerbsProvider p, boolean verbose) {
        if (p.name().equals("mock") && p != inProcess) {
            // describe: "mock", or "mock (why auto chose it)"
            throw Check.fail(spec, "--server", "nothing outside this process can reach a server on the mock provider"
                    + describe(p, verbose).substring(p.name().length()) + "; run it on a host with an RDMA device, "
                    + "or without --server for both sides in this process");
        }
    }

    /**
     * Under auto, when the mock runs for want of a device, says so and why, as the command's first
     * line: on standard output, or with {@code --json} on standard error (standard output holds the
     * JSON alone).
     */
    void announceMock(CommandSpec spec, Report report, OutputOptions output, VerbsProvider p) {
        if (!p.name().equals("mock") || !choice.auto()) {
            return;
        }
        String notice = "provider " + describe(p, output.verbose) + ": the mock runs, a simulated EFA device in "
                + "this process";
        if (output.json) {
            spec.commandLine().getErr().println(spec.qualifiedName() + ": " + notice);
            spec.commandLine().getErr().flush();
        } else {
            report.line("%s", notice);
        }
    }

    /**
     * Opens the device named by {@code option}, or the first; a name the provider does not have is
     * a usage error (exit 2) in every command, naming the devices present.
     */
    Device openDevice(CommandSpec spec, VerbsProvider provider, String option, String name) {
        if (name == null) {
            return Device.openFirst(provider);
        }
        List<String> names = provider.deviceNames();
        if (!names.contains(name)) {
            throw Check.fail(spec, option, "'" + name + "' is not a device of the " + provider.name()
                    + " provider; present: " + (names.isEmpty() ? "none" : String.join(", ", names)));
        }
        return Device.open(provider, name);
    }

    /** Whether the user chose the mock (option, property or environment), rather than auto falling back to it. */
    boolean mockChosen() {
        return choice.mockChosen();
    }

    /** See {@link ProviderChoice#describe(VerbsProvider, boolean)}. */
    String describe(VerbsProvider p, boolean verbose) {
        return choice.describe(p, verbose);
    }
}
