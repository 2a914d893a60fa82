package org.efaah.cache;

import java.lang.ref.Cleaner;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reports {@link AddressHandle}s that become unreachable without {@code close()}, naming where
 * they were acquired. Only reports: the reference stays counted (no collector-driven destroy).
 */
final class LeakTracker {
    private static final Logger LOG = LoggerFactory.getLogger(AddressHandleCache.class);
    private static final Cleaner CLEANER = Cleaner.create(r -> {
        Thread t = new Thread(r, "efa-ah-leak-detector");
        t.setDaemon(true);
        return t;
    });

    private final LeakDetection level;
    final LongAdder reported = new LongAdder();

    LeakTracker(LeakDetection level) {
        this.level = level;
    }

    /** A record for a new handle of {@code entry}, or null when this handle is not tracked. */
    Record maybeTrack(Entry entry) {
        switch (level) {
            case DISABLED:
                return null;
            case SAMPLED:
                if (ThreadLocalRandom.current().nextInt(LeakDetection.SAMPLING_INTERVAL) != 0) {
                    return null;
                }
                break;
            default:
                break;
        }
        return new Record(this, entry, new AcquireSite());
    }

    /** Where a leaked handle was acquired; a Throwable only for its stack trace. */
    static final class AcquireSite extends Throwable {
        private static final long serialVersionUID = 1L;

        AcquireSite() {
            super("acquired here", null, false, true);
        }
    }

    static final class Record implements Runnable {
        private final LeakTracker tracker;
        private final Entry entry; // never reaches the handle, so it does not keep it reachable
        private final AcquireSite site;
        private volatile boolean closed;
        private volatile Cleaner.Cleanable cleanable;

        Record(LeakTracker tracker, Entry entry, AcquireSite site) {
            this.tracker = tracker;
            this.entry = entry;
            this.site = site;
        }

        /** Starts watching the handle; the record itself must not reach it, or it never becomes unreachable. */
        void watch(AddressHandle handle) {
            cleanable = CLEANER.register(handle, this);
        }

        void close() {
            closed = true;
            cleanable.clean();
        }

        @Override
        public void run() {
            if (closed) {
                return;
            }
            // The leaked reference keeps the entry alive, so only the cache's close can have ended
            // it, and that close counted this handle among those left open. No entry lock: this
            // is the JVM's shared Cleaner thread, which must not wait for one.
            boolean countedAtCacheClose = !entry.addCollectedLeak();
            if (!countedAtCacheClose) {
                tracker.reported.increment();
            }
            LOG.warn("LEAK: an AddressHandle for {} was garbage-collected without close(); {}", entry.key,
                    countedAtCacheClose ? "it was counted among the handles left open when its cache was closed"
                            : "its AH stays referenced until the cache is closed", site);
        }
    }
}
