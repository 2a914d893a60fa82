package org.efaah.it;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.CreatedAh;
import org.efaah.verbs.DeviceAttributes;
import org.efaah.verbs.Gid;
import org.efaah.verbs.PortAttributes;
import org.efaah.verbs.VerbsProvider;

/** Counts the {@code ibv_create_ah} and {@code ibv_destroy_ah} calls that reach a real provider, and their time. */
final class CountingProvider implements VerbsProvider {
    private final VerbsProvider real;
    final AtomicLong creates = new AtomicLong();
    final AtomicLong destroys = new AtomicLong();
    final AtomicLong createNanos = new AtomicLong();
    final AtomicLong destroyNanos = new AtomicLong();

    CountingProvider(VerbsProvider real) {
        this.real = real;
    }

    @Override
    public String name() {
        return real.name();
    }

    @Override
    public List<String> deviceNames() {
        return real.deviceNames();
    }

    @Override
    public long openDevice(String name) {
        return real.openDevice(name);
    }

    @Override
    public void closeDevice(long context) {
        real.closeDevice(context);
    }

    @Override
    public DeviceAttributes queryDevice(long context) {
        return real.queryDevice(context);
    }

    @Override
    public PortAttributes queryPort(long context, int portNum) {
        return real.queryPort(context, portNum);
    }

    @Override
    public Gid queryGid(long context, int portNum, int index) {
        return real.queryGid(context, portNum, index);
    }

    @Override
    public long allocatePd(long context) {
        return real.allocatePd(context);
    }

    @Override
    public void deallocatePd(long pd) {
        real.deallocatePd(pd);
    }

    @Override
    public CreatedAh createAh(long pd, AddressHandleAttributes attributes) {
        creates.incrementAndGet();
        long t0 = System.nanoTime();
        try {
            return real.createAh(pd, attributes);
        } finally {
            createNanos.addAndGet(System.nanoTime() - t0);
        }
    }

    @Override
    public void destroyAh(long ah) {
        destroys.incrementAndGet();
        long t0 = System.nanoTime();
        try {
            real.destroyAh(ah);
        } finally {
            destroyNanos.addAndGet(System.nanoTime() - t0);
        }
    }

    @Override
    public void close() {
        real.close();
    }
}
