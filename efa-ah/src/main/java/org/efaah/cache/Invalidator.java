package org.efaah.cache;

import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.Predicate;
import org.efaah.verbs.Device;
import org.efaah.verbs.DeviceEvent;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A cache's invalidation, and its listening to devices: their asynchronous events that
 * invalidate (GID_CHANGE, PORT_ERR, PORT_ACTIVE a port's entries, DEVICE_FATAL a device's, whose
 * later acquires then fail) and their close (a forced {@link Device#close()} frees every AH of
 * the device, so its entries are invalidated first).
 *
 * <p><b>What an invalidation does.</b> Off EFA, and on any device that is fatal or closing, it
 * marks an entry stale ({@link Entry#markStale()}) so that no acquire gets its AH again, moves it
 * to the detached set, and destroys it if nobody references it. On EFA (GID_CHANGE, PORT_*, and
 * the {@code invalidate*} calls) it dooms the entry instead ({@link Entry#markDoomed()}): EFA holds
 * one AH per (PD, GID), which a new acquire could not replace while it is held, and nothing an
 * EFA AH holds can go stale (the kernel's {@code efa_create_ah} uses the dgid alone). A doomed
 * entry stays in its table and keeps being handed out while referenced, is never retained again,
 * and is destroyed once unreferenced; the next acquire after that creates a new AH.
 *
 * <p><b>Rules.</b> Marking takes no lock (one atomic step). A stale entry is added to the detached
 * set <em>before</em> it leaves its table, so an entry on the move is always in one of the two
 * (close and the reaper walk the tables first); if it was destroyed or its create failed
 * meanwhile, it is taken out of the set again, so a DEAD or FAILED entry never stays there. An
 * unreferenced entry's lock is only tried ({@link Reclaimer#tryDestroyUnreferenced}); a holder
 * that wins that race sees the mark and destroys it. So invalidation never waits. Listener
 * registration and removal hold this object's monitor (never while waiting for anything: a
 * device's close calls {@link #onDeviceClose} under its own lock, which takes the monitor), and
 * registration after the cache began closing is refused: a closed cache listens to no device.
 */
final class Invalidator {
    private static final Logger LOG = LoggerFactory.getLogger(AddressHandleCache.class);

    private final EntryTables tables;
    private final Reclaimer reclaimer;
    private final StatsCounter stats;
    private final CacheEvents events;
    /** Told of a device being closed, after the tables forgot it (the cache's network subscription). */
    private final Consumer<Device> onClosedDevice;
    /** Per device, the event and close listeners registered on it. Guarded by this. */
    private final Map<Device, Listeners> listeners = new HashMap<>();
    private boolean stopped; // guarded by this
    private final Set<Device> fatalDevices = ConcurrentHashMap.newKeySet();

    private record Listeners(Consumer<DeviceEvent> events, Consumer<Device> close) {
        /*
         * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
         * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
         * NoObjectMethodsTest). Same meaning and format as the generated ones.
         */
        @Override
        public boolean equals(Object o) {
            return o == this || o instanceof Listeners that && Objects.equals(that.events, events)
                    && Objects.equals(that.close, close);
        }

        @Override
        public int hashCode() {
            int h = Objects.hashCode(events);
            h = 31 * h + Objects.hashCode(close);
            return h;
        }

        @Override
        public String toString() {
            return new StringBuilder("Listeners[events=").append(events).append(", close=").append(close)
                    .append(']').toString();
        }
    }

    Invalidator(EntryTables tables, Reclaimer reclaimer, StatsCounter stats, CacheEvents events,
                Consumer<Device> onClosedDevice) {
        this.tables = tables;
        this.reclaimer = reclaimer;
        this.stats = stats;
        this.events = events;
        this.onClosedDevice = onClosedDevice;
    }

    /**
     * Invalidates every entry {@code which} accepts; returns how many. {@code hard} marks every
     * entry stale, as on a device that is fatal or closing; otherwise entries on EFA are doomed
     * instead (see the class comment). {@code byNetwork}: a change of the network under a RoCE
     * port, counted in {@code networkInvalidated} too. An {@link Error} from destroying one is
     * thrown after all were handled.
     */
    int invalidateWhere(String scope, Predicate<Entry> which, boolean hard) {
        return invalidateWhere(scope, which, hard, false);
    }

    int invalidateWhere(String scope, Predicate<Entry> which, boolean hard, boolean byNetwork) {
        JfrEvents.AhInvalidation jfr = events.beginInvalidation();
        int n = 0;
        int counted = 0;
        Error error = null;
        for (EntryTables.PdTable pdTable : tables.tables()) {
            ConcurrentHashMap<Object, Entry> table = pdTable.table();
            boolean stale = hard || pdTable.keys().invalidationMarksStale();
            for (Entry e : table.values()) {
                if (!which.test(e)) {
                    continue;
                }
                if (stale) {
                    long hits = e.markStale();
                    if (hits < 0) {
                        continue;
                    }
                    stats.recordHits(hits);
                } else if (!e.markDoomed()) {
                    continue;
                }
                n++;
                // Counted once the AH exists: here if it does, else by its creator if the create
                // succeeds (Entry.markedCounts), never for a create that fails.
                if (e.markedCounts(byNetwork)) {
                    counted++;
                }
                if (stale) {
                    tables.detach(table, e);
                }
                // Unreferenced: nobody will release it, so destroy it now unless a lock holder
                // (which sees the mark) is at it.
                if (e.isUnreferenced()) {
                    try {
                        reclaimer.tryDestroyUnreferenced(e, RemovalCause.INVALIDATED);
                    } catch (Error t) {
                        error = error == null ? t : error;
                    }
                }
            }
        }
        stats.recordInvalidated(counted, byNetwork ? counted : 0);
        events.invalidated(jfr, scope, counted);
        if (error != null) {
            throw error;
        }
        return n;
    }

    /** The cache's listener on each device it has AHs on. */
    void onDeviceEvent(DeviceEvent event) {
        switch (event.kind()) {
            case GID_CHANGE, PORT_ERR, PORT_ACTIVE -> {
                Device device = event.device();
                int n = invalidateWhere("port " + event.portNum() + " of " + device.name() + " (" + event.kind() + ")",
                        e -> e.pd.device() == device && e.portNum() == event.portNum(), false);
                LOG.info("{} on {} port {}: {} AH(s) invalidated{}", event.kind(), device.name(), event.portNum(), n,
                        KeyPolicy.of(device).invalidationMarksStale() ? "" : " (each held one stays in use until its last close)");
            }
            case DEVICE_FATAL -> {
                fatalDevices.add(event.device());
                int n = invalidateWhere("DEVICE_FATAL on " + event.device().name(), e -> e.pd.device() == event.device(),
                        true);
                LOG.error("DEVICE_FATAL on {}: {} AH(s) invalidated; acquires on it fail from now on",
                        event.device().name(), n);
            }
            default -> {
                // QP, CQ and SRQ events, LID/P_Key/SM changes: no AH of this cache depends on them.
            }
        }
    }

    /**
     * A device of the cache's is being closed ({@link Device#close()}, on the closing thread,
     * before it frees its children): its AHs go with it, so none may be handed out again.
     */
    private void onDeviceClose(Device device) {
        int n = invalidateWhere("close of " + device.name(), e -> e.pd.device() == device, true);
        for (Entry e : tables.detached) {
            if (e.pd.device() == device) {
                reclaimer.destroyUnderClosingDevice(e); // referenced: would count as live otherwise
            }
        }
        synchronized (this) {
            Listeners l = listeners.remove(device);
            if (l != null) {
                device.removeEventListener(l.events()); // the device keeps no reference to this cache
            }
        }
        fatalDevices.remove(device);
        tables.forget(device);
        onClosedDevice.accept(device);
        if (n > 0) {
            LOG.info("{} is being closed: {} AH(s) of this cache invalidated", device.name(), n);
        }
    }

    /**
     * Starts listening to {@code device}'s events and close, once per device.
     *
     * @throws IllegalStateException if the cache is closed (or closing), or the device's close has
     *                               begun calling its listeners (the acquire on it fails)
     */
    void listenTo(Device device) {
        synchronized (this) {
            if (stopped) {
                throw new IllegalStateException("address handle cache is closed");
            }
            if (listeners.containsKey(device)) {
                return;
            }
            Listeners l = new Listeners(this::onDeviceEvent, this::onDeviceClose);
            // The device decides each add under its own lock, never waiting: accepted, the close
            // listener is called by the device's close (which then takes this monitor, after us);
            // refused, the device's close has begun calling its listeners and ours is not kept.
            device.addEventListener(l.events());
            try {
                device.addCloseListener(l.close());
            } catch (IllegalStateException closing) {
                device.removeEventListener(l.events());
                throw closing;
            }
            listeners.put(device, l);
        }
    }

    /** Stops listening to every device, and refuses to start again (the cache is closing). */
    synchronized void stopListening() {
        stopped = true;
        listeners.forEach((device, l) -> {
            device.removeEventListener(l.events());
            device.removeCloseListener(l.close());
        });
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
