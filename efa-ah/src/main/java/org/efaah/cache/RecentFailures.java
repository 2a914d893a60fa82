package org.efaah.cache;

import java.util.ArrayDeque;
import java.util.Map;
import java.util.Objects;
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
        /*
         * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
         * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
         * NoObjectMethodsTest). Same meaning and format as the generated ones.
         */
        @Override
        public boolean equals(Object o) {
            return o == this || o instanceof Failure that && that.at == at && Objects.equals(that.errno, errno);
        }

        @Override
        public int hashCode() {
            int h = Long.hashCode(at);
            h = 31 * h + Objects.hashCode(errno);
            return h;
        }

        @Override
        public String toString() {
            return new StringBuilder("Failure[at=").append(at).append(", errno=").append(errno)
                    .append(']').toString();
        }
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
