package org.efaah.verbs.mock;

import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.efaah.verbs.Gid;
import org.efaah.verbs.spi.NetworkChange;

/**
 * The host network under the mock's RoCE devices: one netdev per device ({@code mockethN}, ifindex
 * N + 2, every GID of the device's port on it) and a neighbour table that tests change, as
 * {@code ip link set} and {@code ip neigh replace|del} change the kernel's. Every change is sent, as
 * rtnetlink sends it (rtnetlink(7)), to each open channel, and an AH made on a RoCE device
 * resolves its dgid's link-layer address here at create time, as rxe does in
 * {@code rxe_create_ah} through the kernel's {@code rdma_addr_find_l2_eth_by_grh}: the AH keeps
 * the MAC it was made with ({@link #lladdrOf(long)}), whatever happens to the table afterwards.
 * EFA devices resolve nothing. One lock (this object's monitor) guards it all but the channels
 * ({@link MockChannels}, taken after it); it never takes a
 * device's lock.
 */
public final class MockNetwork {
    /** Ifindex of device 0's netdev (1 is the loopback). */
    static final int FIRST_IFINDEX = 2;

    private final Map<Integer, Link> links = new LinkedHashMap<>();
    private final Map<Integer, Map<Gid, byte[]>> neighbours = new HashMap<>();
    private final Map<Long, byte[]> resolved = new HashMap<>();
    private final MockChannels<NetworkChange> channels;

    private static final class Link {
        final String name;
        int flags = NetworkChange.IFF_UP | NetworkChange.IFF_RUNNING;
        int mtu = 1500;
        byte[] mac;

        Link(String name, byte[] mac) {
            this.name = name;
            this.mac = mac;
        }

        NetworkChange change(int ifindex, boolean fromDump) {
            return NetworkChange.link(false, ifindex, name, flags, mtu, mac.clone(), fromDump);
        }
    }

    MockNetwork(MockVerbsProvider provider, int devices) {
        this.channels = new MockChannels<>(provider, "network");
        for (int i = 0; i < devices; i++) {
            links.put(FIRST_IFINDEX + i, new Link("mocketh" + i, mac("02:00:00:00:01:" + String.format("%02x", i))));
            neighbours.put(FIRST_IFINDEX + i, new HashMap<>());
        }
    }

    /**
     * The ifindex of device {@code deviceIndex}'s netdev.
     *
     * @param deviceIndex the N of {@code roce_N}
     * @return its netdev's ifindex
     */
    public static int ifindex(int deviceIndex) {
        return FIRST_IFINDEX + deviceIndex;
    }

    /**
     * Sets the neighbour {@code ip} on device {@code deviceIndex}'s netdev to {@code lladdr}, as
     * {@code ip neigh replace IP lladdr MAC dev mockethN} does; announced even when the address
     * is the same (a refresh).
     *
     * @param deviceIndex the N of {@code roce_N}
     * @param ip          the neighbour's address as a GID (IPv4-mapped for IPv4)
     * @param lladdr      its MAC, {@code xx:xx:xx:xx:xx:xx}
     * @throws IllegalArgumentException for an unknown device or a malformed MAC
     */
    public synchronized void setNeighbour(int deviceIndex, Gid ip, String lladdr) {
        byte[] mac = mac(lladdr);
        table(deviceIndex).put(ip, mac);
        send(NetworkChange.neighbour(false, ifindex(deviceIndex), address(ip), 0x80 /* NUD_PERMANENT */, mac.clone(),
                false));
    }

    /**
     * Deletes the neighbour {@code ip}, as {@code ip neigh del} does; nothing is announced when
     * there is no such entry.
     *
     * @param deviceIndex the N of {@code roce_N}
     * @param ip          the neighbour's address as a GID
     * @return whether there was an entry
     */
    public synchronized boolean deleteNeighbour(int deviceIndex, Gid ip) {
        byte[] before = table(deviceIndex).remove(ip);
        if (before != null) {
            send(NetworkChange.neighbour(true, ifindex(deviceIndex), address(ip), 0, before.clone(), false));
        }
        return before != null;
    }

