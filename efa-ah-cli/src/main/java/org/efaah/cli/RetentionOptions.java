package org.efaah.cli;

import java.time.Duration;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.CacheStats;
import org.efaah.cache.RemovalCause;
import org.efaah.cache.RetentionPolicy;
import picocli.CommandLine.Option;

/** The cache's retention settings on a command line, and the line that reports what retention did. */
final class RetentionOptions {
    @Option(names = "--idle-ms", paramLabel = "MS",
            description = "Keep an AH this long after its last handle closes, ms; 0 destroys it at once "
                    + "(default: ${DEFAULT-VALUE}).")
    long idleMillis = 0;

    @Option(names = "--max-unreferenced", paramLabel = "N",
            description = "Most unreferenced AHs kept; beyond, the least recently used goes (default: ${DEFAULT-VALUE}).")
    int maxUnreferenced = 1024;

    /**
     * @throws IllegalArgumentException naming the option, the value and the valid range
     */
    RetentionPolicy policy() {
        long maxMillis = RetentionPolicy.MAX_IDLE_TIME.toMillis();
        if (idleMillis < 0 || idleMillis > maxMillis) {
            throw new IllegalArgumentException("--idle-ms: " + idleMillis + " is out of range; valid 0.." + maxMillis
                    + " ms (a long of nanoseconds)");
        }
        if (maxUnreferenced < 0 || maxUnreferenced > 65536) {
            throw new IllegalArgumentException("--max-unreferenced: " + maxUnreferenced + " is out of range; valid 0..65536");
        }
        return idleMillis == 0 ? RetentionPolicy.none() : RetentionPolicy.idle(Duration.ofMillis(idleMillis), maxUnreferenced);
    }

    static void print(Report report, AddressHandleCache cache, CacheStats s) {
        report.line("retention (%s): retained %,d, revived %,d (creates saved), evicted %,d (idle %,d, bound %,d, "
                        + "ENOMEM %,d), invalidated %,d", describe(cache.inspection().retention()), s.retained(), s.revived(),
                s.evictions(), s.destroysBy(RemovalCause.IDLE), s.destroysBy(RemovalCause.SIZE),
                s.destroysBy(RemovalCause.EVICTED_ENOMEM), s.invalidated());
        report.put("retained", s.retained()).put("revived", s.revived()).put("evicted", s.evictions())
                .put("invalidated", s.invalidated());
    }

    private static String describe(RetentionPolicy p) {
        return p.retains() ? "idle " + p.idleTime().toMillis() + " ms, at most " + p.maxUnreferenced() + " unreferenced"
                : "none";
    }
}
