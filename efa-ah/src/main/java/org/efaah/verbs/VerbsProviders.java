package org.efaah.verbs;

import org.efaah.verbs.spi.VerbsProvider;
import org.efaah.verbs.spi.VerbsProviderFactory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.ServiceLoader;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Chooses and opens a {@link VerbsProvider}.
 *
 * <p>The choice is {@code auto} (the default), {@code native} or {@code mock}, taken from the
 * argument of {@link #open(String)}, else the system property {@value #PROPERTY}, else the
 * environment variable {@value #ENVIRONMENT}. {@code auto} takes the native provider when its
 * library loads and at least one device is present. Where the kernel lists no RDMA device
 * ({@code /sys/class/infiniband} is empty or missing) it takes the mock, logging one INFO line
 * that says why; where the kernel lists devices that the native provider cannot use (its
 * library does not load, or libibverbs lists none), {@code auto} fails with the cause instead of
 * quietly running on the mock. Naming a provider that is unavailable fails with its cause.
 *
 * <p>Thread-safe; factories are loaded once.
 */
public final class VerbsProviders {
    /** System property selecting the provider: {@code auto}, {@code native} or {@code mock}. */
    public static final String PROPERTY = "efaah.provider";
    /** Environment variable selecting the provider when the property is unset. */
    public static final String ENVIRONMENT = "EFA_AH_PROVIDER";
    /** The choice that takes the best available provider (see the class description). */
    public static final String AUTO = "auto";

    private static final Logger LOG = LoggerFactory.getLogger(VerbsProviders.class);

    private VerbsProviders() {
    }

    private static final class Holder {
        static final List<VerbsProviderFactory> FACTORIES = load();

        private static List<VerbsProviderFactory> load() {
            List<VerbsProviderFactory> list = new ArrayList<>();
            ServiceLoader.load(VerbsProviderFactory.class, VerbsProviders.class.getClassLoader()).forEach(list::add);
            list.sort(Comparator.comparingInt(VerbsProviderFactory::priority).reversed());
            return List.copyOf(list);
        }
    }

    /**
     * Every factory on the class path.
     *
     * @return the factories, highest priority first; immutable
     */
    public static List<VerbsProviderFactory> factories() {
        return Holder.FACTORIES;
    }

    /**
     * The choice configured by property, else environment.
     *
     * @return the choice, lower case; {@code auto} when neither is set
     */
    static String configuredChoice() {
        String choice = System.getProperty(PROPERTY);
        if (choice == null || choice.isBlank()) {
            choice = System.getenv(ENVIRONMENT);
        }
        return choice == null || choice.isBlank() ? AUTO : choice.trim().toLowerCase(Locale.ROOT);
    }

    /**
     * Opens the provider chosen by {@link #configuredChoice()}.
     *
     * @return a provider the caller closes
     * @throws UnsupportedOperationException as {@link #open(String)}
     */
    public static VerbsProvider open() {
        return open(configuredChoice());
    }

    /**
     * Opens a provider by name, or by {@code auto} selection.
     *
     * @param choice {@code auto}, {@code native}, {@code mock} (case-insensitive); null means {@code auto}
     * @return a provider the caller closes
     * @throws IllegalArgumentException      if no factory has that name
     * @throws UnsupportedOperationException if the named provider is unavailable here (the cause says why)
     */
    public static VerbsProvider open(String choice) {
        return factory(choice).create();
    }

    /**
     * The factory that {@link #open(String)} would use.
     *
     * @param choice {@code auto}, {@code native}, {@code mock} (case-insensitive); null means {@code auto}
     * @return the factory
     * @throws IllegalArgumentException      if no factory has that name
     * @throws UnsupportedOperationException if {@code auto} finds none usable, or the kernel lists RDMA
     *                                       devices that the native provider cannot use (the cause says why)
     */
    public static VerbsProviderFactory factory(String choice) {
        return factory(choice, SYSFS_INFINIBAND);
    }

    /** Where the kernel lists RDMA devices, whether or not any user-space provider can open them. */
    static final Path SYSFS_INFINIBAND = Path.of("/sys/class/infiniband");

    /**
     * As {@link #factory(String)}, with the kernel's device list read from {@code sysfs} (tests).
     * {@code auto} settles for a lower-priority factory (the mock) quietly only when the kernel
     * lists no RDMA device; where it lists some, an unavailable higher-priority factory is a
     * failure with its cause, unless the user switched that factory off.
     */
    static VerbsProviderFactory factory(String choice, Path sysfs) {
        String name = choice == null ? AUTO : choice.trim().toLowerCase(Locale.ROOT);
        if (!AUTO.equals(name)) {
            for (VerbsProviderFactory f : factories()) {
                if (f.name().equals(name)) {
                    return f;
                }
            }
            throw new IllegalArgumentException("provider: '" + choice + "' is unknown; valid: auto, "
                    + String.join(", ", factories().stream().map(VerbsProviderFactory::name).toList()));
        }
        VerbsProviderFactory best = null;
        StringBuilder why = new StringBuilder();
        for (VerbsProviderFactory f : factories()) {
            if (f.isAvailable()) {
                best = f;
                break;
            }
            Throwable cause = f.unavailabilityCause();
            why.append(why.length() == 0 ? "" : "; ").append(f.name()).append(" unavailable: ")
                    .append(cause == null ? "no reason given" : describe(cause));
        }
        if (best == null) {
            throw new UnsupportedOperationException("no verbs provider is available: " + why);
        }
        List<String> listed = kernelDevices(sysfs);
        if (!listed.isEmpty()) {
            for (VerbsProviderFactory f : factories()) {
                if (f == best) {
                    break;
                }
                if (!f.disabledByUser()) {
                    throw new UnsupportedOperationException("this host has RDMA device(s) " + String.join(", ", listed)
                            + " (" + sysfs + ") but the " + f.name() + " provider cannot use them: "
                            + describe(f.unavailabilityCause()) + "; to run on the " + best.name()
                            + " provider anyway, choose it explicitly (-D" + PROPERTY + "=" + best.name() + ", $"
                            + ENVIRONMENT + ", or --provider " + best.name() + ")", f.unavailabilityCause());
                }
            }
        }
        if (why.length() > 0) {
            LOG.info("efa-ah uses the {} provider ({})", best.name(), why);
        } else {
            LOG.debug("efa-ah uses the {} provider", best.name());
        }
        return best;
    }

    /** The device names under {@code sysfs}, sorted; empty when it is missing or unreadable. */
    static List<String> kernelDevices(Path sysfs) {
        try (Stream<Path> entries = Files.list(sysfs)) {
            return entries.map(p -> p.getFileName().toString()).sorted().toList();
        } catch (IOException | RuntimeException e) {
            return List.of();
        }
    }

    /**
     * The messages of a cause chain on one line, innermost last; a cause whose message the line
     * already holds (a wrapper quoting its cause) is not repeated.
     *
     * @param t the outermost throwable
     * @return "outer &lt;- inner &lt;- ..."
     */
    public static String describe(Throwable t) {
        StringBuilder sb = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            String message = c.getMessage() == null ? c.getClass().getSimpleName() : c.getMessage();
            if (sb.indexOf(message) < 0) {
                sb.append(sb.length() > 0 ? " <- " : "").append(message);
            }
            if (c.getCause() == c) {
                break;
            }
        }
        return sb.toString();
    }
}
