/**
 * The AH cache: one refcounted hardware Address Handle per key, shared by every thread.
 *
 * <p>{@link org.efaah.cache.AddressHandleCache#acquire} returns an
 * {@link org.efaah.cache.AddressHandle}; the last {@code close()} of a key destroys its hardware
 * AH. The hit path takes no lock and makes no system call; a per-entry lock makes create and
 * destroy of one key atomic. {@link org.efaah.cache.CacheStats} snapshots the counters;
 * {@link org.efaah.cache.LeakDetection} reports handles dropped without {@code close()}.
 */
package org.efaah.cache;
