package org.efaah.verbs.spi;

import java.util.function.LongConsumer;
import org.efaah.verbs.Errno;
import org.efaah.verbs.VerbsException;

/**
 * The one shape of the channels a thread sleeps on: completion channels, asynchronous events and
 * network changes. A wait has a bound and returns what is pending, or nothing on its timeout, on a
 * {@link #wake} or on a {@link #stop}; a close frees the channel. Each facet gives its channels
 * this shape ({@link CompletionChannelVerbs#completionChannel}, {@link AsyncEventVerbs#asyncEventChannel},
 * {@link NetworkVerbs#networkChannel}) from the methods a provider implements, so a provider
 * written against the per-facet methods has it too.
 *
 * @param <R> what a wait returns
 */
public interface EventChannel<R> extends AutoCloseable {

    /**
     * The provider's handle of the channel, for the facet's calls that are not waits
     * ({@link NetworkVerbs#requestNetworkDump}, {@link CompletionChannelVerbs#createCq(long, int, long)}).
     *
     * @return the handle its facet returned when it opened the channel
     */
    long handle();

    /**
     * Waits up to {@code timeoutMillis}, then takes what is pending. One waiter at a time.
     *
     * @param timeoutMillis the longest wait, ms; 0 does not wait
     * @return what was pending; nothing on timeout or {@link #wake} (what "nothing" is, and what a
     *         stopped channel returns, is the facet's: see its wait method)
     * @throws VerbsException with the errno of the failing call
     */
    R await(int timeoutMillis);

    /** Ends the wait in progress, or the next one, with nothing. Any thread, any time before close; never blocks. */
    void wake();

    /**
     * Makes every wait, in progress or later, return at once as stopped. Any thread, any time before close.
     *
     * @throws VerbsException EOPNOTSUPP for a channel without a stop (its reader wakes it and looks at its own flag)
     */
    default void stop() {
        throw new VerbsException("stop", Errno.EOPNOTSUPP, "this channel has no stop; wake it");
    }

    /**
     * Frees the channel; no wait may be in progress.
     *
     * @throws VerbsException with the errno of the failing call (EBUSY for a completion channel whose CQ exists)
     */
    @Override
    void close();

    /** A facet's wait method, by handle. */
    @FunctionalInterface
    interface Await<R> {
        /**
         * Waits on the channel {@code channel} names, as the facet's own wait method does.
         *
         * @param channel       the channel's handle
         * @param timeoutMillis the longest wait, ms
         * @return what the facet's wait returns
         */
        R await(long channel, int timeoutMillis);
    }

    /**
     * A channel made of a facet's methods by handle.
     *
     * @param handle the handle
     * @param await  its wait
     * @param wake   its wake
     * @param stop   its stop, or null when it has none
     * @param close  its close
     * @param <R>    what a wait returns
     * @return the channel
     */
    static <R> EventChannel<R> of(long handle, Await<R> await, LongConsumer wake, LongConsumer stop,
                                  LongConsumer close) {
        return new EventChannel<>() {
            @Override
            public long handle() {
                return handle;
            }

            @Override
            public R await(int timeoutMillis) {
                return await.await(handle, timeoutMillis);
            }

            @Override
            public void wake() {
                wake.accept(handle);
            }

            @Override
            public void stop() {
                if (stop == null) {
                    EventChannel.super.stop();
                } else {
                    stop.accept(handle);
                }
            }

            @Override
            public void close() {
                close.accept(handle);
            }
        };
    }
}
