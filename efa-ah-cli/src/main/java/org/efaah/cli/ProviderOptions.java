package org.efaah.cli;

import java.util.List;
import org.efaah.verbs.Device;
import org.efaah.verbs.VerbsProvider;
import org.efaah.verbs.VerbsProviderFactory;
import org.efaah.verbs.VerbsProviders;
import org.efaah.verbs.mock.DuplicatePolicy;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;

/** Options shared by commands that open a provider. */
final class ProviderOptions {
    @Option(names = "--provider", paramLabel = "auto|native|mock",
            description = "Verbs provider (default: ${DEFAULT-VALUE}; -D" + VerbsProviders.PROPERTY
                    + ", $" + VerbsProviders.ENVIRONMENT + ").")
    String provider = VerbsProviders.AUTO;

    @Option(names = "--behaviour", paramLabel = "strict|legacy|kernel-cached",
            description = "Mock device behaviour on a duplicate (PD, GID) create (default: ${DEFAULT-VALUE}; "
                    + "-Defaah.mock.behaviour).",
            converter = PolicyConverter.class)
    DuplicatePolicy behaviour = DuplicatePolicy.STRICT;

    @Option(names = "--max-ah", description = "Mock max_ah per device, 1..65536 (default: ${DEFAULT-VALUE}; "
            + "-Defaah.mock.maxAh).")
    int maxAh = 65536;

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
        return VerbsProviders.factory(provider);
    }

    /** Checks the mock's settings in the options' names. */
    void check(CommandSpec spec) {
        Check.range(spec, "--max-ah", maxAh, 1, 65536, "");
        Check.range(spec, "--mock-devices", mockDevices, 1, 64, "");
    }

    /** Opens the chosen provider; the mock gets the command-line settings and the given create latency. */
    VerbsProvider open(CommandSpec spec, long createLatencyNanos) {
        check(spec);
        VerbsProviderFactory f = factory();
        if (f.name().equals("mock")) {
            return new MockVerbsProvider(MockConfig.fromSystemProperties().toBuilder()
                    .duplicatePolicy(behaviour).maxAh(maxAh).deviceCount(mockDevices)
                    .createLatencyNanos(createLatencyNanos).destroyLatencyNanos(createLatencyNanos / 2).build());
        }
        return f.create();
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
        return provider != null && provider.trim().equalsIgnoreCase("mock");
    }

    /**
     * The provider in use and, when auto fell back from a better one, why: once, in short (the
     * text before the first colon or semicolon of the reason), or whole with {@code verbose}.
     */
    String describe(VerbsProvider p, boolean verbose) {
        StringBuilder sb = new StringBuilder(p.name());
        if (!provider.trim().equalsIgnoreCase(VerbsProviders.AUTO)) {
            return sb.toString();
        }
        for (VerbsProviderFactory f : VerbsProviders.factories()) {
            if (f.name().equals(p.name())) {
                break;
            }
            if (!f.isAvailable() && f.unavailabilityCause() != null) {
                sb.append(" (").append(f.name()).append(" unavailable: ").append(verbose
                        ? VerbsProviders.describe(f.unavailabilityCause())
                        : shortReason(f.unavailabilityCause()) + "; --verbose says more").append(')');
            }
        }
        return sb.toString();
    }

    static String shortReason(Throwable cause) {
        String m = String.valueOf(cause.getMessage());
        int end = m.length();
        for (String stop : new String[] {": ", "; "}) {
            int i = m.indexOf(stop);
            if (i > 0 && i < end) {
                end = i;
            }
        }
        return m.substring(0, end);
    }
}
