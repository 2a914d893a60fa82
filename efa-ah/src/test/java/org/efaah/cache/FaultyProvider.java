package org.efaah.cache;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.CreatedAh;
import org.efaah.verbs.ForwardingVerbsProvider;
import org.efaah.verbs.mock.MockVerbsProvider;

/**
 * The mock behind a provider that can be told to throw any {@link Throwable} from its next AH
 * create or destroy (as JavaCPP throws {@link OutOfMemoryError} when native memory runs short),
 * to make creates wait on a gate, and that records the attributes every create was given.
 */
final class FaultyProvider extends ForwardingVerbsProvider {
    final MockVerbsProvider mock;
    final List<AddressHandleAttributes> created = new CopyOnWriteArrayList<>();
    private final AtomicReference<Throwable> nextCreateFailure = new AtomicReference<>();
    private final AtomicReference<Throwable> nextDestroyFailure = new AtomicReference<>();
    volatile java.util.concurrent.CountDownLatch createGate;
    /** When set, called with each created AH's handle after the create, and before each destroy. */
    volatile java.util.function.LongConsumer onCreated;
    volatile java.util.function.LongConsumer onDestroy;
    volatile java.util.concurrent.CountDownLatch createEntered;
    /** When set, called with each PD's handle before it is deallocated. */
    volatile java.util.function.LongConsumer onDeallocatePd;
    /** When set, called before the device's event channel is closed (inside {@code Device.close()}, before its listeners). */
    volatile Runnable onCloseAsyncEvents;

    FaultyProvider(MockVerbsProvider mock) {
        super(mock);
        this.mock = mock;
    }

    /** The next create throws {@code t} without reaching the device. */
    void failNextCreate(Throwable t) {
        nextCreateFailure.set(t);
    }

    /** The next destroy throws {@code t}; the AH stays on the device. */
    void failNextDestroy(Throwable t) {
        nextDestroyFailure.set(t);
    }

    @Override
    public CreatedAh createAh(long pd, AddressHandleAttributes attributes) {
        java.util.concurrent.CountDownLatch entered = createEntered;
        if (entered != null) {
            entered.countDown();
        }
        java.util.concurrent.CountDownLatch gate = createGate;
        if (gate != null) {
            try {
                gate.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        Throwable t = nextCreateFailure.getAndSet(null);
        if (t != null) {
            throw sneaky(t);
        }
        created.add(attributes);
        CreatedAh ah = mock.createAh(pd, attributes);
        java.util.function.LongConsumer hook = onCreated;
        if (hook != null) {
            hook.accept(ah.handle());
        }
        return ah;
    }

    @Override
    public void destroyAh(long ah) {
        Throwable t = nextDestroyFailure.getAndSet(null);
        if (t != null) {
            throw sneaky(t);
        }
        java.util.function.LongConsumer hook = onDestroy;
        if (hook != null) {
            hook.accept(ah);
        }
        mock.destroyAh(ah);
    }

    @Override
    public void deallocatePd(long pd) {
        java.util.function.LongConsumer hook = onDeallocatePd;
        if (hook != null) {
            hook.accept(pd);
        }
        mock.deallocatePd(pd);
    }

    @Override
    public void closeAsyncEvents(long channel) {
        Runnable hook = onCloseAsyncEvents;
        if (hook != null) {
            hook.run();
        }
        mock.closeAsyncEvents(channel);
    }

    private static RuntimeException sneaky(Throwable t) {
        if (t instanceof RuntimeException r) {
            throw r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        throw new IllegalArgumentException("only unchecked throwables", t);
    }

    @Override
    public String name() {
        return "faulty-mock";
    }
}
