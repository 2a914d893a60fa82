package org.efaah.verbs.spi;

import org.efaah.verbs.VerbsProviders;

/**
 * Makes a {@link VerbsProvider}; found with {@link java.util.ServiceLoader}, so that the code
 * choosing a provider ({@link VerbsProviders}) does not depend on any implementation.
 *
 * <p>In the manner of Netty's {@code Epoll.isAvailable()} / {@code unavailabilityCause()}: a
 * factory probes once whether its provider can work here and keeps the reason when it cannot.
 */
public interface VerbsProviderFactory {

    /**
     * The name users select it by.
     *
     * @return {@code native}, {@code mock}, ...: lower case, unique among factories
     */
    String name();

    /**
     * Rank in {@code auto} selection: higher wins among available factories.
     *
     * @return the priority; the mock's is 0
     */
    int priority();

    /**
     * Whether {@link #create()} can succeed here: for {@code native}, the library loads and a device is present.
     *
     * @return true when available; the probe runs once, on first use
     */
    boolean isAvailable();

    /**
     * Why {@link #isAvailable()} is false.
     *
     * @return the reason with its whole cause chain; null when available
     */
    Throwable unavailabilityCause();

    /**
     * Whether the user switched this factory off (e.g. {@code -Defaah.native.disable=true}):
     * {@code auto} then passes it over without complaint even where devices are present.
     *
     * @return true when switched off explicitly; false by default
     */
    default boolean disabledByUser() {
        return false;
    }

    /**
     * A new provider.
     *
     * @return a provider the caller closes
     * @throws UnsupportedOperationException when not available, with {@link #unavailabilityCause()} as cause
     */
    VerbsProvider create();
}
