package org.efaah.cache;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.Predicate;
import org.efaah.verbs.Device;
import org.efaah.verbs.DeviceEvent;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A cache's invalidation: marks entries stale so no acquire gets their AH again, takes them out
 * of their tables, and destroys those nobody references; and the listening to devices'
 * asynchronous events that invalidate (GID_CHANGE, PORT_ERR, PORT_ACTIVE a port's entries,
 * DEVICE_FATAL a device's, whose later acquires then fail).
 *
 * <p>Locks: none held while marking ({@link Entry#markStale()} is one atomic step); an
 * unreferenced entry's lock is only tried ({@code tryLock}), through
 * {@link Reclaimer#tryDestroyUnreferenced}, so invalidation never waits. Listener
 * registration goes through a concurrent map's {@code computeIfAbsent}.
 */
final class Invalidator {
    private static final Logger LOG = LoggerFactory.getLogger(AddressHandleCache.class);

    private final AddressHandleCache cache;
    private final ConcurrentHashMap<Device, Consumer<DeviceEvent>> listeners = new ConcurrentHashMap<>();
    private final Set<Device> fatalDevices = ConcurrentHashMap.newKeySet();

    Invalidator(AddressHandleCache cache) {
        this.cache = cache;
    }

    /**
     * Invalidates every entry {@code which} accepts; returns how many. An {@link Error} from
     * destroying one is thrown after all were handled.
     */
    int invalidateWhere(String scope, Predicate<Entry> which) {
        int n = 0;
        Error error = null;
        for (ConcurrentHashMap<Object, Entry> table : cache.tables.values()) {
            for (Entry e : table.values()) {
                if (!which.test(e) || !e.markStale()) {
                    continue;
                }
                n++;
                cache.detached.add(e);
                table.remove(e.key, e);
                // Unreferenced: nobody will release it, so destroy it now unless a lock holder
                // (which sees the mark) is at it.
                if (e.refs() == Entry.STALE) {
                    try {
                        cache.reclaimer.tryDestroyUnreferenced(e, RemovalCause.INVALIDATED);
                    } catch (Error t) {
                        error = error == null ? t : error;
                    }
                }
            }
        }
        cache.stats.recordInvalidated(n);
        cache.events.invalidated(scope, n);
        if (error != null) {
            throw error;
        }
        return n;
    }

    /** The cache's listener on each device it has AHs on. */
    void onDeviceEvent(DeviceEvent event) {
        switch (event.kind()) {
            case GID_CHANGE, PORT_ERR, PORT_ACTIVE -> {
                int n = cache.invalidatePort(event.device(), event.portNum());
                LOG.info("{} on {} port {}: {} AH(s) invalidated", event.kind(), event.device().name(), event.portNum(), n);
            }
            case DEVICE_FATAL -> {
                fatalDevices.add(event.device());
                int n = invalidateWhere("DEVICE_FATAL on " + event.device().name(), e -> e.pd.device() == event.device());
                LOG.error("DEVICE_FATAL on {}: {} AH(s) invalidated; acquires on it fail from now on",
                        event.device().name(), n);
            }
            default -> {
                // QP, CQ and SRQ events, LID/P_Key/SM changes: no AH of this cache depends on them.
            }
        }
    }

    /** Starts listening to {@code device}'s events, once per device. */
    void listenTo(Device device) {
        listeners.computeIfAbsent(device, d -> {
            Consumer<DeviceEvent> listener = this::onDeviceEvent;
            d.addEventListener(listener);
            return listener;
        });
    }

    /** Stops listening to every device (the cache is closing). */
    void stopListening() {
        listeners.forEach(Device::removeEventListener);
        listeners.clear();
    }

    /** Throws if {@code device} reported DEVICE_FATAL. */
    void checkUsable(Device device) {
        if (!fatalDevices.isEmpty() && fatalDevices.contains(device)) {
            throw new IllegalStateException("device " + device.name() + " reported IBV_EVENT_DEVICE_FATAL: it creates "
                    + "no AH any more; close it (and this cache's handles on it) and open it again");
        }
    }
}
