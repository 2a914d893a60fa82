package org.efaah.verbs.spi;

import org.efaah.verbs.Gid;
import java.util.Objects;

/**
 * One rtnetlink message about a link or an IP neighbour, as a provider reads it (rtnetlink(7):
 * {@code RTM_NEWLINK}, {@code RTM_DELLINK}, {@code RTM_NEWNEIGH}, {@code RTM_DELNEIGH}, whether
 * a notification or part of a dump), or a mark of the channel itself: the end of a dump, or lost
 * notifications. The raw material of RoCE network events ({@code org.efaah.roce}); the arrays
 * are the provider's and are not copied: do not change them.
 *
 * @param type     what the message is
 * @param ifindex  the netdev's index ({@code ifi_index}, {@code ndm_ifindex}); 0 for the marks
 * @param ifname   links: the netdev's name ({@code IFLA_IFNAME}); else empty
 * @param state    links: {@code ifi_flags} ({@code IFF_UP} 0x1, {@code IFF_RUNNING} 0x40, ...);
 *                 neighbours: {@code ndm_state} ({@code NUD_REACHABLE} 0x2, {@code NUD_STALE} 0x4, ...)
 * @param mtu      links: {@code IFLA_MTU}, bytes; 0 when absent or not a link
 * @param address  neighbours: the IP address ({@code NDA_DST}), 4 bytes (IPv4) or 16 (IPv6),
 *                 network order; else empty
 * @param lladdr   the link-layer address ({@code NDA_LLADDR}, {@code IFLA_ADDRESS}); empty when
 *                 absent (an unresolved neighbour)
 * @param fromDump true when part of the answer to {@link NetworkVerbs#requestNetworkDump}
 */
