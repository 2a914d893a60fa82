package org.efaah.cache;

import java.util.ArrayDeque;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.LongSupplier;
import org.efaah.verbs.Errno;

/**
 * The provider create failures of the last minutes, with their times, for the health report's
 * "failures in the last interval by errno". Kept for at most {@link #KEEP_NANOS} and at most
 * {@link #CAPACITY} failures (beyond, the oldest are dropped: a storm reads as at least that
 * many). Synchronized: only failures and health checks come here, never a hit.
 */
final class RecentFailures {
    /** How long a failure is remembered: the longest health interval, ns. */
    static final long KEEP_NANOS = 3_600_000_000_000L;
    static final int CAPACITY = 10_000;

    private record Failure(long at, Errno errno) {
    }

    private final LongSupplier ticker;
    private final ArrayDeque<Failure> failures = new ArrayDeque<>();

    RecentFailures(LongSupplier ticker) {
        this.ticker = ticker;
    }

    synchronized void record(Errno errno) {
        long now = ticker.getAsLong();
        prune(now, KEEP_NANOS);
        if (failures.size() == CAPACITY) {
            failures.removeFirst();
        }
        failures.addLast(new Failure(now, errno == null ? Errno.UNKNOWN : errno));
    }

    /** Failures in the last {@code windowNanos}, by errno name; errnos with none absent. */
    synchronized Map<String, Long> byErrno(long windowNanos) {
        long now = ticker.getAsLong();
        prune(now, KEEP_NANOS);
        Map<String, Long> out = new TreeMap<>();
        for (Failure f : failures) {
            if (now - f.at <= windowNanos) {
                out.merge(f.errno.name(), 1L, Long::sum);
            }
        }
        return out;
    }

    private void prune(long now, long keep) {
        while (!failures.isEmpty() && now - failures.peekFirst().at > keep) {
            failures.removeFirst();
        }
    }
}
