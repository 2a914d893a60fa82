package org.efaah.verbs.spi;

import org.efaah.verbs.Errno;
import org.efaah.verbs.VerbsException;

/**
 * Completion channels: a thread sleeps until its CQ has a completion. A provider offers them
 * through {@link VerbsProvider#completionChannels()}; without them its CQs are polled.
 */
public interface CompletionChannelVerbs {

    /**
     * {@code ibv_create_comp_channel(3)}: a channel for one CQ ({@link #createCq(long, int, long)}),
     * with a stop signal ({@link #stopCompletionChannel}) beside it.
     *
     * @param context a handle {@link VerbsProvider#openDevice} returned
     * @return a channel handle, destroyed with {@link #destroyCompletionChannel} after its CQ
     * @throws VerbsException with the errno of the failing call; EOPNOTSUPP from a provider without channels
     */
    long createCompletionChannel(long context);

    /**
     * {@code ibv_create_cq(3)} whose completions are announced on {@code channel}; a channel takes one CQ.
     * {@link DatagramVerbs#destroyCq} acknowledges the events still unacknowledged before it destroys the CQ
     * ({@code ibv_destroy_cq} waits for every event it reported to be acknowledged).
     *
     * @param context a handle {@link VerbsProvider#openDevice} returned
     * @param entries the minimum number of CQEs, 1 .. the device's {@code max_cqe}
     * @param channel a handle {@link #createCompletionChannel} returned, with no CQ yet
     * @return a CQ handle, freed with {@link DatagramVerbs#destroyCq}
     * @throws VerbsException EBUSY when the channel has a CQ; on EFA EOPNOTSUPP where the device lacks
     *                        CQ notifications ({@code efa_create_cq_ex}: {@code EFA_DEV_CAP(CQ_NOTIFICATIONS)})
     */
    long createCq(long context, int entries, long channel);

    /**
     * {@code ibv_req_notify_cq(3)} with {@code solicited_only} 0: the next completion added to the CQ
     * puts one event on its channel. Completions already in the CQ give none: poll once more after it.
     *
     * @param cq a handle {@link #createCq(long, int, long)} returned
     * @throws VerbsException with the provider's errno
     */
    void requestCqNotification(long cq);

    /**
     * Waits up to {@code timeoutMillis} for the channel's events ({@code ibv_get_cq_event(3)}), and
     * takes every one pending; acknowledges them in batches. One waiter per channel at a time.
     *
     * @param channel       a handle {@link #createCompletionChannel} returned
     * @param timeoutMillis the longest wait, ms; 0 does not wait
     * @return the events taken, 0 on timeout or {@link #wakeCompletionChannel}; {@link #CHANNEL_STOPPED}
     *         once {@link #stopCompletionChannel}
     *         was called
     * @throws VerbsException with the errno of the failing call
     */
    int awaitCqEvents(long channel, int timeoutMillis);

    /** What {@link #awaitCqEvents} returns once its channel is stopped. */
    int CHANNEL_STOPPED = -1;

    /**
     * Makes every wait on the channel, in progress or later, return {@link #CHANNEL_STOPPED} at once.
     * Any thread, any time before the channel is destroyed.
     *
     * @param channel a handle {@link #createCompletionChannel} returned
     */
    void stopCompletionChannel(long channel);

    /**
     * Ends the wait on the channel in progress, or the next one, with 0 events: how a waiting
     * thread's interrupt reaches a wait in {@code poll(2)}. Any thread, any time before the channel
     * is destroyed.
     *
     * @param channel a handle {@link #createCompletionChannel} returned
     */
    void wakeCompletionChannel(long channel);

    /**
     * The channel's file descriptor, readable when an event is pending, for callers that wait on
     * many channels with {@code poll(2)} or {@code epoll(7)}.
     *
     * @param channel a handle {@link #createCompletionChannel} returned
     * @return the fd; -1 where the provider has none (the mock)
     */
    int completionChannelFd(long channel);

    /**
     * A readiness set ({@code epoll(7)}) for a thread that waits for many channels' fds at once, as
     * the JDK's poller thread waits for the sockets of parked virtual threads; with its own wake.
     *
     * @return a poller handle, freed with {@link #destroyChannelPoller}
     * @throws VerbsException EOPNOTSUPP where the provider's channels have no fds (the mock: its
     *                        waits park by themselves); else the errno of the failing call
     */
    default long createChannelPoller() {
        throw new VerbsException("epoll_create1", Errno.EOPNOTSUPP, "this provider's channels have no fds");
    }

    /**
     * Makes the poller report {@code fd}'s next readiness, once ({@code EPOLLONESHOT}); an fd
     * already readable reports at the next {@link #awaitChannelPoller}.
     *
     * @param poller a handle {@link #createChannelPoller} returned
     * @param fd     a channel's fd ({@link #completionChannelFd})
     * @throws VerbsException with the errno of the failing call (EBADF for an fd closed meanwhile)
     */
    default void armChannelPoller(long poller, int fd) {
        throw new VerbsException("epoll_ctl", Errno.EOPNOTSUPP, "this provider's channels have no fds");
    }

    /**
     * Waits up to {@code timeoutMillis} for an armed fd's readiness. One waiter per poller.
     *
     * @param poller        a handle {@link #createChannelPoller} returned
     * @param timeoutMillis the longest wait, ms; 0 does not wait
     * @param ready         receives the fds found readable (each then unarmed)
     * @return how many of {@code ready} were filled; 0 on timeout or {@link #wakeChannelPoller}
     * @throws VerbsException with the errno of the failing call
     */
    default int awaitChannelPoller(long poller, int timeoutMillis, int[] ready) {
        throw new VerbsException("epoll_wait", Errno.EOPNOTSUPP, "this provider's channels have no fds");
    }

    /**
     * Ends the wait on the poller in progress, or the next one. Any thread, before its destroy.
     *
     * @param poller a handle {@link #createChannelPoller} returned
     */
    default void wakeChannelPoller(long poller) {
        throw new VerbsException("eventfd_write", Errno.EOPNOTSUPP, "this provider's channels have no fds");
    }

    /**
     * Frees the poller; no wait may be in progress.
     *
     * @param poller a handle {@link #createChannelPoller} returned; invalid afterwards
     */
    default void destroyChannelPoller(long poller) {
        throw new VerbsException("close", Errno.EOPNOTSUPP, "this provider's channels have no fds");
    }

    /**
     * {@code ibv_destroy_comp_channel(3)}.
     *
     * @param channel a handle {@link #createCompletionChannel} returned; invalid after success
     * @throws VerbsException EBUSY while its CQ exists
     */
    void destroyCompletionChannel(long channel);

    /**
     * The channel {@code channel} in the one channel shape: {@link #awaitCqEvents} (a count of
     * events, {@link #CHANNEL_STOPPED} once stopped), {@link #wakeCompletionChannel},
     * {@link #stopCompletionChannel} and {@link #destroyCompletionChannel}.
     *
     * @param channel a handle {@link #createCompletionChannel} returned
     * @return the channel
     */
    default EventChannel<Integer> completionChannel(long channel) {
        return EventChannel.of(channel, this::awaitCqEvents, this::wakeCompletionChannel, this::stopCompletionChannel,
                this::destroyCompletionChannel);
    }
}
