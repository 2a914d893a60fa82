package org.efaah.it;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.CreatedAh;
import org.efaah.verbs.DeviceAttributes;
import org.efaah.verbs.Gid;
import org.efaah.verbs.PortAttributes;
import org.efaah.verbs.QueuePairNumbers;
import org.efaah.verbs.VerbsProvider;
import org.efaah.verbs.WorkCompletion;

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
        long pd = real.allocatePd(context);
        lastPd = pd;
        return pd;
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

    // The datagram path passes straight through: only AH creates and destroys are counted.

    @Override
    public long createCq(long context, int entries) {
        long cq = real.createCq(context, entries);
        lastCq = cq;
        return cq;
    }

    @Override
    public void destroyCq(long cq) {
        real.destroyCq(cq);
    }

    @Override
    public long registerMemory(long pd, ByteBuffer buffer) {
        return real.registerMemory(pd, buffer);
    }

    @Override
    public void deregisterMemory(long mr) {
        real.deregisterMemory(mr);
    }

    @Override
    public QueuePairNumbers createUdQp(long pd, long sendCq, long recvCq, int maxSendWr, int maxRecvWr) {
        return real.createUdQp(pd, sendCq, recvCq, maxSendWr, maxRecvWr);
    }

    @Override
    public void activateUdQp(long qp, int portNum, int pkeyIndex, int qkey) {
        real.activateUdQp(qp, portNum, pkeyIndex, qkey);
    }

    @Override
    public void destroyQp(long qp) {
        real.destroyQp(qp);
    }

    @Override
    public void postSend(long qp, long ah, int remoteQpn, int remoteQkey, long mr, int offset, int length, long wrId) {
        real.postSend(qp, ah, remoteQpn, remoteQkey, mr, offset, length, wrId);
    }

    @Override
    public void postReceive(long qp, long mr, int offset, int length, long wrId) {
        real.postReceive(qp, mr, offset, length, wrId);
    }

    @Override
    public int pollCq(long cq, WorkCompletion[] into) {
        return real.pollCq(cq, into);
    }

    @Override
    public AddressHandleAttributes initAhFromWc(long context, int portNum, WorkCompletion wc, long mr, int grhOffset) {
        return real.initAhFromWc(context, portNum, wc, mr, grhOffset);
    }

    @Override
    public org.efaah.verbs.GidType queryGidType(long context, int portNum, int index) {
        return real.queryGidType(context, portNum, index);
    }

    @Override
    public long openAsyncEvents(long context) {
        return real.openAsyncEvents(context);
    }

    @Override
    public List<org.efaah.verbs.AsyncEvent> awaitAsyncEvents(long channel, int timeoutMillis) {
        return real.awaitAsyncEvents(channel, timeoutMillis);
    }

    @Override
    public void wakeAsyncEvents(long channel) {
        real.wakeAsyncEvents(channel);
    }

    @Override
    public void closeAsyncEvents(long channel) {
        real.closeAsyncEvents(channel);
    }

    @Override
    public void close() {
        real.close();
    }

    @Override
    public int queryQpState(long qp) {
        return real.queryQpState(qp);
    }

    @Override
    public void resetQp(long qp) {
        real.resetQp(qp);
    }

    @Override
    public org.efaah.verbs.EfaVerbs efa() {
        return real.efa();
    }

    /** The handles last made, for tests that must reach the SPI with live ones. */
    volatile long lastPd;
    volatile long lastCq;
}
