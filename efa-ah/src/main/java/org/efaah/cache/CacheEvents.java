package org.efaah.cache;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
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

    CacheEvents(Ticker ticker) {
        this.recentFailures = new RecentFailures(ticker);
    }

    void add(AddressHandleCacheListener listener) {
        listeners.add(listener);
    }

    void remove(AddressHandleCacheListener listener) {
        listeners.remove(listener);
    }

    void created(Entry e, long nanos) {
        safely(() -> JfrEvents.created(e, nanos));
        tell(l -> l.created(nanos));
    }

    void createFailed(Entry e, Throwable failure, long nanos) {
        Errno errno = failure instanceof VerbsException v ? v.errno() : null;
        safely(() -> {
            recentFailures.record(errno);
            JfrEvents.createFailed(e, failure, errno, nanos);
        });
        tell(l -> l.createFailed(errno, nanos));
    }

    void destroyed(Entry e, RemovalCause cause) {
        safely(() -> JfrEvents.destroyed(e, cause));
    }

    void evictedForEnomem(Entry creating, int wanted, int evicted) {
        safely(() -> JfrEvents.evictedForEnomem(creating, wanted, evicted));
    }

    void invalidated(String scope, int count) {
        safely(() -> JfrEvents.invalidated(scope, count));
    }

    void closed() {
        tell(AddressHandleCacheListener::closed);
        listeners.clear();
    }

    private void tell(Consumer<AddressHandleCacheListener> call) {
        for (AddressHandleCacheListener l : listeners) {
            safely(() -> call.accept(l));
        }
    }

    /**
     * Runs an observer: whatever it throws, even an {@link Error}, is logged and goes no further,
     * as the cache calls these in the middle of a create or a destroy, whose bookkeeping must finish.
     */
    private static void safely(Runnable observer) {
        try {
            observer.run();
        } catch (Throwable t) {
            LOG.error("an AddressHandleCacheListener or JFR event failed; the cache goes on", t);
        }
    }
}
