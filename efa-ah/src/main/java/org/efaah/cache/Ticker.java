package org.efaah.cache;

/**
 * The time source of an {@link AddressHandleCache}'s retention, in the manner of Caffeine's
 * {@code Ticker}: tests pass a fake one and move time by hand. Read only when the last handle of
 * an AH closes and by the reaper, never on an acquire that hits.
 */
@FunctionalInterface
public interface Ticker {

    /**
     * The current time. Thread-safe.
     *
     * @return nanoseconds from an arbitrary fixed origin; only differences are meaningful
     */
    long read();

    /**
     * The ticker of the running JVM.
     *
     * @return a ticker reading {@link System#nanoTime()}, ns
     */
    static Ticker system() {
        return SystemTicker.INSTANCE;
    }
}
