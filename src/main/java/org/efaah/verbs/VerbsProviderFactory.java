package org.efaah.verbs;

/**
 * Makes a {@link VerbsProvider}; found with {@link java.util.ServiceLoader}, so that the code
 * choosing a provider ({@link VerbsProviders}) does not depend on any implementation.
 *
 * <p>In the manner of Netty's {@code Epoll.isAvailable()} / {@code unavailabilityCause()}: a
 * factory probes once whether its provider can work here and keeps the reason when it cannot.
 */
public interface VerbsProviderFactory {

    /** The name users select it by: {@code native}, {@code mock}. */
    String name();

    /** Higher wins in {@code auto} selection among available factories. */
    int priority();

    /** Whether {@link #create()} can succeed here: for {@code native}, the library loads and a device is present. */
    boolean isAvailable();

    /** Why {@link #isAvailable()} is false, with the whole cause chain; null when available. */
    Throwable unavailabilityCause();

    /**
     * Whether the user switched this factory off (e.g. {@code -Defaah.native.disable=true}):
     * {@code auto} then passes it over without complaint even where devices are present.
     */
    default boolean disabledByUser() {
        return false;
    }

    /**
     * A new provider.
     *
     * @throws UnsupportedOperationException when not available, with {@link #unavailabilityCause()} as cause
     */
    VerbsProvider create();
}
