package org.efaah.verbs.spi;

import java.util.List;

import org.efaah.verbs.VerbsException;

/**
 * Asynchronous events ({@code ibv_get_async_event(3)}), read by one thread per device. A provider
 * offers them through {@link VerbsProvider#asyncEvents()}; without them its devices have no event
 * reader.
 */
public interface AsyncEventVerbs {

    /**
     * Opens the event channel of {@code context}: from now on its events are read with
     * {@link #awaitAsyncEvents}. Natively the context's {@code async_fd} is made non-blocking and
     * paired with an eventfd for {@link #wakeAsyncEvents}.
     *
     * @param context a handle {@link VerbsProvider#openDevice} returned
     * @return a channel handle, closed with {@link #closeAsyncEvents} before the context
     * @throws VerbsException with the errno of the system call that failed to set the channel up
     * @throws VerbsException EOPNOTSUPP if the provider reads no events
     */
    long openAsyncEvents(long context);

    /**
     * Waits up to {@code timeoutMillis} for events of the channel, then returns every event
     * pending (each acknowledged at once), in order; empty on timeout or when
     * {@link #wakeAsyncEvents} was called. One thread at a time per channel.
     *
     * @param channel       a handle {@link #openAsyncEvents} returned
     * @param timeoutMillis the longest wait, ms; 0 polls
     * @return the pending events, oldest first; empty on timeout or wake
     * @throws VerbsException EOPNOTSUPP if the provider reads no events
     */
    List<AsyncEvent> awaitAsyncEvents(long channel, int timeoutMillis);

    /**
     * Makes a wait on the channel, in progress or next, return promptly. Any thread, any time before close.
     *
     * @param channel a handle {@link #openAsyncEvents} returned
     * @throws VerbsException EOPNOTSUPP if the provider reads no events
     */
    void wakeAsyncEvents(long channel);

    /**
     * Frees the channel; no wait may be in progress.
     *
     * @param channel a handle {@link #openAsyncEvents} returned; invalid afterwards
     * @throws VerbsException EOPNOTSUPP if the provider reads no events
     */
    void closeAsyncEvents(long channel);

    /**
     * The channel {@code channel} in the one channel shape: {@link #awaitAsyncEvents},
     * {@link #wakeAsyncEvents} and {@link #closeAsyncEvents}; it has no stop.
     *
     * @param channel a handle {@link #openAsyncEvents} returned
     * @return the channel
     */
    default EventChannel<List<AsyncEvent>> asyncEventChannel(long channel) {
        return EventChannel.of(channel, this::awaitAsyncEvents, this::wakeAsyncEvents, null, this::closeAsyncEvents);
    }
}
