package org.efaah.cli;

import org.efaah.verbs.spi.VerbsProvider;
import org.efaah.verbs.spi.VerbsProviderFactory;
import org.efaah.verbs.VerbsProviders;
import picocli.CommandLine.Option;

/**
 * {@code --provider auto|native|mock}: the one option, with its settings order, of every command
 * that chooses a provider. {@link ProviderOptions} adds the mock's settings to it; {@code stress},
 * which makes its own mock, takes this alone.
 */
final class ProviderChoice {
    @Option(names = "--provider", paramLabel = "auto|native|mock",
            description = "Verbs provider (default: ${DEFAULT-VALUE}; -D" + VerbsProviders.PROPERTY
                    + ", $" + VerbsProviders.ENVIRONMENT + ").")
    String provider = VerbsProviders.AUTO;

    /** The factory chosen; logs why when auto falls back to the mock. */
    VerbsProviderFactory factory() {
        return VerbsProviders.factory(provider);
    }

    /** Whether the user chose the mock (option, property or environment), rather than auto falling back to it. */
    boolean mockChosen() {
        return provider != null && provider.trim().equalsIgnoreCase("mock");
    }

    /** Whether the choice is auto: the first provider available. */
    boolean auto() {
        return provider.trim().equalsIgnoreCase(VerbsProviders.AUTO);
    }

    /**
     * The provider in use and, when auto fell back from a better one, why: once, in short (the
     * text before the first colon or semicolon of the reason), or whole with {@code verbose}.
     */
    String describe(VerbsProvider p, boolean verbose) {
        return describe(p.name(), verbose);
    }

    /** As {@link #describe(VerbsProvider, boolean)}, for the provider of this name. */
    String describe(String name, boolean verbose) {
        StringBuilder sb = new StringBuilder(name);
        if (!auto()) {
            return sb.toString();
        }
        for (VerbsProviderFactory f : VerbsProviders.factories()) {
            if (f.name().equals(name)) {
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
