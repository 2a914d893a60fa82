package org.efaah.it;

import java.util.concurrent.atomic.AtomicLong;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.CreatedAh;
import org.efaah.verbs.ForwardingVerbsProvider;
import org.efaah.verbs.VerbsProvider;

/**
 * Counts the {@code ibv_create_ah} and {@code ibv_destroy_ah} calls that reach a real provider,
 * and their time; everything else passes straight through.
 */
final class CountingProvider extends ForwardingVerbsProvider {
    final AtomicLong creates = new AtomicLong();
    final AtomicLong destroys = new AtomicLong();
    final AtomicLong createNanos = new AtomicLong();
    final AtomicLong destroyNanos = new AtomicLong();
    /** The handles last made, for tests that must reach the SPI with live ones. */
    volatile long lastPd;
    volatile long lastCq;

    CountingProvider(VerbsProvider real) {
        super(real);
    }

    @Override
    public long allocatePd(long context) {
        long pd = delegate().allocatePd(context);
        lastPd = pd;
        return pd;
    }

    @Override
    public CreatedAh createAh(long pd, AddressHandleAttributes attributes) {
        creates.incrementAndGet();
        long t0 = System.nanoTime();
        try {
            return delegate().createAh(pd, attributes);
        } finally {
            createNanos.addAndGet(System.nanoTime() - t0);
        }
    }

    @Override
    public void destroyAh(long ah) {
        destroys.incrementAndGet();
        long t0 = System.nanoTime();
        try {
            delegate().destroyAh(ah);
        } finally {
            destroyNanos.addAndGet(System.nanoTime() - t0);
        }
    }

    @Override
    public long createCq(long context, int entries) {
        long cq = delegate().createCq(context, entries);
        lastCq = cq;
        return cq;
    }
}