    /**
     * Changes device {@code deviceIndex}'s netdev, as {@code ip link set} does, and announces it.
     *
     * @param deviceIndex the N of {@code roce_N}
     * @param mtu         its MTU, bytes
     * @param up          whether it is up with carrier
     */
    public synchronized void setLink(int deviceIndex, int mtu, boolean up) {
        Link link = link(deviceIndex);
        link.mtu = mtu;
        link.flags = up ? NetworkChange.IFF_UP | NetworkChange.IFF_RUNNING : 0;
        send(link.change(ifindex(deviceIndex), false));
    }

    /** Makes every open channel report lost notifications, as a full socket (ENOBUFS) does. */
    public synchronized void loseNotifications() {
        send(NetworkChange.mark(NetworkChange.Type.LOST));
    }

    /**
     * The link-layer address AH {@code ah} resolved at its create.
     *
     * @param ah a handle {@link MockVerbsProvider#createAh} returned
     * @return the MAC ({@code xx:xx:xx:xx:xx:xx}), or null when none (no entry then, EFA, destroyed)
     */
    public synchronized String lladdrOf(long ah) {
        byte[] mac = resolved.get(ah);
        return mac == null ? null : HexFormat.ofDelimiter(":").formatHex(mac);
    }

    /** rxe_create_ah's resolution: remembers the MAC of {@code dgid} on the device's netdev for {@code ah}. */
    synchronized void resolve(long ah, int deviceIndex, Gid dgid) {
        byte[] mac = table(deviceIndex).get(dgid);
        if (mac != null) {
            resolved.put(ah, mac);
        }
    }

    synchronized void forget(long ah) {
        resolved.remove(ah);
    }

    // ---- the channels (the provider's rtnetlink SPI)

    long open() {
        return channels.open(0);
    }

    synchronized void requestDump(long channel, boolean wantLinks) {
        MockChannel<NetworkChange> c = channels.get(channel, "sendto(NETLINK_ROUTE)");
        if (wantLinks) {
            links.forEach((ifindex, link) -> c.post(link.change(ifindex, true)));
        } else {
            neighbours.forEach((ifindex, table) -> table.forEach((ip, mac) ->
                    c.post(NetworkChange.neighbour(false, ifindex, address(ip), 0x80, mac.clone(), true))));
        }
        c.post(NetworkChange.mark(NetworkChange.Type.DUMP_DONE));
    }

    List<NetworkChange> await(long channel, int timeoutMillis) {
        return channels.await(channel, timeoutMillis, "recvmsg(NETLINK_ROUTE)");
    }

    void wake(long channel) {
        channels.wake(channel, "efa_ah_net_wake");
    }

    void close(long channel) {
        channels.close(channel, "efa_ah_net_close");
    }

    /**
     * Network channels open now (a watcher's reader frees its own when it stops).
     *
     * @return the count
     */
    public int openChannels() {
        return channels.size();
    }

    private void send(NetworkChange change) {
        channels.forEach(c -> c.post(change));
    }

    private Map<Gid, byte[]> table(int deviceIndex) {
        Map<Gid, byte[]> t = neighbours.get(ifindex(deviceIndex));
        if (t == null) {
            throw new IllegalArgumentException("deviceIndex: " + deviceIndex + " is not a mock device; valid 0.."
                    + (links.size() - 1));
        }
        return t;
    }

    private Link link(int deviceIndex) {
        table(deviceIndex);
        return links.get(ifindex(deviceIndex));
    }

    private static byte[] address(Gid ip) {
        byte[] g = ip.toBytes();
        return ip.isIpv4Mapped() ? java.util.Arrays.copyOfRange(g, 12, 16) : g;
    }

    private static byte[] mac(String text) {
        String[] parts = text.split(":");
        if (parts.length != 6) {
            throw new IllegalArgumentException("lladdr: '" + text + "' is not a MAC address; valid xx:xx:xx:xx:xx:xx");
        }
        try {
            return HexFormat.ofDelimiter(":").parseHex(text);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("lladdr: '" + text + "' is not a MAC address; valid xx:xx:xx:xx:xx:xx");
        }
    }
}
