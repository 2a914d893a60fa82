package org.efaah.roce;

import java.util.Objects;
import org.efaah.internal.Ranges;
import org.efaah.verbs.Device;
import org.efaah.verbs.Gid;

/**
 * A change of the network under a RoCE port that makes AHs made before it stale, as delivered to
 * the listeners {@linkplain RoceNetwork#subscribe subscribed} to a {@link Device}: RoCE resolves the
 * destination's MAC address (through the host's neighbour table) and the port's own MAC and MTU
 * at {@code ibv_create_ah(3)} time, and no verbs event tells of their changes.
 *
 * @param device  the device whose port is concerned
 * @param portNum the 1-based port whose netdev it is (the GID table's {@code ndev_ifindex})
 * @param kind    what happened
 * @param dgid    for the neighbour kinds, the neighbour's IP address as a GID (IPv4-mapped for
 *                IPv4); null for the others
 * @param netdev  the netdev's index ({@code ifindex})
 * @param detail  what changed, for logs (e.g. {@code lladdr 02:00:0a:09:01:fa -> 02:00:0a:09:ff:fa})
 */
public record NetworkEvent(Device device, int portNum, Kind kind, Gid dgid, int netdev, String detail) {

    /**
     * Checks the fields.
     *
     * @param device  not null
     * @param portNum 1..255
     * @param kind    not null
     * @param dgid    not null for the neighbour kinds, null otherwise
     * @param netdev  the netdev index
     * @param detail  not null
     * @throws NullPointerException     if a field that must be set is null
     * @throws IllegalArgumentException if {@code portNum} is outside 1..255, or {@code dgid} does not fit {@code kind}
     */
    public NetworkEvent {
        Objects.requireNonNull(device, "device");
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(detail, "detail");
        Ranges.check("portNum", portNum, 1, 255);
        if (kind.isNeighbour() != (dgid != null)) {
            throw new IllegalArgumentException("dgid: " + dgid + " with " + kind + "; a neighbour kind needs one, the others none");
        }
    }

    /** What happened. */
    public enum Kind {
        /** A neighbour's link-layer address changed ({@code RTM_NEWNEIGH} with a new {@code NDA_LLADDR}). */
        NEIGHBOUR_CHANGED,
        /** A neighbour's entry was deleted ({@code RTM_DELNEIGH}). */
        NEIGHBOUR_DELETED,
        /** The port's netdev changed its MAC address or MTU, went down, or was deleted. */
        NETDEV_CHANGED,
        /** Notifications were lost (the socket overflowed): anything on the port may have changed. */
        RESYNC;

        /**
         * Whether the event is about one neighbour (its {@link NetworkEvent#dgid()} is set).
         *
         * @return true for {@link #NEIGHBOUR_CHANGED} and {@link #NEIGHBOUR_DELETED}
         */
        public boolean isNeighbour() {
            return this == NEIGHBOUR_CHANGED || this == NEIGHBOUR_DELETED;
        }
    }

    /*
     * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
     * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
     * NoObjectMethodsTest). Same meaning and format as the generated ones.
     */
    @Override
    public boolean equals(Object o) {
        return o == this || o instanceof NetworkEvent that && Objects.equals(that.device, device)
                && that.portNum == portNum && Objects.equals(that.kind, kind) && Objects.equals(that.dgid, dgid)
                && that.netdev == netdev && Objects.equals(that.detail, detail);
    }

    @Override
    public int hashCode() {
        int h = Objects.hashCode(device);
        h = 31 * h + portNum;
        h = 31 * h + Objects.hashCode(kind);
        h = 31 * h + Objects.hashCode(dgid);
        h = 31 * h + netdev;
        h = 31 * h + Objects.hashCode(detail);
        return h;
    }

    @Override
    public String toString() {
        return new StringBuilder("NetworkEvent[device=").append(device).append(", portNum=").append(portNum)
                .append(", kind=").append(kind).append(", dgid=").append(dgid).append(", netdev=").append(netdev)
                .append(", detail=").append(detail).append(']').toString();
    }
}
