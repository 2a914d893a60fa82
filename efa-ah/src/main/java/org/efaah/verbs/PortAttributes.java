package org.efaah.verbs;

/**
 * What {@code ibv_query_port(3)} reports about one port: what AH creation needs first, then the
 * rest as {@code ibv_devinfo} prints it.
 *
 * @param portNum        1-based port number
 * @param state          {@code enum ibv_port_state} value (4 = ACTIVE)
 * @param linkLayer      {@code IBV_LINK_LAYER_*}: 0 unspecified (EFA), 1 InfiniBand, 2 Ethernet (RoCE)
 * @param gidTableLength {@code gid_tbl_len}: valid sgid_index values are 0..gidTableLength-1
 * @param activeMtu      the active MTU in bytes (256..4096)
 * @param lid            the port's LID (InfiniBand only)
 * @param maxMessageSize {@code max_msg_sz}: the largest message the port sends, bytes (a uint32,
 *                       hence a long). On EFA a UD or SRD datagram may be this large, beyond the MTU.
 * @param maxMtu         the largest MTU the port supports, bytes (256..4096), as {@code activeMtu}
 * @param smLid          {@code sm_lid}: the subnet manager's LID (InfiniBand only)
 * @param lmc            {@code lmc}: the LID mask count
 * @param details        the other fields {@code ibv_devinfo -v} prints
 */
public record PortAttributes(int portNum, int state, int linkLayer, int gidTableLength, int activeMtu, int lid,
                             long maxMessageSize, int maxMtu, int smLid, int lmc, PortDetails details) {
    /** {@code IBV_PORT_ACTIVE}: the port passes traffic. */
    public static final int STATE_ACTIVE = 4;
    /** {@code IBV_LINK_LAYER_UNSPECIFIED}: what EFA reports. */
    public static final int LINK_LAYER_UNSPECIFIED = 0;
    /** {@code IBV_LINK_LAYER_INFINIBAND}. */
    public static final int LINK_LAYER_INFINIBAND = 1;
    /** {@code IBV_LINK_LAYER_ETHERNET}: RoCE (and rxe). */
    public static final int LINK_LAYER_ETHERNET = 2;

    /** {@return {@code ibv_port_state_str}-style name of {@link #state}} */
    public String stateName() {
        return switch (state) {
            case 0 -> "NOP";
            case 1 -> "DOWN";
            case 2 -> "INIT";
            case 3 -> "ARMED";
            case 4 -> "ACTIVE";
            case 5 -> "ACTIVE_DEFER";
            default -> "UNKNOWN(" + state + ")";
        };
    }

    /** {@return the name of {@link #linkLayer} as {@code ibv_devinfo} prints it} */
    public String linkLayerName() {
        return switch (linkLayer) {
            case LINK_LAYER_UNSPECIFIED -> "Unspecified";
            case LINK_LAYER_INFINIBAND -> "InfiniBand";
            case LINK_LAYER_ETHERNET -> "Ethernet";
            default -> "Unknown(" + linkLayer + ")";
        };
    }
}
