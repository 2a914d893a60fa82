package org.efaah.roce;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.stream.IntStream;
import org.efaah.health.HealthCheck;
import org.efaah.verbs.Device;
import org.efaah.verbs.DeviceEvent;
import org.efaah.verbs.Errno;
import org.efaah.verbs.PortAttributes;
import org.efaah.verbs.VerbsException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Following of the network under a device's RoCE ports: what no verbs event reports, and what
 * makes AHs stale ({@link NetworkEvent}). {@link #subscribe} is the entry point; an AH cache
 * subscribes by itself to each RoCE device it holds AHs on.
 *
 * <p>The first subscription on a provider's network ({@code NetworkVerbs.networkSource()}) starts
 * a daemon thread {@code efa-ah-network} reading rtnetlink; the thread stops with the last
 * subscription. Nothing starts for a device without a RoCE port (EFA, InfiniBand), nor when the
 * system property {@value NetworkWatcher#PROPERTY} (else the environment variable
 * {@value NetworkWatcher#ENVIRONMENT}) is {@code false}, nor for a provider without network
 * changes (its {@code networkChanges()} answers EOPNOTSUPP), whose subscriptions hear nothing and
 * say so in their {@linkplain Subscription#health() health}.
 *
 * <p>Thread-safe.
 */
public final class RoceNetwork {
    private static final Logger LOG = LoggerFactory.getLogger(RoceNetwork.class);

    private RoceNetwork() {
    }

    /**
     * Subscribes {@code listener} to the changes of the network under {@code device}'s RoCE ports
     * that make AHs stale: a neighbour's new MAC or its deletion, the port's netdev changing its
     * MAC or MTU or going down, lost notifications. Each change goes to the ports whose GID table
     * names that netdev (read now with {@link Device#queryGidNetdev}, and again on each
     * {@code GID_CHANGE} and {@code PORT_ACTIVE} of the port). The listener runs on the
     * {@code efa-ah-network} thread, one event at a time; it must not block. A listener that throws
     * is logged and does not stop the others.
     *
     * <p>The subscription ends with {@link Subscription#close()} or with the device's
     * {@link Device#close()}, before the device frees anything; the device's reader thread is
     * left (stopped when it was the last) either way. Without a RoCE port, with the setting
     * {@code false}, or on a provider without network changes, the subscription hears nothing and
     * holds no reader (the last says so in its health).
     *
     * @param device   the device whose ports are followed
     * @param listener called with each event; not null
     * @return the subscription; close it to stop listening
     * @throws NullPointerException     if an argument is null
     * @throws IllegalArgumentException if the setting is neither true nor false (read for a device
     *                                  with a RoCE port only)
     * @throws IllegalStateException    if the device is closed
     * @throws VerbsException           if querying the device's ports fails
     */
    public static Subscription subscribe(Device device, Consumer<? super NetworkEvent> listener) {
        Objects.requireNonNull(device, "device");
        Objects.requireNonNull(listener, "listener");
        if (device.isClosed()) {
            throw new IllegalStateException("device " + device.name() + " is closed");
        }
        int[][] ports = rocePorts(device);
        Subscription s = new Subscription(device, listener, ports[0], ports[1]);
        if (ports[0].length == 0 || !NetworkWatcher.enabled()) {
            s.ended = true;
            return s;
        }
        s.unfollowed = NetworkWatcher.absence(device.provider());
        /*
         * The close listener goes first. The device accepts it only before its close begins
         * calling listeners (else IllegalStateException, nothing kept), and then calls it: a close
         * racing this subscribe ends the subscription itself, once. An end that comes before the
         * watcher has the subscription keeps it from joining.
         */
        device.addCloseListener(s.onDeviceClose);
        if (s.unfollowed != null) {
            LOG.debug("device {}: network not followed: {}", device.name(), s.unfollowed);
        } else {
            try {
                device.addEventListener(s.onDeviceEvent);
                s.readNetdevs();
                NetworkWatcher.subscribe(s);
            } catch (RuntimeException e) {
                s.close();
                throw e;
            }
        }
        return s;
    }

    /**
     * The RoCE ports (link layer Ethernet), none on EFA, with their GID table lengths: two rows,
     * the ports then the lengths.
     */
    private static int[][] rocePorts(Device device) {
        if (device.isEfa()) {
            return new int[][] {{}, {}};
        }
        int count = device.attributes().portCount();
        int[] ports = new int[count];
        int[] lengths = new int[count];
        int n = 0;
        for (int port = 1; port <= count; port++) {
            PortAttributes p = device.port(port);
            if (p.linkLayer() == PortAttributes.LINK_LAYER_ETHERNET) {
                ports[n] = port;
                lengths[n++] = p.gidTableLength();
            }
        }
        return new int[][] {Arrays.copyOf(ports, n), Arrays.copyOf(lengths, n)};
    }

    /**
     * One listener's subscription to the network under one device's RoCE ports, from
     * {@link RoceNetwork#subscribe}. Thread-safe.
     */
    public static final class Subscription implements AutoCloseable {
        final Device device;
        final Consumer<? super NetworkEvent> listener;
        final int[] rocePorts;
        /** The GID table length of each of {@link #rocePorts}. */
        private final int[] gidTableLengths;
        /** ifindex to the ports whose GID table names it; replaced whole by {@link #readNetdevs}. */
        volatile Map<Integer, int[]> netdevs = Map.of();
        /*
         * Reads begun, and the newest whose answer netdevs holds; guarded by reads. The first read
         * (the subscriber's thread) and a re-read on GID_CHANGE (the event thread) may overlap: the
         * one begun later saw the table after the change, so an older one finishing last is dropped.
         */
        private final Object reads = new Object();
        private long readsBegun;
        private long readWritten;
        /** Set once under the watchers' lock, before the reader can see this subscription. */
        NetworkWatcher watcher;
        /** Written under the watchers' lock; read without it by the reader, to skip an ended one. */
        volatile boolean ended;
        /**
         * Why this subscription hears nothing though its device has a RoCE port: the provider has no
         * network changes (its EOPNOTSUPP message); null otherwise. Set before it is handed out.
         */
        volatile String unfollowed;
        /** The reader this subscription's end stopped, being the last; guarded by the watchers' lock. */
        org.efaah.internal.BackgroundReader stoppedReader;
        /*
         * Runs under the closing device's lock, before it frees anything, and may join the reader
         * (the last subscription). The reader takes no lock of the device: the GID tables are read
         * on the subscriber's thread and on the device's event thread, which the close stopped
         * first. Only a listener that calls into the closing device holds the join, 5 s at most.
         */
        private final Consumer<Device> onDeviceClose = d -> close();
        private final Consumer<DeviceEvent> onDeviceEvent = this::onDeviceEvent;

        private Subscription(Device device, Consumer<? super NetworkEvent> listener, int[] rocePorts,
                             int[] gidTableLengths) {
            this.device = device;
            this.listener = listener;
            this.rocePorts = rocePorts;
            this.gidTableLengths = gidTableLengths;
        }

        /**
         * The health of the network reader this subscription hears: UP while it reads, DEGRADED
         * with the last failure while its reads fail (it keeps trying, with a backoff up to 1 s, and
         * its listeners hear a {@link NetworkEvent.Kind#RESYNC} at each try, so that AHs made during
         * the failure last until the next try at most), DEGRADED when it could not start (the
         * provider refused the channel; the next subscription tries again) or the provider has no
         * network changes at all (no {@code NetworkVerbs} facet: AHs then follow no neighbour or
         * link change). The check is named {@code network_reader}, its subject the device's name.
         *
         * @return the check; empty when the subscription hears nothing by design (no RoCE port, the
         *         setting off) or has ended
         */
        public Optional<HealthCheck> health() {
            return Optional.ofNullable(NetworkWatcher.health(this));
        }

        /**
         * Ends the subscription: its listener hears nothing more once this returns, except an
         * event being delivered right now. The last subscription of a network stops its reader
         * thread, waiting for it (5 s at most; an interrupt ends the wait and the thread still
         * stops). Idempotent: a close while another is stopping the reader waits for it too.
         */
        @Override
        public void close() {
            if (NetworkWatcher.unsubscribe(this)) {
                device.removeCloseListener(onDeviceClose);
                device.removeEventListener(onDeviceEvent);
            }
        }

        private void onDeviceEvent(DeviceEvent event) {
            if ((event.kind() == DeviceEvent.Kind.GID_CHANGE || event.kind() == DeviceEvent.Kind.PORT_ACTIVE)
                    && IntStream.of(rocePorts).anyMatch(p -> p == event.portNum()) && !ended) {
                try {
                    readNetdevs(); // an address may have moved to another netdev
                } catch (RuntimeException e) {
                    LOG.debug("device {}: GID netdevs not read again: {}", device.name(), e.toString());
                }
            }
        }

        /** Reads the ports' GID tables: the netdev ({@code ndev_ifindex}) of each GID. */
        void readNetdevs() {
            long read;
            synchronized (reads) {
                read = ++readsBegun;
            }
            Map<Integer, List<Integer>> found = new HashMap<>();
            nextPort:
            for (int i = 0; i < rocePorts.length; i++) {
                int port = rocePorts[i];
                for (int index = 0; index < gidTableLengths[i]; index++) {
                    int ifindex;
                    try {
                        ifindex = device.queryGidNetdev(port, index);
                    } catch (VerbsException e) {
                        if (e.errno() == Errno.EOPNOTSUPP) {
                            LOG.debug("device {}: GID netdevs unknown, no network events: {}", device.name(),
                                    e.getMessage());
                            continue nextPort;
                        }
                        continue; // ENODATA: nothing at this index
                    }
                    if (ifindex > 0) {
                        List<Integer> ports = found.computeIfAbsent(ifindex, k -> new ArrayList<>());
                        if (!ports.contains(port)) {
                            ports.add(port);
                        }
                    }
                }
            }
            Map<Integer, int[]> map = new HashMap<>();
            found.forEach((k, v) -> map.put(k, v.stream().mapToInt(Integer::intValue).toArray()));
            synchronized (reads) {
                if (read > readWritten) {
                    readWritten = read;
                    netdevs = Map.copyOf(map);
                }
            }
        }

        /** The netdevs the GID tables name, for tests and logs. */
        Map<Integer, int[]> netdevs() {
            return netdevs;
        }

        @Override
        public String toString() {
            return "RoceNetwork.Subscription[" + device.name() + (ended ? ", ended" : "") + "]";
        }
    }
}
