package org.efaah.verbs;

import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one thread per device that reads its asynchronous events ({@code ibv_get_async_event(3)},
 * each acknowledged at once by the provider), drains every pending event per wake-up and hands
 * them, in order, to the device. Ends after a DEVICE_FATAL, after which a device sends nothing.
 * Stopped first by {@link Device#close()}: the stop wakes the wait, so it returns within one wait,
 * never hanging on a quiet device.
 */
final class DeviceEventReader {
    private static final Logger LOG = LoggerFactory.getLogger(DeviceEventReader.class);
    /** Upper bound of one wait; a stop normally ends it at once through the wake-up. */
    private static final int WAIT_MILLIS = 1000;
    private static final long JOIN_MILLIS = TimeUnit.SECONDS.toMillis(5);

    private final VerbsProvider provider;
    private final long channel;
    private final Thread thread;
    private volatile boolean stopping;

    private DeviceEventReader(VerbsProvider provider, long channel, String deviceName, Consumer<AsyncEvent> sink) {
        this.provider = provider;
        this.channel = channel;
        this.thread = new Thread(() -> run(sink, deviceName), "efa-ah-events-" + deviceName);
        thread.setDaemon(true);
    }

    /** Starts the reader of {@code context}, or returns null when the provider reads no events. */
    static DeviceEventReader start(VerbsProvider provider, long context, String deviceName, Consumer<AsyncEvent> sink) {
        long channel;
        try {
            channel = provider.openAsyncEvents(context);
        } catch (UnsupportedOperationException e) {
            LOG.debug("device {}: no asynchronous events ({})", deviceName, e.getMessage());
            return null;
        } catch (VerbsException e) {
            // The device still works without its events; say so rather than refuse to open it.
            LOG.warn("device {}: asynchronous events unavailable, none will be delivered: {}", deviceName, e.getMessage());
            return null;
        }
        DeviceEventReader reader = new DeviceEventReader(provider, channel, deviceName, sink);
        reader.thread.start();
        return reader;
    }

    private void run(Consumer<AsyncEvent> sink, String deviceName) {
        while (!stopping) {
            List<AsyncEvent> events;
            try {
                events = provider.awaitAsyncEvents(channel, WAIT_MILLIS);
            } catch (Throwable t) {
                LOG.error("device {}: reading asynchronous events failed; no more events will be read", deviceName, t);
                return;
            }
            for (AsyncEvent event : events) {
                sink.accept(event);
                if (event.eventType() == DeviceEvent.Kind.DEVICE_FATAL.value()) {
                    // Nothing more comes from a dead device; the close frees the channel.
                    return;
                }
            }
        }
    }

    /**
     * Stops the thread and frees the channel. From the reader thread itself (a listener closing
     * the device) the loop just ends after the current event, and the channel is freed here since
     * no wait is in progress.
     */
    void stop() {
        stopping = true;
        if (Thread.currentThread() != thread) {
            provider.wakeAsyncEvents(channel);
            if (!joinUninterruptibly(JOIN_MILLIS)) {
                // Freeing the channel under a wait would hand freed memory to the provider: leak it instead.
                LOG.error("{} did not stop within {} ms; its event channel is left allocated", thread.getName(), JOIN_MILLIS);
                return;
            }
        }
        provider.closeAsyncEvents(channel);
    }

    /**
     * Waits up to {@code millis} for the reader to end, whatever the caller's interrupt status: a
     * device closed by an interrupted thread (a command stopped by Ctrl-C, a receive interrupted
     * before its try-with-resources closes) must still free the channel, so the interrupt is kept
     * for the caller instead of ending the wait at once.
     *
     * @return true if the reader ended
     */
    private boolean joinUninterruptibly(long millis) {
        boolean interrupted = false;
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        try {
            for (long left = millis; thread.isAlive() && left > 0;
                 left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())) {
                try {
                    thread.join(left);
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
        return !thread.isAlive();
    }
}
