package org.efaah.verbs;

import org.efaah.verbs.spi.CompletionChannelVerbs;
import org.efaah.verbs.spi.EventChannel;
import org.efaah.verbs.spi.EfaVerbs;
import org.efaah.verbs.spi.VerbsProvider;

/**
 * A completion queue ({@code struct ibv_cq}), made by {@link Device#createCq(int)}, or with a
 * completion channel of its own by {@link Device#createCqWithEvents(int)}: then a thread can sleep
 * until a completion arrives ({@link #requestNotification()}, poll once more, {@link #awaitEvents}).
 * Thread-safe; {@link #close()} ends waits in progress, waits for a poll in progress, and is idempotent.
 */
public final class CompletionQueue implements AutoCloseable {
    private final Device device;
    final long handle;
    private final int entries;
    private final Guard guard = new Guard("completion queue");
    /** Made by {@code efadv_create_cq} with the sender's GID: polled through {@link EfaVerbs}. */
    private final boolean withSourceGid;
    /** Its completion channel's handle, 0 when it has none. */
    private final long channel;
    /** The channel in the SPI's one channel shape; null when there is none. */
    private final EventChannel<Integer> events;

    CompletionQueue(Device device, long handle, int entries) {
        this(device, handle, entries, false, 0);
    }

    CompletionQueue(Device device, long handle, int entries, boolean withSourceGid, long channel) {
        this.device = device;
        this.handle = handle;
        this.entries = entries;
        this.withSourceGid = withSourceGid;
        this.channel = channel;
        this.events = channel == 0 ? null : device.provider().completionChannels().completionChannel(channel);
    }

    /** {@return whether the CQ has a completion channel: {@link #requestNotification} and {@link #awaitEvents} work} */
    public boolean hasEvents() {
        return channel != 0;
    }

    /**
     * {@code ibv_req_notify_cq(3)}: arms the CQ for one event on its next completion. Completions
     * already queued give none, so poll once more after arming before {@link #awaitEvents}.
     *
     * @throws IllegalStateException if closed, or the CQ has no channel
     * @throws VerbsException        with the provider's errno
     */
    public void requestNotification() {
        requireEvents();
        guard.enter();
        try {
            device.provider().completionChannels().requestCqNotification(handle);
        } finally {
            guard.exit();
        }
    }

    /**
     * Waits up to {@code timeoutMillis} for an event of an armed CQ ({@code ibv_get_cq_event(3)},
     * acknowledged in batches). Not woken by {@link Thread#interrupt()} by itself: {@link #wake()}
     * ends it. One waiter at a time.
     *
     * @param timeoutMillis the longest wait, ms; 0 does not wait
     * @return the events taken (0 on timeout); {@link CompletionChannelVerbs#CHANNEL_STOPPED} once
     *         {@link #stopWaiting()} or {@link #close()} was called
     * @throws IllegalStateException if closed, or the CQ has no channel
     * @throws VerbsException        with the errno of the failing call
     */
    public int awaitEvents(int timeoutMillis) {
        requireEvents();
        guard.enter();
        try {
            return events.await(timeoutMillis);
        } finally {
            guard.exit();
        }
    }

    /**
     * Ends the wait in {@link #awaitEvents} in progress, or the next one, with 0 events; does nothing
     * once closed or without a channel. Any thread.
     */
    public void wake() {
        // Never waits: it runs inside Thread.interrupt() of the waiting thread.
        if (channel == 0 || !guard.tryEnter()) {
            return;
        }
        try {
            events.wake();
        } finally {
            guard.exit();
        }
    }

    /**
     * Ends every wait in {@link #awaitEvents}, in progress or later, at once; does nothing once closed
     * or without a channel.
     */
    public void stopWaiting() {
        if (channel == 0) {
            return;
        }
        try {
            guard.enter();
        } catch (IllegalStateException closed) {
            return;
        }
        try {
            events.stop();
        } finally {
            guard.exit();
        }
    }

    /**
     * The completion channel's file descriptor, readable when an event is pending: for callers that
     * wait on many CQs with {@code poll(2)} or {@code epoll(7)}, then {@link #awaitEvents awaitEvents(0)}.
     *
     * @return the fd; -1 where the provider has none (the mock)
     * @throws IllegalStateException if closed, or the CQ has no channel
     */
    public int eventFd() {
        requireEvents();
        return guard.get(() -> device.provider().completionChannels().completionChannelFd(channel));
    }

    private void requireEvents() {
        if (channel == 0) {
            throw new IllegalStateException("the CQ has no completion channel (made by Device.createCq, not "
                    + "createCqWithEvents)");
        }
    }

    /** {@return whether receive completions carry the sender's GID ({@link Device#createCqWithSourceGid})} */
    public boolean withSourceGid() {
        return withSourceGid;
    }

    /**
     * The device that owns this CQ.
     *
     * @return the device the CQ was created on
     */
    public Device device() {
        return device;
    }

    /** {@return the number of CQEs it was created with} */
    public int entries() {
        return entries;
    }

    /**
     * {@code ibv_poll_cq(3)}: fills up to {@code into.length} completions, without blocking.
     *
     * @return how many were filled, 0 when none was ready
     * @throws IllegalStateException if closed
     * @throws NullPointerException  if {@code into} or a holder to be filled is null; the completions
     *                               this poll took are not lost: the next poll returns them first
     * @throws VerbsException        if the provider fails
     * @param into holders overwritten in order; their previous values are lost
     */
    public int poll(WorkCompletion[] into) {
        boolean slot = guard.enterStep();
        try {
            return withSourceGid ? device.provider().efa().pollCqWithSourceGid(handle, into)
                    : device.provider().datagrams().pollCq(handle, into);
        } finally {
            guard.exit(slot);
        }
    }

    Guard guard() {
        return guard;
    }

    /**
     * Whether the CQ is closed: polling it is then refused.
     *
     * @return true once {@link #close()} has completed
     */
    public boolean isClosed() {
        return guard.isClosed();
    }

    /**
     * {@code ibv_destroy_cq(3)}, after ending every wait on its channel, and then
     * {@code ibv_destroy_comp_channel(3)}; fails with EBUSY while a QP uses it.
     */
    @Override
    public void close() {
        stopWaiting();
        RuntimeException[] channelFailure = {null};
        guard.close(() -> {
            device.provider().datagrams().destroyCq(handle);
            device.forget(this);
            channelFailure[0] = destroyChannel();
        });
        if (channelFailure[0] != null) {
            throw channelFailure[0];
        }
    }

    /** Destroys the channel, if any, once the CQ is gone; its failure, or null. */
    private RuntimeException destroyChannel() {
        if (channel == 0) {
            return null;
        }
        try {
            events.close();
            return null;
        } catch (RuntimeException e) {
            return e;
        }
    }

    /**
     * For {@link Device#close()}, after its QPs are gone: destroys the CQ and counts it closed
     * even when the destroy fails, since the context's close frees it anyway.
     */
    RuntimeException closeUnderDevice() {
        stopWaiting();
        RuntimeException[] channelFailure = {null};
        RuntimeException failure = Device.closeAnyway(guard, () -> {
            device.provider().datagrams().destroyCq(handle);
            channelFailure[0] = destroyChannel();
        });
        return failure != null ? failure : channelFailure[0];
    }
}
