package org.efaah.cache;

import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.efaah.verbs.Device;
import org.efaah.verbs.NetworkEvent;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A cache's following of the network under RoCE ports ({@link Device#addNetworkListener}): a
 * neighbour whose MAC changed or that was deleted invalidates the AHs to it on that port, in every
 * PD; a change of the port's netdev (MAC, MTU, link down, deletion) or lost notifications
 * invalidate the whole port. Goes through the cache's public invalidation, so it never waits.
 * Devices without a RoCE port never start the watcher.
 */
final class NetworkInvalidation {
    private static final Logger LOG = LoggerFactory.getLogger(AddressHandleCache.class);

    private final AddressHandleCache cache;
    private final ConcurrentHashMap<Device, Consumer<NetworkEvent>> listeners = new ConcurrentHashMap<>();

    NetworkInvalidation(AddressHandleCache cache) {
        this.cache = cache;
    }

    /**
     * Starts listening to {@code device}'s network events, once per device. Not inside the map's
     * compute: subscribing reads the device's GID tables.
     */
    void listenTo(Device device) {
        if (listeners.containsKey(device) || cache.closed) {
            return;
        }
        Consumer<NetworkEvent> listener = this::onNetworkEvent;
        if (listeners.putIfAbsent(device, listener) != null) {
            return;
        }
        try {
            device.addNetworkListener(listener);
        } catch (IllegalStateException closedDevice) {
            listeners.remove(device, listener);
            return; // the acquire on it fails on its own
        } catch (RuntimeException e) {
            listeners.remove(device, listener);
            throw e;
        }
        if (cache.closed) {
            // Raced with close(): its stopListening may have taken our map entry before the add
            // above, and so removed nothing from the device. Removing twice is harmless.
            listeners.remove(device, listener);
            device.removeNetworkListener(listener);
        }
    }

    /** Forgets a device being closed, which frees its listeners itself: the map must not keep it reachable. */
    void forget(Device device) {
        Consumer<NetworkEvent> listener = listeners.remove(device);
        if (listener != null) {
            device.removeNetworkListener(listener);
        }
    }

    /** Stops listening to every device (the cache is closing); may wait for the network reader to stop. */
    void stopListening() {
        listeners.forEach((device, listener) -> {
            if (listeners.remove(device, listener)) {
                device.removeNetworkListener(listener);
            }
        });
    }

    private void onNetworkEvent(NetworkEvent event) {
        int n = event.kind().isNeighbour()
                ? cache.invalidate(event.device(), event.portNum(), event.dgid())
                : cache.invalidatePort(event.device(), event.portNum());
        cache.stats.recordNetworkInvalidated(n);
        if (n > 0) {
            LOG.info("{} on {} port {} (ifindex {}{}): {}; {} AH(s) invalidated", event.kind(), event.device().name(),
                    event.portNum(), event.netdev(), event.dgid() == null ? "" : ", " + event.dgid(), event.detail(), n);
        } else {
            LOG.debug("{} on {} port {}: {}; no AH to invalidate", event.kind(), event.device().name(), event.portNum(),
                    event.detail());
        }
    }
}
