package org.efaah.cache;

import java.lang.ref.PhantomReference;
import java.lang.ref.Reference;
import java.lang.ref.ReferenceQueue;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reports {@link AddressHandle}s that become unreachable without {@code close()}, naming where
 * they were acquired. Only reports: the reference stays counted (no collector-driven destroy).
 *
 * <p>Threadless, as Netty's {@code ResourceLeakDetector}: a tracked handle's watch is followed by
 * a phantom reference on this cache's own queue, and the cache looks at the queue on its way
 * (each new tracked handle, each miss, each statistics or health read, and its close), never on a
 * thread of its own. A thread would outlive the caches it serves, or keep their class loader:
 * the shared {@code Cleaner} thread this replaces lived, and kept its loader, for ever. So a leak
 * is reported the next time the cache is used after the collector found it, not at once.
 *
 * <p>Rules. {@link #maybeTrack} may run under an entry's lock and on the hit path's sampled
 * branch: there the queue is only drained into counts (atomic steps, no lock an acquire needs,
 * no I/O). Logging happens in {@link #report}, which the cache calls only where it holds no lock.
 * Each distinct acquire site (stack trace) is logged once with its stack trace and the count of
 * that drain; later leaks from it are counted, and logged at most once per {@link #REPEAT_NANOS}
 * as one line with the count since.
 */
final class LeakTracker {
    private static final Logger LOG = LoggerFactory.getLogger(AddressHandleCache.class);
    /** How often a site reported already is reported again (one line, no stack trace), ns. */
    static final long REPEAT_NANOS = TimeUnit.MINUTES.toNanos(1);
    /** Distinct sites remembered; beyond, a leak from a new site is logged each time (a program with that many has one bug to fix). */
    static final int MAX_SITES = 1024;
    /** How long a leak's time is kept for {@link #within}: the longest health window, ns. */
    static final long KEEP_NANOS = TimeUnit.HOURS.toNanos(1);
    /** Leak times kept at most (beyond, the oldest are dropped: a storm reads as at least that many). */
    static final int TIMES_CAPACITY = 10_000;
    /** Entries named in a close's report, at most. */
    private static final int NAMED_AT_CLOSE = 5;

    private final LeakDetection level;
    private final LongSupplier ticker;
    /** Where the collector puts the records of collected watches. */
    private final ReferenceQueue<Watch> collected = new ReferenceQueue<>();
    /** The records of watches not yet collected and drained: a phantom reference must stay reachable to be enqueued. */
    private final Set<Record> watched = ConcurrentHashMap.newKeySet();
    /** Leaks counted by a drain, not yet logged. */
    private final ConcurrentLinkedQueue<Record> unlogged = new ConcurrentLinkedQueue<>();
    private final ConcurrentHashMap<List<StackTraceElement>, Site> sites = new ConcurrentHashMap<>();
    private final ArrayDeque<Long> times = new ArrayDeque<>(); // guarded by itself
    final LongAdder reported = new LongAdder();

    LeakTracker(LeakDetection level, LongSupplier ticker) {
        this.level = level;
        this.ticker = ticker;
    }

    /**
     * The watch for a new handle of {@code entry}, or null when this handle is not tracked. The
     * caller stores it in the handle, and nothing else may: it is the watch, not the handle, whose
     * reachability the queue follows, so that the handle itself never escapes to another thread.
     * Then an untracked handle used in place needs no heap object (C2 scalar-replaces it), which a
     * handle registered with a reference queue never is.
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
     * Counts the leaks the collector found since the last drain, without logging them (see the
     * class rules); forgets the records of closed handles collected. Any thread, any lock held.
     */
    private void drain() {
        for (Reference<? extends Watch> r; (r = collected.poll()) != null; ) {
            Record record = (Record) r;
            watched.remove(record);
            AcquireSite site = record.site;
            if (record.closed || site == null) {
                continue;
            }
            record.reportedSite = site;
            // The leaked reference keeps the entry alive, so only the cache's close can have ended
            // it, and that close counted this handle among those left open. No entry lock: a drain
            // may run under another entry's lock, and must not wait for one.
            record.countedAtCacheClose = !record.entry.addCollectedLeak();
            if (!record.countedAtCacheClose) {
                reported.increment();
                long now = ticker.getAsLong();
                synchronized (times) {
                    prune(now);
                    if (times.size() == TIMES_CAPACITY) {
                        times.removeFirst();
                    }
                    times.addLast(now);
                }
            }
            unlogged.add(record);
        }
    }

    /** Leaks reported in the last {@code windowNanos} (a drain first). */
    long within(long windowNanos) {
        drain();
        long now = ticker.getAsLong();
        long n = 0;
        synchronized (times) {
            prune(now);
            for (long at : times) {
                n += now - at <= windowNanos ? 1 : 0;
            }
        }
        return n;
    }

    private void prune(long now) {
        while (!times.isEmpty() && now - times.peekFirst() > KEEP_NANOS) {
            times.removeFirst();
        }
    }

    /** Drains, then logs what is unlogged, one record per site; only where the caller holds no lock. */
    void report() {
        drain();
        if (unlogged.isEmpty()) {
            return;
        }
        Map<List<StackTraceElement>, List<Record>> bySite = new LinkedHashMap<>();
        for (Record r; (r = unlogged.poll()) != null; ) {
            bySite.computeIfAbsent(siteKey(r.reportedSite), k -> new ArrayList<>()).add(r);
        }
        long now = ticker.getAsLong();
        bySite.forEach((key, records) -> log(key, records, now));
    }

    private void log(List<StackTraceElement> key, List<Record> records, long now) {
        Site site = sites.size() < MAX_SITES ? sites.computeIfAbsent(key, k -> new Site()) : sites.get(key);
        long total;
        long since;
        boolean first;
        if (site == null) {
            first = true;
            total = records.size();
            since = 0;
        } else {
            synchronized (site) {
                site.total += records.size();
                total = site.total;
                first = !site.logged;
                if (!first && now - site.loggedAt < REPEAT_NANOS) {
                    return; // counted; told once per REPEAT_NANOS
                }
                since = total - site.totalLogged;
                site.logged = true;
                site.loggedAt = now;
                site.totalLogged = total;
            }
        }
        Record one = records.get(0);
        long atClose = records.stream().filter(r -> r.countedAtCacheClose).count();
        String what = describe(records.stream().map(r -> r.entry).distinct().toList());
        if (first) {
            LOG.warn("LEAK: {} AddressHandle(s) for {} were garbage-collected without close(); {}. Acquired at the"
                    + " site below; later leaks from it are counted (leaksReported, each entry's leaks) and logged"
                    + " at most once a minute.{}", records.size(), what,
                    atClose == records.size() ? "they were counted among the handles left open when the cache closed"
                            : "their AHs stay referenced until the cache is closed", samplingNote(), one.reportedSite);
        } else {
            LOG.warn("LEAK: {} more AddressHandle(s) for {} garbage-collected without close() from the site reported"
                    + " before ({}); {} from it so far", since, what, top(key), total);
        }
    }

    /**
     * What tells one acquire site from another: the stack from the first frame outside the
     * cache's acquire (a hit and a miss from one line of code take different paths inside).
     */
    private static List<StackTraceElement> siteKey(AcquireSite site) {
        List<StackTraceElement> trace = Arrays.asList(site.getStackTrace());
        for (int i = 0; i < trace.size(); i++) {
            String c = trace.get(i).getClassName();
            if (!c.startsWith(LeakTracker.class.getName()) && !c.startsWith(AddressHandleCache.class.getName())
                    && !c.equals(AddressHandle.class.getName())) {
                return trace.subList(i, trace.size());
            }
        }
        return trace;
    }

    /** The site's first frame: the line a reader looks for. */
    private static String top(List<StackTraceElement> key) {
        return key.isEmpty() ? "unknown" : key.get(0).toString();
    }

    private String samplingNote() {
        return level == LeakDetection.PARANOID ? ""
                : " At " + level + " one handle in " + LeakDetection.SAMPLING_INTERVAL + " is tracked, so more may"
                + " leak from here unseen until the cache closes; -D" + LeakDetection.PROPERTY
                + "=paranoid tracks every handle.";
    }

    /**
     * At the cache's close, before its teardown: logs what the collector found (so that those
     * handles are not counted again as open).
     */
    void beforeClose() {
        report();
    }

    /**
     * At the cache's close, after its teardown counted {@code open} handles still open on the
     * entries {@code withOpen} (with their counts): one warning naming the AHs, then one per
     * distinct acquire site of the tracked ones, with its stack trace; no record is watched after.
     */
    void afterClose(long open, Map<Entry, Long> withOpen) {
        Map<List<StackTraceElement>, List<Record>> bySite = new LinkedHashMap<>();
        long tracked = 0;
        for (Record r : watched) {
            AcquireSite site = r.site;
            if (!r.closed && site != null && withOpen.containsKey(r.entry)) {
                tracked++;
                r.reportedSite = site;
                bySite.computeIfAbsent(siteKey(site), k -> new ArrayList<>()).add(r);
            }
        }
        watched.clear(); // none will be enqueued: the close counted them
        if (open <= 0) {
            return;
        }
        StringBuilder named = new StringBuilder();
        int n = 0;
        for (Map.Entry<Entry, Long> e : withOpen.entrySet()) {
            if (n++ == NAMED_AT_CLOSE) {
                named.append("; and ").append(withOpen.size() - NAMED_AT_CLOSE).append(" more AH(s)");
                break;
            }
            named.append(n == 1 ? "" : "; ").append(e.getValue()).append(" for ").append(describe(List.of(e.getKey())));
        }
        String sites = tracked == open ? "the acquire site of each follows"
                : tracked == 0 ? "no acquire site was recorded" + (level == LeakDetection.PARANOID ? ""
                        : " (at " + level + "; -D" + LeakDetection.PROPERTY + "=paranoid records every handle's)")
                : tracked + " were tracked and their acquire sites follow (-D" + LeakDetection.PROPERTY
                        + "=paranoid records every handle's)";
        LOG.warn("LEAK: address handle cache closed with {} handle(s) still open (besides any reported "
                + "garbage-collected): {}; their AHs were destroyed and the handles refuse use; {}", open, named, sites);
        bySite.forEach((key, records) -> LOG.warn("LEAK: {} of the handle(s) open at cache close, for {}, were"
                + " acquired at the site below", records.size(),
                describe(records.stream().map(r -> r.entry).distinct().toList()), records.get(0).reportedSite));
    }

    /** The AHs of {@code entries}, by GID and PD, the first few. */
    static String describe(List<Entry> entries) {
        Entry e = entries.get(0);
        String one = "GID " + e.dgid() + " (port_num " + e.portNum() + ", sgid_index " + e.attributes().sgidIndex()
                + ") in PD " + AddressHandleEntry.pdId(e.pd) + " of " + e.pd.device().name();
        return entries.size() == 1 ? one : one + " and " + (entries.size() - 1) + " other AH(s)";
    }

    /** A distinct acquire site's leaks; guarded by itself. */
    private static final class Site {
        long total;
        long totalLogged;
        boolean logged;
        long loggedAt;
    }

    /**
     * What a tracked handle holds and nothing else does: it becomes unreachable with the handle.
     * It reaches its record, never the other way round.
     */
    static final class Watch {
        /** Its record, which follows it: written once, before the handle is made. */
        private Record record;

        private Watch() {
        }

        /**
         * The handle was closed: nothing to report. Only a mark, no deregistration: the next drain
         * forgets the record once the watch is collected, and a close stays a store that the JIT
         * can keep inline (a call here kept the handle itself on the heap).
         */
        void close() {
            Record r = record;
            r.closed = true;
            // The acquire site's stack trace names the caller's classes: a closed handle's record,
            // which stays until the collector finds its watch and the cache next looks, must not
            // keep the caller's class loader (ThreadLifetimeTest).
            r.site = null;
            // Until here the watch must stay reachable: the JIT may read the final field above
            // early, and a handle it scalar-replaced keeps nothing else alive, so without the fence
            // the watch could be collected, and the handle reported, while still in use.
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Where a leaked handle was acquired (a Throwable for its stack trace), and the whole of a
     * tracked handle's registration, with a drain of the queue. In the constructor on purpose: C2
     * never inlines a Throwable's constructor, so this code stays out of the hit path, which must
     * stay small enough to be inlined into its callers for the handle to need no heap object
     * (measured: with the registration inlined, 32 B per sampled-level hit in 3 JVMs of 6).
     */
    static final class AcquireSite extends Throwable {
        private static final long serialVersionUID = 1L;
        /** Handed to {@link #track} once, then cleared. */
        transient Watch watch;

        AcquireSite(LeakTracker tracker, Entry entry) {
            super("acquired here", null, false, true);
            // Each new tracked handle drains the queue: the records of closed handles collected
            // are forgotten as fast as handles are tracked, so the set stays as small as the
            // collector lets it, whoever else uses the cache.
            tracker.drain();
            Watch w = new Watch();
            Record record = new Record(w, tracker.collected, entry, this);
            w.record = record;
            watch = w;
            tracker.watched.add(record);
        }
    }

    static final class Record extends PhantomReference<Watch> {
        private final Entry entry; // reaches neither the handle nor its watch, which must become unreachable
        /** Null once closed (then nothing is reported); read before {@link #closed}. */
        private AcquireSite site;
        private volatile boolean closed;
        /** Written by the drain that found it, read by the report after (through the queue of unlogged). */
        private boolean countedAtCacheClose;
        /** The site, as the drain that found the leak read it. */
        private AcquireSite reportedSite;

        Record(Watch watch, ReferenceQueue<Watch> queue, Entry entry, AcquireSite site) {
            super(watch, queue);
            this.entry = entry;
            this.site = site;
        }
    }
}
