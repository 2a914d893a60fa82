package org.efaah.verbs.mock;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.efaah.verbs.spi.AsyncEvent;
import org.efaah.verbs.Errno;
import org.efaah.verbs.VerbsException;

/**
 * The mock's asynchronous event channels, one per context that opened one: a queue of raised
 * events, read and drained by {@link #await}, which returns on an event, a wake-up, the timeout,
 * or the close of the context. One lock (this object's monitor) guards them all.
 */
final class MockEvents {
    private final MockVerbsProvider provider;
    private final Map<Long, Channel> channels = new HashMap<>();

    MockEvents(MockVerbsProvider provider) {
        this.provider = provider;
    }

    private static final class Channel {
        final long context;
        final List<AsyncEvent> pending = new ArrayList<>();
        boolean woken;

        Channel(long context) {
            this.context = context;
        }
    }

    synchronized long open(long context) {
        long h = provider.newHandle();
        channels.put(h, new Channel(context));
        return h;
    }

    synchronized List<AsyncEvent> await(long channel, int timeoutMillis) {
        Channel c = channel(channel, "ibv_get_async_event");
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Math.max(0, timeoutMillis));
        long left;
        while (c.pending.isEmpty() && !c.woken && (left = deadline - System.nanoTime()) > 0) {
            try {
                TimeUnit.NANOSECONDS.timedWait(this, left);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        c.woken = false;
        List<AsyncEvent> events = List.copyOf(c.pending);
        c.pending.clear();
        return events;
    }

    synchronized void wake(long channel) {
        channel(channel, "efa_ah_async_wake").woken = true;
        notifyAll();
    }

    synchronized void close(long channel) {
        if (channels.remove(channel) == null) {
            throw new VerbsException("efa_ah_async_close", Errno.EINVAL, "unknown event channel");
        }
    }

    /** Queues {@code event} on the channel of each context in {@code contexts} that has one. */
    synchronized void raise(List<Long> contexts, AsyncEvent event) {
        for (Channel c : channels.values()) {
            if (contexts.contains(c.context)) {
                c.pending.add(event);
            }
        }
        notifyAll();
    }

    /** The context is closed: its channel goes with it (ibv_close_device frees the async fd). */
    synchronized void closeContext(long context) {
        channels.values().removeIf(c -> c.context == context);
        notifyAll();
    }

    private Channel channel(long handle, String operation) {
        Channel c = channels.get(handle);
        if (c == null) {
            throw new VerbsException(operation, Errno.EINVAL, "unknown event channel");
        }
        return c;
    }
}
