package org.efaah.cache;

import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import org.efaah.health.HealthCheck;
import org.efaah.roce.NetworkEvent;
import org.efaah.roce.RoceNetwork;
import org.efaah.verbs.Device;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A cache's following of the network under RoCE ports ({@link RoceNetwork#subscribe}): a
 * neighbour whose MAC changed or that was deleted invalidates the AHs to it on that port, in every
 * PD; a change of the port's netdev (MAC, MTU, link down, deletion) or lost notifications
 * invalidate the whole port. Goes through the cache's public invalidation, so it never waits.
 * Devices without a RoCE port never start the watcher.
 */
final class NetworkInvalidation {
    private static final Logger LOG = LoggerFactory.getLogger(AddressHandleCache.class);

    private final AddressHandleCache cache;
    /** Per device, its subscription; null inside while being subscribed. */
    private final ConcurrentHashMap<Device, AtomicReference<RoceNetwork.Subscription>> subscriptions =
            new ConcurrentHashMap<>();

    NetworkInvalidation(AddressHandleCache cache) {
        this.cache = cache;
    }

    /**
     * Starts listening to {@code device}'s network events, once per device. Not inside the map's
     * compute: subscribing reads the device's GID tables.
     */
    void listenTo(Device device) {
        if (subscriptions.containsKey(device) || cache.closed) {
            return;
        }
        AtomicReference<RoceNetwork.Subscription> mine = new AtomicReference<>();
        if (subscriptions.putIfAbsent(device, mine) != null) {
            return;
        }
        RoceNetwork.Subscription s;
        try {
            s = RoceNetwork.subscribe(device, this::onNetworkEvent);
        } catch (IllegalStateException closedDevice) {
            subscriptions.remove(device, mine);
            return; // the acquire on it fails on its own
        } catch (RuntimeException e) {
            subscriptions.remove(device, mine);
            throw e;
        }
        mine.set(s);
        if (cache.closed || subscriptions.get(device) != mine) {
            // Raced with close() or forget(): they may have taken our map entry before the
            // subscription was in it, and so ended nothing. Ending twice is harmless.
            subscriptions.remove(device, mine);
            s.close();
        }
    }

    /** Forgets a device being closed, which ends its subscriptions itself: the map must not keep it reachable. */
    void forget(Device device) {
        end(subscriptions.remove(device));
    }

    /** Stops listening to every device (the cache is closing); may wait for the network reader to stop. */
    void stopListening() {
        subscriptions.forEach((device, s) -> {
            if (subscriptions.remove(device, s)) {
                end(s);
            }
        });
    }

    /** The health of the network reader {@code device}'s AHs follow; empty when none. */
    Optional<HealthCheck> health(Device device) {
        AtomicReference<RoceNetwork.Subscription> s = subscriptions.get(device);
        RoceNetwork.Subscription subscription = s == null ? null : s.get();
        return subscription == null ? Optional.empty() : subscription.health();
    }

    private static void end(AtomicReference<RoceNetwork.Subscription> s) {
        RoceNetwork.Subscription subscription = s == null ? null : s.get();
        if (subscription != null) {
            subscription.close();
        }
    }

    private void onNetworkEvent(NetworkEvent event) {
        int n = cache.invalidateByNetwork(event.device(), event.portNum(), event.kind().isNeighbour() ? event.dgid() : null);
        if (n > 0) {
            LOG.info("{} on {} port {} (ifindex {}{}): {}; {} AH(s) invalidated", event.kind(), event.device().name(),
                    event.portNum(), event.netdev(), event.dgid() == null ? "" : ", " + event.dgid(), event.detail(), n);
        } else {
            LOG.debug("{} on {} port {}: {}; no AH to invalidate", event.kind(), event.device().name(), event.portNum(),
                    event.detail());
        }
    }
}
