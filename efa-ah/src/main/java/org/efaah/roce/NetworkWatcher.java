package org.efaah.roce;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import org.efaah.health.HealthCheck;
import org.efaah.health.HealthStatus;
import org.efaah.internal.BackgroundReader;
import org.efaah.internal.ChannelAgent;
import org.efaah.verbs.Device;
import org.efaah.verbs.Errno;
import org.efaah.verbs.Gid;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.spi.EventChannel;
import org.efaah.verbs.spi.NetworkChange;
import org.efaah.verbs.spi.NetworkVerbs;
import org.efaah.verbs.spi.VerbsProvider;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one reader of a {@linkplain NetworkVerbs#networkSource() network source}'s changes
 * (rtnetlink links and IP neighbours: one per process for the native providers) for the
 * {@linkplain RoceNetwork.Subscription subscriptions} of RoCE devices, started with the first
 * subscription and stopped with the last. It reads through the provider of the device that
 * started it.
 *
 * <p>It keeps the host's tables (each netdev's MAC, MTU and flags; each neighbour's link-layer
 * address), filled by a dump of links then of neighbours at start, and turns each notification
 * into what it means for AHs: a neighbour whose address changed or that was deleted, a netdev whose
 * MAC or MTU changed, that went down or was deleted. States that keep the address (probe, stale,
 * reachable again) mean nothing. Until the dumps are read, a notification about an entry not yet
 * in the table counts as a change (an AH may have been made just before it). Notifications lost
 * to an overflowing socket mean {@link NetworkEvent.Kind#RESYNC} on every port, then the tables
 * are read again. Each change goes to the ports whose GID table names that netdev
 * ({@code ndev_ifindex}).
 *
 * <p>Locks: one lock (the map of watchers) guards subscribing, unsubscribing, a subscription's
 * end and the reader's start; it is never held while waiting (the reader is joined outside it).
 * The tables belong to the reader thread.
 */
final class NetworkWatcher {
    /** System property: {@code false} keeps the watcher from ever starting. */
    static final String PROPERTY = "efaah.network.watch";
    /** Environment variable read when the property is not set. */
    static final String ENVIRONMENT = "EFA_AH_NETWORK_WATCH";
    /* The package's one logger, named after its entry point. */
    private static final Logger LOG = LoggerFactory.getLogger(RoceNetwork.class);
    /** By {@link NetworkVerbs#networkSource()}: one reader per source (per process for the native providers). */
    private static final Map<Object, NetworkWatcher> WATCHERS = new IdentityHashMap<>();

    private final VerbsProvider provider;
    /** The key of this watcher in {@link #WATCHERS}. */
    private final Object source;
    private final List<RoceNetwork.Subscription> subscriptions = new CopyOnWriteArrayList<>();
    private Reader reader; // guarded by WATCHERS
    /** Why the last start of a reader failed (EOPNOTSUPP included), until one starts; guarded by WATCHERS. */
    private VerbsException startFailure;

    private NetworkWatcher(VerbsProvider provider, Object source) {
        this.provider = provider;
        this.source = source;
    }

    /**
     * Whether the watcher may start: the property, else the environment variable, else true.
     *
     * @throws IllegalArgumentException for a value other than true or false
     */
    static boolean enabled() {
        return enabled(System.getProperty(PROPERTY), System.getenv(ENVIRONMENT));
    }

    /** {@link #enabled()} from the property's and the environment variable's values (null when unset). */
    static boolean enabled(String property, String environment) {
        String v = property;
        String from = PROPERTY;
        if (v == null || v.isBlank()) {
            v = environment;
            from = ENVIRONMENT;
        }
        if (v == null || v.isBlank()) {
            return true;
        }
        return switch (v.trim().toLowerCase(Locale.ROOT)) {
            case "true" -> true;
            case "false" -> false;
            default -> throw new IllegalArgumentException(from + ": '" + v + "' is not a choice; valid true, false");
        };
    }

    /**
     * Adds {@code s}, whose netdevs are read, to the watcher of its device's network source;
     * starts that watcher's reader if it is the first. Nothing when {@code s} has ended meanwhile
     * (its device was closed).
     */
    static void subscribe(RoceNetwork.Subscription s) {
        VerbsProvider provider = s.device.provider();
        Object source = source(provider);
        synchronized (WATCHERS) {
            if (s.ended || source == null) {
                return; // without network changes: RoceNetwork.subscribe keeps it from here
            }
            NetworkWatcher watcher = WATCHERS.computeIfAbsent(source, k -> new NetworkWatcher(provider, k));
            s.watcher = watcher;
            watcher.subscriptions.add(s);
            if (watcher.reader == null) {
                watcher.reader = Reader.start(watcher);
            }
        }
    }

    /**
     * Ends {@code s}, once: the last one of a watcher forgets it and stops its reader, waiting for
     * it outside the lock. A call that finds {@code s} ended while that stop is under way waits for
     * it as well (a second close, or the device's close listener beside the user's close): no close
     * returns while the reader it stopped may still be delivering to the device's listeners.
     *
     * @return false when {@code s} had ended already
     */
    static boolean unsubscribe(RoceNetwork.Subscription s) {
        BackgroundReader stopping;
        boolean first;
        synchronized (WATCHERS) {
            first = !s.ended;
            if (first) {
                s.ended = true;
                NetworkWatcher w = s.watcher;
                if (w != null && w.subscriptions.remove(s) && w.subscriptions.isEmpty()) {
                    s.stoppedReader = w.reader == null ? null : w.reader.thread;
                    w.reader = null;
                    WATCHERS.remove(w.source, w);
                }
            }
            stopping = s.stoppedReader;
        }
        if (stopping != null) {
            stopping.stop(); // idempotent: each caller waits (5 s at most, until interrupted) for the one stop
        }
        return first;
    }

    /**
     * Why {@code provider} has no network changes (the message of its {@code networkChanges()}
     * EOPNOTSUPP), or null when it has them. Every caller of that facet asks here first, or through
     * {@link #source}: a provider without it (one implementing the core alone) gets subscriptions
     * that hear nothing and say so in their health, not an exception.
     *
     * @throws VerbsException when the accessor fails otherwise
     */
    static String absence(VerbsProvider provider) {
        try {
            provider.networkChanges();
            return null;
        } catch (VerbsException e) {
            if (e.errno() == Errno.EOPNOTSUPP) {
                return e.getMessage();
            }
            throw e;
        }
    }

    /** {@code provider}'s network source, or null when it has no network changes. */
    private static Object source(VerbsProvider provider) {
        return absence(provider) == null ? provider.networkChanges().networkSource() : null;
    }

    /**
     * The health of the reader {@code s} hears: DEGRADED when none could start, or its provider has
     * no network changes; null when it hears none otherwise (ended, no RoCE port, the setting off).
     */
    static HealthCheck health(RoceNetwork.Subscription s) {
        Reader r;
        VerbsException failed;
        synchronized (WATCHERS) {
            if (s.ended) {
                return null;
            }
            if (s.unfollowed != null) {
                return new HealthCheck("network_reader", s.device.name(), HealthStatus.DEGRADED, 0, 1,
                        "network changes (rtnetlink): none, AHs follow no neighbour or link change: " + s.unfollowed);
            }
            if (s.watcher == null) {
                return null;
            }
            r = s.watcher.reader;
            failed = s.watcher.startFailure;
        }
        if (r != null) {
            return r.thread.health("network_reader", s.device.name());
        }
        return failed == null ? null : new HealthCheck("network_reader", s.device.name(), HealthStatus.DEGRADED, 1, 0,
                "network changes (rtnetlink): not started, AHs follow no neighbour or link change: " + failed.getMessage());
    }

    /** Whether a reader thread runs now; for tests. */
    boolean running() {
        synchronized (WATCHERS) {
            return reader != null && reader.thread.thread().isAlive();
        }
    }

    /** Whether the reader has read the link and neighbour tables once (changes before are judged conservatively); for tests. */
    boolean tablesRead() {
        Reader r;
        synchronized (WATCHERS) {
            r = reader;
        }
        return r != null && r.tablesRead;
    }

    /** The watcher of {@code provider}, or null when none runs; for tests. */
    static NetworkWatcher of(VerbsProvider provider) {
        Object source = source(provider);
        synchronized (WATCHERS) {
            return source == null ? null : WATCHERS.get(source);
        }
    }

    /** Whether a subscription of {@code device} is with a watcher now; for tests. */
    static boolean watches(Device device) {
        synchronized (WATCHERS) {
            return WATCHERS.values().stream().anyMatch(w -> w.subscriptions.stream().anyMatch(s -> s.device == device));
        }
    }

    private void emit(NetworkEvent.Kind kind, int ifindex, Gid dgid, String detail) {
        for (RoceNetwork.Subscription s : subscriptions) {
            int[] ports = kind == NetworkEvent.Kind.RESYNC ? s.rocePorts : s.netdevs.getOrDefault(ifindex, NO_PORTS);
            for (int port : ports) {
                if (s.ended) {
                    break; // ended while this change was going out: its device may be closed
                }
                NetworkEvent event = new NetworkEvent(s.device, port, kind, dgid, ifindex, detail);
                LOG.debug("device {}: {}", s.device.name(), event);
                try {
                    s.listener.accept(event);
                } catch (Throwable t) {
                    LOG.error("device {}: a network listener failed on {}", s.device.name(), event, t);
                }
            }
        }
    }

    private static final int[] NO_PORTS = {};

    private record Link(String name, int flags, int mtu, byte[] lladdr) {
        boolean usable() {
            return (flags & (NetworkChange.IFF_UP | NetworkChange.IFF_RUNNING))
                    == (NetworkChange.IFF_UP | NetworkChange.IFF_RUNNING);
        }

        /*
         * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
         * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
         * NoObjectMethodsTest). Same meaning and format as the generated ones: arrays by reference.
         */
        @Override
        public boolean equals(Object o) {
            return o == this || o instanceof Link that && Objects.equals(that.name, name) && that.flags == flags
                    && that.mtu == mtu && Objects.equals(that.lladdr, lladdr);
        }

        @Override
        public int hashCode() {
            int h = Objects.hashCode(name);
            h = 31 * h + flags;
            h = 31 * h + mtu;
            h = 31 * h + Objects.hashCode(lladdr);
            return h;
        }

        @Override
        public String toString() {
            return new StringBuilder("Link[name=").append(name).append(", flags=").append(flags)
                    .append(", mtu=").append(mtu).append(", lladdr=").append(lladdr).append(']').toString();
        }
    }

    private record NeighbourKey(int ifindex, Gid gid) {
        /*
         * Written out, not the record's generated ones: on JDK 17 the first hashCode or equals of
         * a record bootstraps through java.lang.runtime.ObjectMethods, whose static method handles
         * cache their last asType, here to (Gid)int: a java.base static holding a library class
         * keeps the library's class loader after everything is closed (ThreadLifetimeTest). toString
         * too, so that no class of the library links through ObjectMethods (NoObjectMethodsTest).
         */
        @Override
        public int hashCode() {
            return 31 * ifindex + gid.hashCode();
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof NeighbourKey k && k.ifindex == ifindex && k.gid.equals(gid);
        }

        @Override
        public String toString() {
            return new StringBuilder("NeighbourKey[ifindex=").append(ifindex).append(", gid=").append(gid)
                    .append(']').toString();
        }
    }

    private enum Dump { NONE, LINKS, NEIGHBOURS }

    /**
     * The agent of the watcher's {@link BackgroundReader}: its channel and the tables it keeps. A
     * failed read does not end it: after a backoff it reads again, and since notifications may
     * have been lost meanwhile, every RoCE port hears {@link NetworkEvent.Kind#RESYNC} and the
     * tables are read again.
     */
    private static final class Reader extends ChannelAgent<NetworkChange> {
        private final EventChannel<List<NetworkChange>> channel;
        private final NetworkWatcher watcher;
        private final VerbsProvider provider;
        private final BackgroundReader thread;
        private final Map<Integer, Link> links = new HashMap<>();
        private final Map<NeighbourKey, byte[]> neighbours = new HashMap<>();
        private boolean linksRead;
        private boolean neighboursRead;
        private volatile boolean tablesRead;
        private boolean started;
        private Dump dumping = Dump.NONE;
        private boolean dumpAgain;

        private Reader(NetworkWatcher watcher, EventChannel<List<NetworkChange>> channel) {
            super(channel::await, channel::wake, channel::close);
            this.channel = channel;
            this.watcher = watcher;
            this.provider = watcher.provider;
            this.thread = BackgroundReader.of(this, "efa-ah-network", "network changes (rtnetlink)");
        }

        /** Opens the channel (so changes from now on are kept) and starts the thread; null when unsupported. */
        static Reader start(NetworkWatcher watcher) {
            EventChannel<List<NetworkChange>> channel;
            try {
                NetworkVerbs network = watcher.provider.networkChanges();
                channel = network.networkChannel(network.openNetworkChanges());
            } catch (VerbsException e) {
                watcher.startFailure = e; // health says so, EOPNOTSUPP included
                if (e.errno() == Errno.EOPNOTSUPP) {
                    LOG.debug("no network watcher: {}", e.getMessage());
                    return null;
                }
                LOG.warn("network changes unavailable; AHs will not follow neighbour and link changes: {}", e.getMessage());
                return null;
            }
            watcher.startFailure = null;
            Reader r = new Reader(watcher, channel);
            r.thread.start();
            return r;
        }

        @Override
        public void onStart() {
            if (started) {
                watcher.emit(NetworkEvent.Kind.RESYNC, 0, null, "reading network changes failed");
            }
            started = true;
            dumpAgain = false;
            dump(Dump.LINKS);
        }

        @Override
        protected boolean handle(NetworkChange change) {
            if (thread.stopping()) {
                return false; // the rest is for nobody
            }
            apply(change);
            return true;
        }

        private void dump(Dump what) {
            if (thread.stopping()) {
                /*
                 * A listener that closed the last subscription from this thread (during the emit
                 * before this dump) freed the channel at once: its handle names freed memory.
                 */
                return;
            }
            dumping = what;
            provider.networkChanges().requestNetworkDump(channel.handle(), what == Dump.LINKS);
        }

        private void apply(NetworkChange c) {
            switch (c.type()) {
                case DUMP_DONE -> dumpDone();
                case DUMP_INTERRUPTED -> {
                    // NLM_F_DUMP_INTR: the table changed while it was dumped; the answer may miss entries.
                    LOG.debug("the {} dump was interrupted by a change; asking again", dumping);
                    if (dumping != Dump.NONE) {
                        dump(dumping);
                    }
                }
                case LOST -> {
                    LOG.warn("network notifications were lost (socket overflow): every RoCE port's AHs are invalidated"
                            + " and the link and neighbour tables read again");
                    watcher.emit(NetworkEvent.Kind.RESYNC, 0, null, "notifications lost");
                    if (dumping == Dump.NONE) {
                        dump(Dump.LINKS);
                    } else {
                        dumpAgain = true;
                    }
                }
                case LINK -> link(c);
                case LINK_DELETED -> {
                    Link before = links.remove(c.ifindex());
                    neighbours.keySet().removeIf(k -> k.ifindex() == c.ifindex());
                    if (before != null || !linksRead) {
                        watcher.emit(NetworkEvent.Kind.NETDEV_CHANGED, c.ifindex(), null, name(c, before) + " deleted");
                    }
                }
                case NEIGHBOUR -> neighbour(c);
                case NEIGHBOUR_DELETED -> {
                    Gid gid = c.neighbourGid();
                    byte[] before = neighbours.remove(new NeighbourKey(c.ifindex(), gid));
                    if (before != null || !neighboursRead) {
                        watcher.emit(NetworkEvent.Kind.NEIGHBOUR_DELETED, c.ifindex(), gid,
                                "neighbour deleted (lladdr was " + mac(before) + ")");
                    }
                }
            }
        }

        private void dumpDone() {
            if (dumping == Dump.LINKS) {
                linksRead = true;
                dump(Dump.NEIGHBOURS);
            } else if (dumping == Dump.NEIGHBOURS) {
                neighboursRead = true;
                tablesRead = true;
                dumping = Dump.NONE;
                LOG.debug("network tables read: {} links, {} neighbours", links.size(), neighbours.size());
                if (dumpAgain) {
                    dumpAgain = false;
                    dump(Dump.LINKS);
                }
            }
        }

        private void link(NetworkChange c) {
            Link now = new Link(c.ifname(), c.state(), c.mtu(), c.lladdr());
            Link before = links.put(c.ifindex(), now);
            if (before == null) {
                if (!c.fromDump() && !linksRead) {
                    watcher.emit(NetworkEvent.Kind.NETDEV_CHANGED, c.ifindex(), null, now.name() + " changed while the links were read");
                }
                return;
            }
            List<String> what = new ArrayList<>(3);
            if (before.lladdr().length > 0 && now.lladdr().length > 0 && !Arrays.equals(before.lladdr(), now.lladdr())) {
                what.add("address " + mac(before.lladdr()) + " -> " + mac(now.lladdr()));
            }
            if (before.mtu() > 0 && now.mtu() > 0 && before.mtu() != now.mtu()) {
                what.add("mtu " + before.mtu() + " -> " + now.mtu());
            }
            if (before.usable() && !now.usable()) {
                what.add((now.flags() & NetworkChange.IFF_UP) == 0 ? "down" : "no carrier");
            }
            if (!what.isEmpty()) {
                watcher.emit(NetworkEvent.Kind.NETDEV_CHANGED, c.ifindex(), null, now.name() + " " + String.join(", ", what));
            }
        }

        private void neighbour(NetworkChange c) {
            if (c.lladdr().length == 0) {
                return; // unresolved (incomplete, failed): no address to compare, nothing an AH could hold
            }
            Gid gid = c.neighbourGid();
            byte[] before = neighbours.put(new NeighbourKey(c.ifindex(), gid), c.lladdr());
            if (before == null) {
                if (!c.fromDump() && !neighboursRead) {
                    watcher.emit(NetworkEvent.Kind.NEIGHBOUR_CHANGED, c.ifindex(), gid,
                            "lladdr " + mac(c.lladdr()) + ", changed while the neighbours were read");
                }
            } else if (!Arrays.equals(before, c.lladdr())) {
                watcher.emit(NetworkEvent.Kind.NEIGHBOUR_CHANGED, c.ifindex(), gid,
                        "lladdr " + mac(before) + " -> " + mac(c.lladdr()));
            }
        }

        private String name(NetworkChange c, Link before) {
            return !c.ifname().isEmpty() ? c.ifname() : before != null ? before.name() : "ifindex " + c.ifindex();
        }

        private static String mac(byte[] lladdr) {
            return lladdr == null || lladdr.length == 0 ? "none" : HexFormat.ofDelimiter(":").formatHex(lladdr);
        }

        /** See {@link BackgroundReader#stop()}: the thread frees the channel itself. */
        void stop() {
            thread.stop();
        }
    }
}
