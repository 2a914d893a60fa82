package org.efaah.cache;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
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

    /**
     * The watch for a new handle of {@code entry}, or null when this handle is not tracked. The
     * caller stores it in the handle, and nothing else may: it is the watch, not the handle, whose
     * reachability the Cleaner follows, so that the handle itself never escapes to another thread.
     * Then an untracked handle used in place needs no heap object (C2 scalar-replaces it), which a
     * handle registered with the Cleaner never is.
     */
    Watch maybeTrack(Entry entry) {
        if (level == LeakDetection.DISABLED || level == LeakDetection.SAMPLED
                && ThreadLocalRandom.current().nextInt(LeakDetection.SAMPLING_INTERVAL) != 0) {
            return null;
        }
        return track(entry);
    }

    private Watch track(Entry entry) {
        AcquireSite site = new AcquireSite(this, entry);
        Watch watch = site.watch;
        site.watch = null; // the record keeps the site, which must not keep the watch
        return watch;
    }

    /**
     * What a tracked handle holds and nothing else does: it becomes unreachable with the handle.
     * It reaches its record, never the other way round.
     */
    static final class Watch {
        private final Record record;

        private Watch(Record record) {
            this.record = record;
        }

        /**
         * The handle was closed: nothing to report. Only a mark, no deregistration: the Cleaner
         * drops the record when the watch is collected, and a close stays a store that the JIT
         * can keep inline (a call here kept the handle itself on the heap).
         */
        void close() {
            record.closed = true;
            // Until here the watch must stay reachable: the JIT may read the final field above
            // early, and a handle it scalar-replaced keeps nothing else alive, so without the fence
            // the watch could be collected, and the handle reported, while still in use.
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Where a leaked handle was acquired (a Throwable for its stack trace), and the whole of a
     * sampled handle's registration. In the constructor on purpose: C2 never inlines a Throwable's
     * constructor, so the Cleaner's code stays out of the hit path, which must stay small enough
     * to be inlined into its callers for the handle to need no heap object (measured: with the
     * registration inlined, 32 B per sampled-level hit in 3 JVMs of 6).
     */
    static final class AcquireSite extends Throwable {
        private static final long serialVersionUID = 1L;
        /** Handed to {@link #track} once, then cleared. */
        transient Watch watch;

        AcquireSite(LeakTracker tracker, Entry entry) {
            super("acquired here", null, false, true);
            Record record = new Record(tracker, entry, this);
            watch = new Watch(record);
            CLEANER.register(watch, record);
        }
    }

    static final class Record implements Runnable {
        private final LeakTracker tracker;
        private final Entry entry; // reaches neither the handle nor its watch, which must become unreachable
        private final AcquireSite site;
        private volatile boolean closed;

        Record(LeakTracker tracker, Entry entry, AcquireSite site) {
            this.tracker = tracker;
            this.entry = entry;
            this.site = site;
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
