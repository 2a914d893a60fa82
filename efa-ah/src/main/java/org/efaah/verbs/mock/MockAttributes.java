package org.efaah.verbs.mock;

import org.efaah.verbs.DeviceAttributes;
import org.efaah.verbs.Gid;
import org.efaah.verbs.PortAttributes;

/**
 * What the mock's devices and ports report to {@code ibv_query_device} and {@code ibv_query_port}:
 * an EFA device as the kernel's {@code efa_query_device} and {@code efa_query_port} fill them in
 * (through the uverbs copy, which gives {@code max_sge} as the lesser of the send and receive
 * SGEs), with the queue figures of the mock's {@code efadv_query_device}; a non-EFA device as a
 * RoCE device (transport InfiniBand, link layer Ethernet).
 */
final class MockAttributes {
    /** PCI part id the mock devices report: a new-generation EFA device. */
    static final int VENDOR_PART_ID = 0xefa3;
    /** An EFA port's {@code max_msg_sz}: the kernel's {@code efa_query_port} reports the device's MTU (jumbo frames). */
    static final int EFA_MAX_MESSAGE_SIZE = 8928;
    /** The work requests and SGEs per queue of the mock's efadv_query_device (send and receive alike). */
    static final int MAX_QP_WR = 8192;
    static final int MAX_SEND_SGE = 2;
    static final int MAX_RECV_SGE = 1;
    /** The MTU as ibv_query_port's enum reaches it: EFA's 8928 rounds down to IBV_MTU_4096. */
    private static final int MTU = 4096;

    private MockAttributes() {
    }

    static DeviceAttributes device(String name, Gid firstGid, MockConfig config) {
        // efa_query_device: max_mr_size from max_mr_pages, page_size_cap, the counts, max_pkeys 1;
        // the rest (SRQs, MWs, atomics, multicast) stays 0, as EFA has none.
        DeviceAttributes.Limits limits = new DeviceAttributes.Limits(0x18_0000_0000L, 0xffff_f000L, 256, MAX_QP_WR, 0,
                Math.min(MAX_SEND_SGE, MAX_RECV_SGE), 1, 512, 32768, 262144, 0, 0, 0, 0, 0, 0);
        DeviceAttributes.IbLimits ibLimits = new DeviceAttributes.IbLimits(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0);
        // efa_ib_device_add sets node_guid from the device's GUID (here the GID's interface id, as an
        // InfiniBand port GUID is); sys_image_guid and fw_ver stay 0, which libefa words "0.0.0.0".
        long guid = interfaceId(firstGid);
        return config.efa()
                ? new DeviceAttributes(name, DeviceAttributes.AMAZON_VENDOR_ID, VENDOR_PART_ID, config.maxAh(),
                        config.maxPd(), 1, true, DeviceAttributes.TRANSPORT_UNSPECIFIED, "0.0.0.0", guid, 0,
                        VENDOR_PART_ID, limits, ibLimits)
                : new DeviceAttributes(name, 0, 0, config.maxAh(), config.maxPd(), 1, false,
                        DeviceAttributes.TRANSPORT_IB, "", guid, guid, 0, limits, ibLimits);
    }

    static PortAttributes port(int state, MockConfig config) {
        // efa_query_port: phys_state LINK_UP (5), 4X (2) at EDR (32), one VL, one P_Key, lmc 1.
        PortAttributes.Details details = new PortAttributes.Details(0, 0, 1, 0, 0, 0, 1, 0, 0, 2, 32, 5);
        return config.efa()
                ? new PortAttributes(1, state, PortAttributes.LINK_LAYER_UNSPECIFIED, config.gidTableLength(), MTU, 0,
                        EFA_MAX_MESSAGE_SIZE, MTU, 0, 1, details)
                : new PortAttributes(1, state, PortAttributes.LINK_LAYER_ETHERNET, config.gidTableLength(), MTU, 0,
                        MTU, MTU, 0, 0, details);
    }

    private static long interfaceId(Gid gid) {
        byte[] b = gid.toBytes();
        long id = 0;
        for (int i = 8; i < 16; i++) {
            id = id << 8 | (b[i] & 0xff);
        }
        return id;
    }
}
