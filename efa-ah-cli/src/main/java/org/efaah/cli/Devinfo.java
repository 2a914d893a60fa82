package org.efaah.cli;

import java.util.ArrayList;
import java.util.List;

/**
 * The words and number forms {@code ibv_devinfo} (rdma-core's libibverbs/examples/devinfo.c)
 * prints for the enums and flags of {@code ibv_device_attr} and {@code ibv_port_attr}, so that
 * {@code devices} reads as it does.
 */
final class Devinfo {
    /** The names of the {@code IBV_DEVICE_*} bits of {@code device_cap_flags}, by bit; null where none. */
    private static final String[] DEVICE_CAP_FLAGS = new String[32];

    static {
        String[] named = {"0 RESIZE_MAX_WR", "1 BAD_PKEY_CNTR", "2 BAD_QKEY_CNTR", "3 RAW_MULTI", "4 AUTO_PATH_MIG",
            "5 CHANGE_PHY_PORT", "6 UD_AV_PORT_ENFORCE", "7 CURR_QP_STATE_MOD", "8 SHUTDOWN_PORT", "9 INIT_TYPE",
            "10 PORT_ACTIVE_EVENT", "11 SYS_IMAGE_GUID", "12 RC_RNR_NAK_GEN", "13 SRQ_RESIZE", "14 N_NOTIFY_CQ",
            "17 MEM_WINDOW", "18 UD_IP_CSUM", "20 XRC", "21 MEM_MGT_EXTENSIONS", "23 MEM_WINDOW_TYPE_2A",
            "24 MEM_WINDOW_TYPE_2B", "25 RC_IP_CSUM", "26 RAW_IP_CSUM", "29 MANAGED_FLOW_STEERING"};
        for (String s : named) {
            String[] bitAndName = s.split(" ");
            DEVICE_CAP_FLAGS[Integer.parseInt(bitAndName[0])] = bitAndName[1];
        }
    }

    private Devinfo() {
    }

    /** A GUID (host order) as four groups of four hex digits: {@code 0000:0000:0000:0000}. */
    static String guid(long guid) {
        return String.format("%04x:%04x:%04x:%04x", guid >>> 48 & 0xffff, guid >>> 32 & 0xffff, guid >>> 16 & 0xffff,
                guid & 0xffff);
    }

    /** The lines under {@code device_cap_flags}: one name per set bit, then the unknown bits. */
    static List<String> deviceCapFlags(int flags) {
        List<String> lines = new ArrayList<>();
        int unknown = 0;
        for (int bit = 0; bit < 32; bit++) {
            if ((flags & 1 << bit) != 0) {
                if (DEVICE_CAP_FLAGS[bit] != null) {
                    lines.add(DEVICE_CAP_FLAGS[bit]);
                } else {
                    unknown |= 1 << bit;
                }
            }
        }
        if (unknown != 0) {
            lines.add(String.format("Unknown flags: 0x%X", unknown));
        }
        return lines;
    }

    static String atomicCap(int cap) {
        return switch (cap) {
            case 0 -> "ATOMIC_NONE";
            case 1 -> "ATOMIC_HCA";
            case 2 -> "ATOMIC_GLOB";
            default -> "invalid atomic capability";
        };
    }

    static String portState(int state) {
        return switch (state) {
            case 1 -> "PORT_DOWN";
            case 2 -> "PORT_INIT";
            case 3 -> "PORT_ARMED";
            case 4 -> "PORT_ACTIVE";
            default -> "invalid state";
        };
    }

    static String maxVlNum(int vl) {
        return switch (vl) {
            case 1 -> "1";
            case 2 -> "2";
            case 3 -> "4";
            case 4 -> "8";
            case 5 -> "15";
            default -> "invalid value";
        };
    }

    static String width(int width) {
        return switch (width) {
            case 1 -> "1";
            case 2 -> "4";
            case 4 -> "8";
            case 8 -> "12";
            case 16 -> "2";
            default -> "invalid width";
        };
    }

    static String speed(int speed) {
        return switch (speed) {
            case 1 -> "2.5 Gbps";
            case 2 -> "5.0 Gbps";
            case 4, 8 -> "10.0 Gbps";
            case 16 -> "14.0 Gbps";
            case 32 -> "25.0 Gbps";
            case 64 -> "50.0 Gbps";
            case 128 -> "100.0 Gbps";
            case 256 -> "200.0 Gbps";
            default -> "invalid speed";
        };
    }

    static String physState(int state) {
        return switch (state) {
            case 1 -> "SLEEP";
            case 2 -> "POLLING";
            case 3 -> "DISABLED";
            case 4 -> "PORT_CONFIGURATION TRAINNING"; // sic, as ibv_devinfo spells it
            case 5 -> "LINK_UP";
            case 6 -> "LINK_ERROR_RECOVERY";
            case 7 -> "PHY TEST";
            default -> "invalid physical state";
        };
    }
}
