package org.efaah.verbs;

import org.efaah.internal.BackgroundReader;
import org.efaah.internal.ChannelAgent;
import org.efaah.verbs.spi.AsyncEvent;
import org.efaah.verbs.spi.EventChannel;
import org.efaah.verbs.spi.VerbsProvider;
import java.util.List;
import java.util.function.Consumer;
import org.efaah.health.HealthCheck;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one thread per device that reads its asynchronous events ({@code ibv_get_async_event(3)},
 * each acknowledged at once by the provider), drains every pending event per wake-up and hands
 * them, in order, to the device. Ends after a DEVICE_FATAL, after which a device sends nothing. A
 * failed read does not end it: it backs off and reads again ({@link BackgroundReader}). Stopped
 * first by {@link Device#close()}: the stop wakes the wait, so it returns within one wait, never
 * hanging on a quiet device; the thread frees the channel itself.
 */
final class DeviceEventReader extends ChannelAgent<AsyncEvent> {
    private static final Logger LOG = LoggerFactory.getLogger(DeviceEventReader.class);

    private final VerbsProvider provider;
    private final Consumer<AsyncEvent> sink;
    private final BackgroundReader reader;

    private DeviceEventReader(VerbsProvider provider, EventChannel<List<AsyncEvent>> channel, String deviceName, Consumer<AsyncEvent> sink) {
        super(channel::await, channel::wake, channel::close);
        this.provider = provider;
        this.sink = sink;
        this.reader = BackgroundReader.of(this, "efa-ah-events-" + deviceName, "asynchronous events of " + deviceName);
    }

    /**
     * Starts the reader of {@code context}, or returns null when the provider reads no events (or
     * refused the channel), having told {@code absent} why.
     */
    static DeviceEventReader start(VerbsProvider provider, long context, String deviceName, Consumer<AsyncEvent> sink,
                                   Consumer<String> absent) {
        EventChannel<List<AsyncEvent>> channel;
        try {
            channel = provider.asyncEvents().asyncEventChannel(provider.asyncEvents().openAsyncEvents(context));
        } catch (VerbsException e) {
            absent.accept(e.getMessage());
            if (e.errno() == Errno.EOPNOTSUPP) {
                LOG.debug("device {}: no asynchronous events ({})", deviceName, e.getMessage());
                return null;
            }
            // The device still works without its events; say so rather than refuse to open it.
            LOG.warn("device {}: asynchronous events unavailable, none will be delivered: {}", deviceName, e.getMessage());
            return null;
        }
        DeviceEventReader r = new DeviceEventReader(provider, channel, deviceName, sink);
        r.reader.start();
        return r;
    }

    @Override
    protected boolean handle(AsyncEvent event) {
        sink.accept(event);
        return event.eventType() != DeviceEvent.Kind.DEVICE_FATAL.value(); // nothing more comes from a dead device
    }

    /** See {@link BackgroundReader#stop()}. */
    boolean stop() {
        return reader.stop();
    }

    /** See {@link BackgroundReader#runAfterClose}. */
    void runAfterClose(Runnable action) {
        reader.runAfterClose(action);
    }

    HealthCheck health(String subject) {
        return reader.health("event_reader", subject);
    }
}
