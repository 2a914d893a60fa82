package org.efaah.verbs;

import java.util.Objects;

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
                             long maxMessageSize, int maxMtu, int smLid, int lmc, Details details) {
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

    /**
     * The fields of {@code struct ibv_port_attr} (from {@code ibv_query_port(3)}) that
     * {@code ibv_devinfo -v} prints beyond {@link PortAttributes}, named as there; all are unsigned
     * in C and none exceeds 31 bits.
     *
     * @param portCapFlags  {@code port_cap_flags}: {@code IBV_PORT_*} capability bits
     * @param portCapFlags2 {@code port_cap_flags2}
     * @param maxVlNum      {@code max_vl_num}: encoded as InfiniBand does (1 = 1 VL, 2 = 2, 3 = 4, 4 = 8, 5 = 15)
     * @param badPkeyCntr   {@code bad_pkey_cntr}
     * @param qkeyViolCntr  {@code qkey_viol_cntr}: datagrams dropped for a wrong Q_Key
     * @param smSl          {@code sm_sl}: the subnet manager's service level
     * @param pkeyTblLen    {@code pkey_tbl_len}
     * @param subnetTimeout {@code subnet_timeout}
     * @param initTypeReply {@code init_type_reply}
     * @param activeWidth   {@code active_width}: 1 = 1X, 2 = 4X, 4 = 8X, 8 = 12X, 16 = 2X
     * @param activeSpeed   {@code active_speed}, or {@code active_speed_ex} where libibverbs has it
     *                      and the kernel set it: 1 = 2.5 Gbps per lane .. 32 = 25 Gbps (EDR), 64, 128, 256
     * @param physState     {@code phys_state}: 5 = LINK_UP
     */
    public record Details(int portCapFlags, int portCapFlags2, int maxVlNum, int badPkeyCntr, int qkeyViolCntr,
                          int smSl, int pkeyTblLen, int subnetTimeout, int initTypeReply, int activeWidth,
                          int activeSpeed, int physState) {
        /*
         * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
         * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
         * NoObjectMethodsTest). Same meaning and format as the generated ones.
         */
        @Override
        public boolean equals(Object o) {
            return o == this || o instanceof Details that && that.portCapFlags == portCapFlags
                    && that.portCapFlags2 == portCapFlags2 && that.maxVlNum == maxVlNum
                    && that.badPkeyCntr == badPkeyCntr && that.qkeyViolCntr == qkeyViolCntr && that.smSl == smSl
                    && that.pkeyTblLen == pkeyTblLen && that.subnetTimeout == subnetTimeout
                    && that.initTypeReply == initTypeReply && that.activeWidth == activeWidth
                    && that.activeSpeed == activeSpeed && that.physState == physState;
        }

        @Override
        public int hashCode() {
            int h = portCapFlags;
            h = 31 * h + portCapFlags2;
            h = 31 * h + maxVlNum;
            h = 31 * h + badPkeyCntr;
            h = 31 * h + qkeyViolCntr;
            h = 31 * h + smSl;
            h = 31 * h + pkeyTblLen;
            h = 31 * h + subnetTimeout;
            h = 31 * h + initTypeReply;
            h = 31 * h + activeWidth;
            h = 31 * h + activeSpeed;
            h = 31 * h + physState;
            return h;
        }

        @Override
        public String toString() {
            return new StringBuilder("Details[portCapFlags=").append(portCapFlags)
                    .append(", portCapFlags2=").append(portCapFlags2).append(", maxVlNum=").append(maxVlNum)
                    .append(", badPkeyCntr=").append(badPkeyCntr).append(", qkeyViolCntr=").append(qkeyViolCntr)
                    .append(", smSl=").append(smSl).append(", pkeyTblLen=").append(pkeyTblLen)
                    .append(", subnetTimeout=").append(subnetTimeout)
                    .append(", initTypeReply=").append(initTypeReply).append(", activeWidth=").append(activeWidth)
                    .append(", activeSpeed=").append(activeSpeed).append(", physState=").append(physState)
                    .append(']').toString();
        }
    }

    /*
     * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
     * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
     * NoObjectMethodsTest). Same meaning and format as the generated ones.
     */
    @Override
    public boolean equals(Object o) {
        return o == this || o instanceof PortAttributes that && that.portNum == portNum && that.state == state
                && that.linkLayer == linkLayer && that.gidTableLength == gidTableLength
                && that.activeMtu == activeMtu && that.lid == lid && that.maxMessageSize == maxMessageSize
                && that.maxMtu == maxMtu && that.smLid == smLid && that.lmc == lmc
                && Objects.equals(that.details, details);
    }

    @Override
    public int hashCode() {
        int h = portNum;
        h = 31 * h + state;
        h = 31 * h + linkLayer;
        h = 31 * h + gidTableLength;
        h = 31 * h + activeMtu;
        h = 31 * h + lid;
        h = 31 * h + Long.hashCode(maxMessageSize);
        h = 31 * h + maxMtu;
        h = 31 * h + smLid;
        h = 31 * h + lmc;
        h = 31 * h + Objects.hashCode(details);
        return h;
    }

    @Override
    public String toString() {
        return new StringBuilder("PortAttributes[portNum=").append(portNum).append(", state=").append(state)
                .append(", linkLayer=").append(linkLayer).append(", gidTableLength=").append(gidTableLength)
                .append(", activeMtu=").append(activeMtu).append(", lid=").append(lid)
                .append(", maxMessageSize=").append(maxMessageSize).append(", maxMtu=").append(maxMtu)
                .append(", smLid=").append(smLid).append(", lmc=").append(lmc).append(", details=").append(details)
                .append(']').toString();
    }
}