public record NetworkChange(Type type, int ifindex, String ifname, int state, int mtu, byte[] address,
                            byte[] lladdr, boolean fromDump) {
    /** {@code IFF_UP}: the netdev is administratively up. */
    public static final int IFF_UP = 0x1;
    /** {@code IFF_RUNNING}: the netdev has its carrier (operationally up). */
    public static final int IFF_RUNNING = 0x40;

    /**
     * Checks the fields.
     *
     * @param type     not null
     * @param ifindex  the netdev index
     * @param ifname   not null
     * @param state    flags as the kernel gives them
     * @param mtu      bytes
     * @param address  not null; 0, 4 or 16 bytes
     * @param lladdr   not null
     * @param fromDump whether it answers a dump request
     * @throws NullPointerException     if an object is null
     * @throws IllegalArgumentException if {@code address} is not 0, 4 or 16 bytes long
     */
    public NetworkChange {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(ifname, "ifname");
        Objects.requireNonNull(address, "address");
        Objects.requireNonNull(lladdr, "lladdr");
        if (address.length != 0 && address.length != 4 && address.length != Gid.LENGTH) {
            throw new IllegalArgumentException("address: " + address.length + " bytes; valid 0, 4 (IPv4) or 16 (IPv6)");
        }
    }

    /**
     * A link message.
     *
     * @param deleted  {@code RTM_DELLINK} rather than {@code RTM_NEWLINK}
     * @param ifindex  the netdev's index
     * @param ifname   its name
     * @param flags    {@code ifi_flags}
     * @param mtu      bytes
     * @param lladdr   its MAC address
     * @param fromDump part of a dump's answer
     * @return the message
     */
    public static NetworkChange link(boolean deleted, int ifindex, String ifname, int flags, int mtu, byte[] lladdr,
                                     boolean fromDump) {
        return new NetworkChange(deleted ? Type.LINK_DELETED : Type.LINK, ifindex, ifname, flags, mtu, new byte[0],
                lladdr, fromDump);
    }

    /**
     * A neighbour message.
     *
     * @param deleted  {@code RTM_DELNEIGH} rather than {@code RTM_NEWNEIGH}
     * @param ifindex  the netdev the neighbour is on
     * @param address  its IP address, 4 or 16 bytes
     * @param state    {@code ndm_state}
     * @param lladdr   its MAC address, empty when unresolved
     * @param fromDump part of a dump's answer
     * @return the message
     */
    public static NetworkChange neighbour(boolean deleted, int ifindex, byte[] address, int state, byte[] lladdr,
                                          boolean fromDump) {
        return new NetworkChange(deleted ? Type.NEIGHBOUR_DELETED : Type.NEIGHBOUR, ifindex, "", state, 0, address,
                lladdr, fromDump);
    }

    /**
     * A mark of the channel.
     *
     * @param type {@link Type#DUMP_DONE}, {@link Type#DUMP_INTERRUPTED} or {@link Type#LOST}
     * @return the mark
     */
    public static NetworkChange mark(Type type) {
        return new NetworkChange(type, 0, "", 0, 0, new byte[0], new byte[0], type == Type.DUMP_DONE || type == Type.DUMP_INTERRUPTED);
    }

    /**
     * The neighbour's IP address as a GID: IPv4-mapped ({@code ::ffff:a.b.c.d}) for IPv4, the
     * address itself for IPv6, as a RoCE v2 GID carries it.
     *
     * @return the GID; null when this is not a neighbour message
     */
    public Gid neighbourGid() {
        if (address.length == Gid.LENGTH) {
            return Gid.of(address);
        }
        if (address.length == 4) {
            byte[] g = new byte[Gid.LENGTH];
            g[10] = (byte) 0xff;
            g[11] = (byte) 0xff;
            System.arraycopy(address, 0, g, 12, 4);
            return Gid.of(g);
        }
        return null;
    }

    /** What a message is. */
    public enum Type {
        /** {@code RTM_NEWLINK}: a netdev's state, new or changed. */
        LINK,
        /** {@code RTM_DELLINK}: a netdev is gone. */
        LINK_DELETED,
        /** {@code RTM_NEWNEIGH}: an IP neighbour's entry, new or changed (state or address). */
        NEIGHBOUR,
        /** {@code RTM_DELNEIGH}: an IP neighbour's entry is gone. */
        NEIGHBOUR_DELETED,
        /** {@code NLMSG_DONE}: the answer to a dump request ended. */
        DUMP_DONE,
        /** The socket overflowed ({@code ENOBUFS}): notifications were dropped, the tables must be read again. */
        LOST,
        /**
         * {@code NLMSG_DONE} of a dump the kernel flagged {@code NLM_F_DUMP_INTR}: the table changed
         * while it was dumped, so the answer may miss entries; the dump must be asked for again.
         */
        DUMP_INTERRUPTED
    }

    /*
     * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
     * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
     * NoObjectMethodsTest). Same meaning and format as the generated ones: arrays by reference.
     */
    @Override
    public boolean equals(Object o) {
        return o == this || o instanceof NetworkChange that && Objects.equals(that.type, type)
                && that.ifindex == ifindex && Objects.equals(that.ifname, ifname) && that.state == state
                && that.mtu == mtu && Objects.equals(that.address, address) && Objects.equals(that.lladdr, lladdr)
                && that.fromDump == fromDump;
    }

    @Override
    public int hashCode() {
        int h = Objects.hashCode(type);
        h = 31 * h + ifindex;
        h = 31 * h + Objects.hashCode(ifname);
        h = 31 * h + state;
        h = 31 * h + mtu;
        h = 31 * h + Objects.hashCode(address);
        h = 31 * h + Objects.hashCode(lladdr);
        h = 31 * h + Boolean.hashCode(fromDump);
        return h;
    }

    @Override
    public String toString() {
        return new StringBuilder("NetworkChange[type=").append(type).append(", ifindex=").append(ifindex)
                .append(", ifname=").append(ifname).append(", state=").append(state).append(", mtu=").append(mtu)
                .append(", address=").append(address).append(", lladdr=").append(lladdr)
                .append(", fromDump=").append(fromDump).append(']').toString();
    }
}
