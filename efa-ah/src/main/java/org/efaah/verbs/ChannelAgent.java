package org.efaah.verbs;

import java.util.List;
import org.efaah.internal.BackgroundReader;
import org.efaah.verbs.spi.EventChannel;

/**
 * The agent of a {@link BackgroundReader} that reads one {@link EventChannel}: each round is one
 * bounded wait whose items go to {@link #handle} in order; the reader's wake reaches the channel,
 * and its close frees the channel on the reader's thread. The async-event and network readers are
 * its two kinds.
 */
abstract class ChannelAgent<T> implements BackgroundReader.Agent {
    /** Upper bound of one wait; a stop normally ends it at once through the wake. */
    static final int WAIT_MILLIS = 1000;

    final EventChannel<List<T>> channel;

    ChannelAgent(EventChannel<List<T>> channel) {
        this.channel = channel;
    }

    /**
     * Takes one item read.
     *
     * @return false when the reader is done: the rest of the round is dropped and the thread ends
     */
    abstract boolean handle(T item);

    @Override
    public final boolean doWork() {
        for (T item : channel.await(WAIT_MILLIS)) {
            if (!handle(item)) {
                return false;
            }
        }
        return true;
    }

    @Override
    public final void wake() {
        channel.wake();
    }

    @Override
    public final void onClose() {
        channel.close();
    }
}
