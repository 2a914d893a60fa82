package org.efaah.cli;

import org.efaah.verbs.VerbsProvider;
import org.efaah.verbs.VerbsProviderFactory;
import org.efaah.verbs.VerbsProviders;
import org.efaah.verbs.mock.DuplicatePolicy;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import picocli.CommandLine.Option;

/** Options shared by commands that open a provider. */
final class ProviderOptions {
    @Option(names = "--provider", paramLabel = "auto|native|mock",
            description = "Verbs provider (default: ${DEFAULT-VALUE}, or -D" + VerbsProviders.PROPERTY
                    + " / $" + VerbsProviders.ENVIRONMENT + ").")
    String provider = VerbsProviders.configuredChoice();

    @Option(names = "--behaviour", paramLabel = "strict|legacy|kernel-cached",
            description = "Mock device behaviour on a duplicate (PD, GID) create (default: ${DEFAULT-VALUE}).",
            converter = PolicyConverter.class)
    DuplicatePolicy behaviour = DuplicatePolicy.STRICT;

    @Option(names = "--max-ah", description = "Mock max_ah per device (default: ${DEFAULT-VALUE}).")
    int maxAh = 65536;

    @Option(names = "--mock-devices", description = "Mock device count (default: ${DEFAULT-VALUE}).")
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

    /** Opens the chosen provider; the mock gets the command-line settings and the given create latency. */
    VerbsProvider open(long createLatencyNanos) {
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
