package org.efaah.verbs.mock;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.LongPredicate;
import org.efaah.verbs.Errno;
import org.efaah.verbs.VerbsException;

/**
 * The open channels of one kind (async events, network changes) by handle. The map is guarded by
 * this object's monitor, which is never held while a wait runs: a wait looks its channel up, then
 * waits on the channel alone.
 */
final class MockChannels<E> {
    private final MockVerbsProvider provider;
    private final String kind;
    private final Map<Long, MockChannel<E>> open = new HashMap<>();

    MockChannels(MockVerbsProvider provider, String kind) {
        this.provider = provider;
        this.kind = kind;
    }

    synchronized long open(long context) {
        long h = provider.newHandle();
        open.put(h, new MockChannel<>(context));
        return h;
    }

    /** What {@link MockChannel#await} took; empty once the channel is stopped (its context closed). */
    List<E> await(long handle, int timeoutMillis, String operation) {
        List<E> taken = get(handle, operation).await(timeoutMillis);
        return taken == null ? List.of() : taken;
    }

    void wake(long handle, String operation) {
        get(handle, operation).wake();
    }

    synchronized void close(long handle, String operation) {
        MockChannel<E> c = open.remove(handle);
        if (c == null) {
            throw unknown(operation);
        }
        c.stop();
    }

    /** Closes, and stops, every channel of a context for which {@code closing} holds. */
    synchronized void closeIf(LongPredicate closing) {
        open.values().removeIf(c -> {
            boolean closes = closing.test(c.context);
            if (closes) {
                c.stop();
            }
            return closes;
        });
    }

    synchronized void forEach(Consumer<MockChannel<E>> action) {
        open.values().forEach(action);
    }

    synchronized int size() {
        return open.size();
    }

    synchronized MockChannel<E> get(long handle, String operation) {
        MockChannel<E> c = open.get(handle);
        if (c == null) {
            throw unknown(operation);
        }
        return c;
    }

    private VerbsException unknown(String operation) {
        return new VerbsException(operation, Errno.EINVAL, "unknown " + kind + " channel");
    }
}
