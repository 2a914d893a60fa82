package org.efaah.cli;

import java.util.LinkedHashMap;
import java.util.Map;
import org.HdrHistogram.Histogram;

/**
 * Latency samples in ns, kept in an HdrHistogram (3 significant digits, 1 ns to 1 hour): memory
 * stays a few hundred KiB whatever the count. One per thread; {@link #add} merges.
 */
final class Latencies {
    private static final long HIGHEST_NANOS = 3_600_000_000_000L;
    private final Histogram histogram = new Histogram(1, HIGHEST_NANOS, 3);

    void record(long nanos) {
        histogram.recordValue(Math.max(1, Math.min(nanos, HIGHEST_NANOS)));
    }

    void add(Latencies other) {
        histogram.add(other.histogram);
    }

    long count() {
        return histogram.getTotalCount();
    }

    /** "p50 1,234 ns, p99 ..., p99.9 ..., max ... (n samples)". */
    String summary() {
        long n = count();
        if (n == 0) {
            return "no samples";
        }
        return String.format("p50 %,d ns, p99 %,d ns, p99.9 %,d ns, max %,d ns (%,d samples)", p(50), p(99), p(99.9),
                histogram.getMaxValue(), n);
    }

    /** The same in µs, for round trips. */
    String summaryMicros() {
        return String.format("p50 %.1f µs, p99 %.1f µs, max %.1f µs", p(50) / 1e3, p(99) / 1e3,
                histogram.getMaxValue() / 1e3);
    }

    /** For {@code --json}: count, p50, p99, p99_9, max, mean (ns). */
    Map<String, Object> toMap() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("count", count());
        m.put("p50_ns", p(50));
        m.put("p99_ns", p(99));
        m.put("p99_9_ns", p(99.9));
        m.put("max_ns", count() == 0 ? 0 : histogram.getMaxValue());
        m.put("mean_ns", count() == 0 ? 0.0 : histogram.getMean());
        return m;
    }

    private long p(double percentile) {
        return count() == 0 ? 0 : histogram.getValueAtPercentile(percentile);
    }
}
