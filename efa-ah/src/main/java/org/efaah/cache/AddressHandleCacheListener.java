package org.efaah.cache;

import org.efaah.verbs.Errno;

/**
 * Told of an {@link AddressHandleCache}'s provider creates and of its close, for observers that
 * need each occurrence rather than the counters of {@link CacheStats} (a time-window maximum, a
 * meter registered the first time an errno occurs, meters removed when the cache closes). A hit
 * tells nothing.
 *
 * <p>Called on the thread that did the work, after the counters were updated, with the entry's
 * lock held for the creates: implementations must be thread-safe, quick and must not block or
 * call back into the cache. A listener that throws is logged and does not stop the others or the
 * cache. Every method does nothing by default.
 */
public interface AddressHandleCacheListener {

    /**
     * A provider create ({@code ibv_create_ah(3)}) succeeded.
     *
     * @param nanos how long it took, ns (ENOMEM evictions and retries included)
     */
    default void created(long nanos) {
    }

    /**
     * A provider create failed; the caller got the failure.
     *
     * @param errno the failure's errno, or null when the throwable carried none
     * @param nanos how long the attempt took, ns
     */
    default void createFailed(Errno errno, long nanos) {
    }

    /**
     * The cache closed: called once, by the thread that closed it, after its AHs were destroyed.
     * Nothing else is reported afterwards.
     */
    default void closed() {
    }
}
