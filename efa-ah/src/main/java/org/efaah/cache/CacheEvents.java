package org.efaah.cache;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.LongSupplier;
import org.efaah.verbs.Errno;
import org.efaah.verbs.VerbsException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where the cache reports each occurrence off the hit path: to its
 * {@link AddressHandleCacheListener}s, to the health window of recent create failures, and as
 * JFR events. Called beside the {@link StatsCounter} calls of the same occurrence.
 */
final class CacheEvents {
    private static final Logger LOG = LoggerFactory.getLogger(AddressHandleCache.class);

    private final List<AddressHandleCacheListener> listeners = new CopyOnWriteArrayList<>();
    final RecentFailures recentFailures;

    CacheEvents(LongSupplier ticker) {
        this.recentFailures = new RecentFailures(ticker);
    }

    void add(AddressHandleCacheListener listener) {
        listeners.add(listener);
    }

    void remove(AddressHandleCacheListener listener) {
        listeners.remove(listener);
    }

    // No lambda, no iterator when nobody listens: a miss allocates nothing here for an observer
    // that is off (no JFR event is made while its type is off).

    /** Each begin*() before the work its event reports: the event (begun) or null; never throws. */
    JfrEvents.AhCreate beginCreate() {
        try {
            return JfrEvents.beginCreate();
        } catch (Throwable t) {
            failed(t);
            return null;
        }
    }

    JfrEvents.AhDestroy beginDestroy() {
        try {
            return JfrEvents.beginDestroy();
        } catch (Throwable t) {
            failed(t);
            return null;
        }
    }

    JfrEvents.AhEnomemEviction beginEviction() {
        try {
            return JfrEvents.beginEviction();
        } catch (Throwable t) {
            failed(t);
            return null;
        }
    }

    JfrEvents.AhInvalidation beginInvalidation() {
        try {
            return JfrEvents.beginInvalidation();
        } catch (Throwable t) {
            failed(t);
            return null;
        }
    }

    void created(JfrEvents.AhCreate jfr, Entry e, long nanos) {
        try {
            JfrEvents.created(jfr, e, nanos);
        } catch (Throwable t) {
            failed(t);
        }
        if (!listeners.isEmpty()) {
            for (AddressHandleCacheListener l : listeners) {
                try {
                    l.created(nanos);
                } catch (Throwable t) {
                    failed(t);
                }
            }
        }
    }

    void createFailed(JfrEvents.AhCreate jfr, Entry e, Throwable failure, long nanos) {
        Errno errno = failure instanceof VerbsException v ? v.errno() : null;
        try {
            recentFailures.record(errno);
            JfrEvents.createFailed(jfr, e, failure, errno, nanos);
        } catch (Throwable t) {
            failed(t);
        }
        for (AddressHandleCacheListener l : listeners) {
            try {
                l.createFailed(errno, nanos);
            } catch (Throwable t) {
                failed(t);
            }
        }
    }

    void destroyed(JfrEvents.AhDestroy jfr, Entry e, RemovalCause cause) {
        try {
            JfrEvents.destroyed(jfr, e, cause);
        } catch (Throwable t) {
            failed(t);
        }
    }

    void evictedForEnomem(JfrEvents.AhEnomemEviction jfr, Entry creating, int wanted, int evicted) {
        try {
            JfrEvents.evictedForEnomem(jfr, creating, wanted, evicted);
        } catch (Throwable t) {
            failed(t);
        }
    }

    void invalidated(JfrEvents.AhInvalidation jfr, String scope, int count) {
        try {
            JfrEvents.invalidated(jfr, scope, count);
        } catch (Throwable t) {
            failed(t);
        }
    }

    void closed() {
        for (AddressHandleCacheListener l : listeners) {
            try {
                l.closed();
            } catch (Throwable t) {
                failed(t);
            }
        }
        listeners.clear();
    }

    /**
     * Whatever an observer throws, even an {@link Error}, is logged and goes no further: the
     * cache calls them in the middle of a create or a destroy, whose bookkeeping must finish.
     */
    private static void failed(Throwable t) {
        LOG.error("an AddressHandleCacheListener or JFR event failed; the cache goes on", t);
    }
}
