package org.efaah.cli;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.function.UnaryOperator;
import org.efaah.verbs.VerbsProviders;
import org.efaah.verbs.mock.MockConfig;
import picocli.CommandLine.IDefaultValueProvider;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

/**
 * The one order in which the command line takes a setting: the option, else the system property,
 * else the environment variable, else the built-in default. picocli asks this provider for an
 * option's default; options without a property keep their built-in default.
 */
final class Defaults implements IDefaultValueProvider {
    static final String PRECEDENCE = "A setting comes from, first to last: the command-line option, the system "
            + "property (-D, e.g. in EFA_AH_JAVA_OPTS), the environment variable, the built-in default.";

    /**
     * A setting's other sources.
     *
     * @param property    the system property (the library reads it too)
     * @param environment the environment variable
     * @param toOption    turns the property's value into the option's units
     */
    record Source(String property, String environment, UnaryOperator<String> toOption) {
    }

    /** Where a default came from, to name it when the value is bad. */
    record Origin(String description, String value) {
    }

    private static final Map<String, Source> SOURCES = new LinkedHashMap<>();

    static {
        add("--provider", VerbsProviders.PROPERTY, VerbsProviders.ENVIRONMENT, UnaryOperator.identity());
        add("--behaviour", MockConfig.PROPERTY_PREFIX + "behaviour", null, UnaryOperator.identity());
        add("--max-ah", MockConfig.PROPERTY_PREFIX + "maxAh", null, UnaryOperator.identity());
        add("--mock-devices", MockConfig.PROPERTY_PREFIX + "devices", null, UnaryOperator.identity());
        // The library's property is in ns, the option in µs.
        add("--create-latency-us", MockConfig.PROPERTY_PREFIX + "createLatencyNanos", null, Defaults::nanosToMicros);
    }

    private static void add(String option, String property, String environment, UnaryOperator<String> toOption) {
        SOURCES.put(option, new Source(property, environment == null ? environmentName(property) : environment,
                toOption));
    }

    /** {@code efaah.mock.maxAh} -> {@code EFA_AH_MOCK_MAX_AH}. */
    static String environmentName(String property) {
        return property.replaceFirst("^efaah\\.", "EFA_AH_").replaceAll("([a-z])([A-Z])", "$1_$2").replace('.', '_')
                .toUpperCase(Locale.ROOT);
    }

    private static String nanosToMicros(String nanos) {
        try {
            return Double.toString(Long.parseLong(nanos.trim()) / 1e3);
        } catch (NumberFormatException e) {
            return nanos; // the option's converter then names the bad value and its source
        }
    }

    /*
     * Settings the library reads itself, with no option of the CLI's: a command's help names each one
     * that command meets, so that "see 'efa-ah X --help'" after a bad -D value leads somewhere.
     * CommandSettingsTest reads the library's sources for the list (MockConfig.fromSystemProperties).
     */
    /** The mock's settings, each {@code -Defaah.mock.NAME} (MockConfig.fromSystemProperties). */
    static final java.util.List<String> MOCK_SETTINGS = java.util.List.of("devices", "gidTableLength", "maxAh",
            "behaviour", "duplicateErrno", "createLatencyNanos", "destroyLatencyNanos", "failureProbability",
            "failureErrno", "efa", "seed", "maxPd", "adminQueueDepth", "systemCallNanos", "flushOnError");
    /** The commands that make an AH cache: its builder reads leak detection and network following. */
    static final java.util.Set<String> CACHE_COMMANDS = java.util.Set.of("demo", "pingpong", "stream", "stress");

    /** The help lines naming the library's own settings that {@code command} reads. */
    static String librarySettings(CommandSpec command) {
        StringBuilder sb = new StringBuilder();
        if (command.findOption("--provider") != null) {
            sb.append(String.format("  -Defaah.native.disable=true: the native provider is never chosen%n"));
            sb.append(String.format("  -Defaah.mock.NAME (the mock's device), NAME one of:%n      %s%n",
                    String.join(", ", MOCK_SETTINGS.subList(0, 8))));
            sb.append(String.format("      %s%n", String.join(", ", MOCK_SETTINGS.subList(8, MOCK_SETTINGS.size()))));
        }
        if (CACHE_COMMANDS.contains(command.name())) {
            sb.append(String.format("  -D%s=disabled|sampled|paranoid: leak reports%n",
                    org.efaah.cache.LeakDetection.PROPERTY));
            sb.append(String.format("  -Defaah.network.watch=false, $EFA_AH_NETWORK_WATCH: RoCE AHs not following "
                    + "the network%n"));
        }
        return sb.toString();
    }

    private final Properties properties;
    private final Map<String, String> environment;

    Defaults(Properties properties, Map<String, String> environment) {
        this.properties = properties;
        this.environment = environment;
    }

    @Override
    public String defaultValue(ArgSpec argSpec) {
        Origin o = origin(argSpec);
        return o == null ? null : SOURCES.get(((OptionSpec) argSpec).longestName()).toOption().apply(o.value());
    }

    /** Where the default of this option comes from; null for its built-in default. */
    Origin origin(ArgSpec argSpec) {
        if (!(argSpec instanceof OptionSpec option)) {
            return null;
        }
        Source s = SOURCES.get(option.longestName());
        if (s == null) {
            return null;
        }
        String v = properties.getProperty(s.property());
        if (v != null && !v.isBlank()) {
            return new Origin("-D" + s.property() + "=" + v, v.trim());
        }
        v = environment.get(s.environment());
        if (v != null && !v.isBlank()) {
            return new Origin("$" + s.environment() + "=" + v, v.trim());
        }
        return null;
    }

    /**
     * The option-property-variable table for {@code command}'s help footer: only the options it
     * has, each on two lines so that no line is wrapped inside a name at 80 columns.
     */
    String table(CommandSpec command) {
        StringBuilder sb = new StringBuilder(String.format("%n"));
        SOURCES.forEach((option, s) -> {
            if (command.findOption(option) != null) {
                sb.append(String.format("  %s%n      -D%s, $%s%n", option, s.property(), s.environment()));
            }
        });
        String library = librarySettings(command);
        if (!library.isEmpty()) {
            sb.append(String.format("Read by the library itself (system properties):%n")).append(library);
        }
        return sb.toString().replace("%", "%%");
    }

    /** Whether {@code command} takes any setting from a property or the environment. */
    static boolean hasSettings(CommandSpec command) {
        return SOURCES.keySet().stream().anyMatch(o -> command.findOption(o) != null);
    }
}
