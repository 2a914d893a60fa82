package org.efaah.internal;

import java.util.List;
import java.util.function.IntFunction;

/**
 * The agent of a {@link BackgroundReader} that reads one channel: each round is one bounded wait
 * whose items go to {@link #handle} in order; the reader's wake reaches the channel, and its close
 * frees the channel on the reader's thread. The device's asynchronous events and the RoCE network
 * changes are read this way; the channel is given as its wait, wake and close (a provider's
 * {@code EventChannel}), so that this package needs nothing of the SPI.
 *
 * @param <T> what one wait returns a list of
 */
public abstract class ChannelAgent<T> implements BackgroundReader.Agent {
    /** Upper bound of one wait, ms; a stop normally ends it at once through the wake. */
    private static final int WAIT_MILLIS = 1000;

    private final IntFunction<? extends List<T>> await;
    private final Runnable wake;
    private final Runnable close;

    /**
     * An agent of the channel made of these three operations.
     *
     * @param await waits up to the given milliseconds and returns what is pending
     * @param wake  ends a wait in progress, or the next one; from any thread, never blocks
     * @param close frees the channel; no wait is in progress when it is called
     */
    protected ChannelAgent(IntFunction<? extends List<T>> await, Runnable wake, Runnable close) {
        this.await = await;
        this.wake = wake;
        this.close = close;
    }

    /**
     * Takes one item read.
     *
     * @param item the item, in the order read
     * @return false when the reader is done: the rest of the round is dropped and the thread ends
     */
    protected abstract boolean handle(T item);

    @Override
    public final boolean doWork() {
        for (T item : await.apply(WAIT_MILLIS)) {
            if (!handle(item)) {
                return false;
            }
        }
        return true;
    }

    @Override
    public final void wake() {
        wake.run();
    }

    @Override
    public final void onClose() {
        close.run();
    }
}
