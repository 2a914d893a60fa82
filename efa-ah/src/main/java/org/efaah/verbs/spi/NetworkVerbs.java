package org.efaah.verbs.spi;

import java.util.List;

import org.efaah.verbs.VerbsException;

/**
 * Network changes under RoCE ports (rtnetlink(7)), read by one thread per
 * {@linkplain #networkSource() source}, and the netdev of each GID. A provider offers them through
 * {@link VerbsProvider#networkChanges()}; without them nothing follows the network under its
 * devices' RoCE ports (package {@code org.efaah.roce}).
 */
public interface NetworkVerbs {

    /**
     * {@code ibv_query_gid_ex(3)}: the index of the netdev the GID at {@code index} of port
     * {@code portNum}'s table belongs to ({@code ndev_ifindex}).
     *
     * @param context a handle {@link VerbsProvider#openDevice} returned
     * @param portNum the port, 1-based
     * @param index   the GID table index
     * @return the netdev's ifindex; 0 where the GID has none (InfiniBand)
     * @throws VerbsException ENODATA when the slot is empty, EINVAL for a port or index out of range
     * @throws VerbsException EOPNOTSUPP if the provider cannot tell
     */
    int queryGidNetdev(long context, int portNum, int index);

    /**
     * What this provider's network changes come from: providers that answer the same object share
     * one network reader (the native providers of a process all read the one kernel's rtnetlink).
     *
     * @return the source; by default this provider itself
     */
    default Object networkSource() {
        return this;
    }

    /**
     * Opens a channel of the host's link and IP neighbour changes: from now on every change is
     * read with {@link #awaitNetworkChanges}. Natively a {@code NETLINK_ROUTE} socket subscribed to
     * the link and neighbour groups, paired with an eventfd for {@link #wakeNetworkChanges}.
     *
     * @return a channel handle, closed with {@link #closeNetworkChanges}
     * @throws VerbsException with the errno of the system call that failed
     * @throws VerbsException EOPNOTSUPP if the provider reads no network changes
     */
    long openNetworkChanges();

    /**
     * Asks for every link ({@code links} true) or every IP neighbour: they come through
     * {@link #awaitNetworkChanges} marked {@linkplain NetworkChange#fromDump() from a dump}, then
     * one {@link NetworkChange.Type#DUMP_DONE}. One dump at a time per channel.
     *
     * @param channel a handle {@link #openNetworkChanges} returned
     * @param links   true for links ({@code RTM_GETLINK}), false for neighbours ({@code RTM_GETNEIGH})
     * @throws VerbsException with the errno of the request
     * @throws VerbsException EOPNOTSUPP if the provider reads no network changes
     */
    void requestNetworkDump(long channel, boolean links);

    /**
     * Waits up to {@code timeoutMillis} for changes, then returns those pending (more may follow
     * with the next call, at once); empty on timeout or when {@link #wakeNetworkChanges} was
     * called. One thread at a time per channel.
     *
     * @param channel       a handle {@link #openNetworkChanges} returned
     * @param timeoutMillis the longest wait, ms; 0 polls
     * @return the changes, oldest first
     * @throws VerbsException with the errno of a failed read, or of an error answer to a dump request
     * @throws VerbsException EOPNOTSUPP if the provider reads no network changes
     */
    List<NetworkChange> awaitNetworkChanges(long channel, int timeoutMillis);

    /**
     * Makes a wait on the channel, in progress or next, return promptly. Any thread, any time before close.
     *
     * @param channel a handle {@link #openNetworkChanges} returned
     * @throws VerbsException EOPNOTSUPP if the provider reads no network changes
     */
    void wakeNetworkChanges(long channel);

    /**
     * Frees the channel; no wait may be in progress.
     *
     * @param channel a handle {@link #openNetworkChanges} returned; invalid afterwards
     * @throws VerbsException EOPNOTSUPP if the provider reads no network changes
     */
    void closeNetworkChanges(long channel);

    /**
     * The channel {@code channel} in the one channel shape: {@link #awaitNetworkChanges},
     * {@link #wakeNetworkChanges} and {@link #closeNetworkChanges}; it has no stop.
     *
     * @param channel a handle {@link #openNetworkChanges} returned
     * @return the channel
     */
    default EventChannel<List<NetworkChange>> networkChannel(long channel) {
        return EventChannel.of(channel, this::awaitNetworkChanges, this::wakeNetworkChanges, null,
                this::closeNetworkChanges);
    }
}
