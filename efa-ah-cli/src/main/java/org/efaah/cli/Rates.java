package org.efaah.cli;

/**
 * The one rule for every rate the commands print: a rate is given only over at least
 * {@link #MIN_NANOS} of measured time. Below that it would measure the clock and the first call's
 * warm-up more than the traffic (a rate over 0 ns is not a number at all), so the command says the
 * time was too short and {@code --json} gives null.
 */
final class Rates {
    /** The shortest time a rate is given over: 1 ms. */
    static final long MIN_NANOS = 1_000_000;

    private Rates() {
    }

    static boolean measurable(long nanos) {
        return nanos >= MIN_NANOS;
    }

    /** {@code amount} per second over {@code nanos}, or null (JSON null) when the time is too short. */
    static Double perSecond(double amount, long nanos) {
        return measurable(nanos) ? amount * 1e9 / nanos : null;
    }

    /** "too short for a rate (3 round trips in 45.2 µs; a rate needs at least 1 ms)". */
    static String tooShort(long nanos, String what) {
        return String.format("too short for a rate (%s in %s; a rate needs at least 1 ms)", what, duration(nanos));
    }

    private static String duration(long nanos) {
        return nanos < 1_000 ? nanos + " ns" : String.format("%.1f µs", nanos / 1e3);
    }
}
