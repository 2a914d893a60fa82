package org.efaah.cli;

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
            return DuplicatePolicy.parse(value);
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

    /** "mock (native unavailable: ...)" style description of the choice. */
    String describe(VerbsProvider p) {
        StringBuilder sb = new StringBuilder(p.name());
        for (VerbsProviderFactory f : VerbsProviders.factories()) {
            if (!f.name().equals(p.name()) && !f.isAvailable() && f.unavailabilityCause() != null) {
                sb.append(" (").append(f.name()).append(" unavailable: ")
                        .append(VerbsProviders.describe(f.unavailabilityCause())).append(')');
            }
        }
        return sb.toString();
    }
}
