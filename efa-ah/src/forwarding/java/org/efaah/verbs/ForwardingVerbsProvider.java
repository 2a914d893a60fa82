package org.efaah.verbs;

import org.efaah.verbs.spi.AsyncEvent;
import org.efaah.verbs.spi.AsyncEventVerbs;
import org.efaah.verbs.spi.CompletionChannelVerbs;
import org.efaah.verbs.spi.CreatedAh;
import org.efaah.verbs.spi.DatagramVerbs;
import org.efaah.verbs.spi.EfaVerbs;
import org.efaah.verbs.spi.NetworkChange;
import org.efaah.verbs.spi.NetworkVerbs;
import org.efaah.verbs.spi.QueuePairNumbers;
import org.efaah.verbs.spi.VerbsProvider;
import java.nio.ByteBuffer;
import java.util.List;

/**
 * A provider that passes every SPI call to another, for test providers that count, record or
 * break a few of them: a subclass overrides only what it changes. It offers each facet its
 * delegate offers (and answers EOPNOTSUPP for the others), as itself, so that an override of a
 * facet's verb is the one called.
 */
public abstract class ForwardingVerbsProvider
        implements VerbsProvider, DatagramVerbs, CompletionChannelVerbs, AsyncEventVerbs, NetworkVerbs {
    private final VerbsProvider delegate;

    protected ForwardingVerbsProvider(VerbsProvider delegate) {
        this.delegate = delegate;
    }

    /** {@return the provider every call goes to} */
    protected VerbsProvider delegate() {
        return delegate;
    }

    @Override
    public String name() {
        return delegate.name();
    }

    @Override
    public List<String> deviceNames() {
        return delegate.deviceNames();
    }

    @Override
    public long openDevice(String name) {
        return delegate.openDevice(name);
    }

    @Override
    public void closeDevice(long context) {
        delegate.closeDevice(context);
    }

    @Override
    public DeviceAttributes queryDevice(long context) {
        return delegate.queryDevice(context);
    }

    @Override
    public PortAttributes queryPort(long context, int portNum) {
        return delegate.queryPort(context, portNum);
    }

    @Override
    public Gid queryGid(long context, int portNum, int index) {
        return delegate.queryGid(context, portNum, index);
    }

    @Override
    public GidType queryGidType(long context, int portNum, int index) {
        return delegate.queryGidType(context, portNum, index);
    }

    @Override
    public long allocatePd(long context) {
        return delegate.allocatePd(context);
    }

    @Override
    public void deallocatePd(long pd) {
        delegate.deallocatePd(pd);
    }

    @Override
    public CreatedAh createAh(long pd, AddressHandleAttributes attributes) {
        return delegate.createAh(pd, attributes);
    }

    @Override
    public void destroyAh(long ah) {
        delegate.destroyAh(ah);
    }

    @Override
    public long createCq(long context, int entries) {
        return delegate.datagrams().createCq(context, entries);
    }

    @Override
    public void destroyCq(long cq) {
        delegate.datagrams().destroyCq(cq);
    }

    @Override
    public long registerMemory(long pd, ByteBuffer buffer) {
        return delegate.datagrams().registerMemory(pd, buffer);
    }

    @Override
    public void deregisterMemory(long mr) {
        delegate.datagrams().deregisterMemory(mr);
    }

    @Override
    public QueuePairNumbers createUdQp(long pd, long sendCq, long recvCq, int maxSendWr, int maxRecvWr) {
        return delegate.datagrams().createUdQp(pd, sendCq, recvCq, maxSendWr, maxRecvWr);
    }

    @Override
    public void activateUdQp(long qp, int portNum, int pkeyIndex, int qkey) {
        delegate.datagrams().activateUdQp(qp, portNum, pkeyIndex, qkey);
    }

    @Override
    public void destroyQp(long qp) {
        delegate.datagrams().destroyQp(qp);
    }

    @Override
    public int queryQpState(long qp) {
        return delegate.datagrams().queryQpState(qp);
    }

    @Override
    public void resetQp(long qp) {
        delegate.datagrams().resetQp(qp);
    }

    @Override
    public void moveQpToError(long qp) {
        delegate.datagrams().moveQpToError(qp);
    }

    @Override
    public void postSend(long qp, long ah, int remoteQpn, int remoteQkey, long mr, int offset, int length, long wrId) {
        delegate.datagrams().postSend(qp, ah, remoteQpn, remoteQkey, mr, offset, length, wrId);
    }

    @Override
    public int postSends(long qp, long ah, int remoteQpn, int remoteQkey, long mr, int[] offsets, int[] lengths,
                         long[] wrIds, int count) {
        return delegate.datagrams().postSends(qp, ah, remoteQpn, remoteQkey, mr, offsets, lengths, wrIds, count);
    }

    @Override
    public int postSends(long qp, long ah, int remoteQpn, int remoteQkey, long mr, SendRequests requests, int count) {
        return delegate.datagrams().postSends(qp, ah, remoteQpn, remoteQkey, mr, requests, count);
    }

    @Override
    public void postReceive(long qp, long mr, int offset, int length, long wrId) {
        delegate.datagrams().postReceive(qp, mr, offset, length, wrId);
    }

    @Override
    public int postReceives(long qp, long mr, int[] offsets, int length, long[] wrIds, int count) {
        return delegate.datagrams().postReceives(qp, mr, offsets, length, wrIds, count);
    }

    @Override
    public int pollCq(long cq, WorkCompletion[] into) {
        return delegate.datagrams().pollCq(cq, into);
    }

    @Override
    public AddressHandleAttributes initAhFromWc(long context, int portNum, WorkCompletion wc, long mr, int grhOffset) {
        return delegate.datagrams().initAhFromWc(context, portNum, wc, mr, grhOffset);
    }

    @Override
    public long openAsyncEvents(long context) {
        return delegate.asyncEvents().openAsyncEvents(context);
    }

    @Override
    public List<AsyncEvent> awaitAsyncEvents(long channel, int timeoutMillis) {
        return delegate.asyncEvents().awaitAsyncEvents(channel, timeoutMillis);
    }

    @Override
    public void wakeAsyncEvents(long channel) {
        delegate.asyncEvents().wakeAsyncEvents(channel);
    }

    @Override
    public void closeAsyncEvents(long channel) {
        delegate.asyncEvents().closeAsyncEvents(channel);
    }

    @Override
    public Object networkSource() {
        return delegate.networkChanges().networkSource();
    }

    @Override
    public int queryGidNetdev(long context, int portNum, int index) {
        return delegate.networkChanges().queryGidNetdev(context, portNum, index);
    }

    @Override
    public long openNetworkChanges() {
        return delegate.networkChanges().openNetworkChanges();
    }

    @Override
    public void requestNetworkDump(long channel, boolean links) {
        delegate.networkChanges().requestNetworkDump(channel, links);
    }

    @Override
    public java.util.List<NetworkChange> awaitNetworkChanges(long channel, int timeoutMillis) {
        return delegate.networkChanges().awaitNetworkChanges(channel, timeoutMillis);
    }

    @Override
    public void wakeNetworkChanges(long channel) {
        delegate.networkChanges().wakeNetworkChanges(channel);
    }

    @Override
    public void closeNetworkChanges(long channel) {
        delegate.networkChanges().closeNetworkChanges(channel);
    }

    @Override
    public long createCompletionChannel(long context) {
        return delegate.completionChannels().createCompletionChannel(context);
    }

    @Override
    public long createCq(long context, int entries, long channel) {
        return delegate.completionChannels().createCq(context, entries, channel);
    }

    @Override
    public void requestCqNotification(long cq) {
        delegate.completionChannels().requestCqNotification(cq);
    }

    @Override
    public int awaitCqEvents(long channel, int timeoutMillis) {
        return delegate.completionChannels().awaitCqEvents(channel, timeoutMillis);
    }

    @Override
    public void stopCompletionChannel(long channel) {
        delegate.completionChannels().stopCompletionChannel(channel);
    }

    @Override
    public void wakeCompletionChannel(long channel) {
        delegate.completionChannels().wakeCompletionChannel(channel);
    }

    @Override
    public int completionChannelFd(long channel) {
        return delegate.completionChannels().completionChannelFd(channel);
    }

    @Override
    public void destroyCompletionChannel(long channel) {
        delegate.completionChannels().destroyCompletionChannel(channel);
    }

    @Override
    public long createChannelPoller() {
        return delegate.completionChannels().createChannelPoller();
    }

    @Override
    public void armChannelPoller(long poller, int fd) {
        delegate.completionChannels().armChannelPoller(poller, fd);
    }

    @Override
    public int awaitChannelPoller(long poller, int timeoutMillis, int[] ready) {
        return delegate.completionChannels().awaitChannelPoller(poller, timeoutMillis, ready);
    }

    @Override
    public void wakeChannelPoller(long poller) {
        delegate.completionChannels().wakeChannelPoller(poller);
    }

    @Override
    public void destroyChannelPoller(long poller) {
        delegate.completionChannels().destroyChannelPoller(poller);
    }

    @Override
    public DatagramVerbs datagrams() {
        delegate.datagrams();
        return this;
    }

    @Override
    public CompletionChannelVerbs completionChannels() {
        delegate.completionChannels();
        return this;
    }

    @Override
    public AsyncEventVerbs asyncEvents() {
        delegate.asyncEvents();
        return this;
    }

    @Override
    public NetworkVerbs networkChanges() {
        delegate.networkChanges();
        return this;
    }

    @Override
    public EfaVerbs efa() {
        return delegate.efa();
    }

    @Override
    public void close() {
        delegate.close();
    }
}
