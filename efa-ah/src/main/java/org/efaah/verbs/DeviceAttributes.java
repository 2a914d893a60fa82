package org.efaah.verbs;

/**
 * What {@code ibv_query_device(3)} (and, on EFA, {@code efadv_query_device}) report about a
 * device: what an AH cache needs first, then the rest of {@code struct ibv_device_attr} as
 * {@code ibv_devinfo} prints it.
 *
 * @param name          the device name, e.g. {@code efa_0}, {@code rxe0}, {@code mlx5_0}
 * @param vendorId      the PCI vendor id ({@code 0x1d0f} for Amazon EFA)
 * @param vendorPartId  the vendor's part id
 * @param maxAh         {@code max_ah}: the most AHs the device holds at once
 * @param maxPd         {@code max_pd}
 * @param portCount     {@code phys_port_cnt}; ports are numbered 1..portCount
 * @param efa           whether the device is an EFA device (libefa answered for it). EFA keys an
 *                      AH by the destination GID alone.
 * @param transportType the device's {@code enum ibv_transport_type}: {@link #TRANSPORT_IB} for
 *                      InfiniBand and RoCE (rxe too), {@link #TRANSPORT_UNSPECIFIED} for EFA
 * @param fwVer         {@code fw_ver}, the firmware version as the driver words it; empty if none
 * @param nodeGuid      {@code node_guid}, in host byte order (0 where the driver sets none)
 * @param sysImageGuid  {@code sys_image_guid}, in host byte order
 * @param hwVer         {@code hw_ver} (a uint32; on EFA the PCI subsystem device id)
 * @param limits        the queue, memory and capability fields
 * @param ibLimits      the fields for InfiniBand features a datagram endpoint does not use
 */
public record DeviceAttributes(String name, int vendorId, int vendorPartId, int maxAh, int maxPd,
                               int portCount, boolean efa, int transportType, String fwVer, long nodeGuid,
                               long sysImageGuid, int hwVer, DeviceLimits limits, IbDeviceLimits ibLimits) {
    /** The PCI vendor id of Amazon, which makes EFA devices. */
    public static final int AMAZON_VENDOR_ID = 0x1d0f;
    /** {@code IBV_TRANSPORT_IB}: InfiniBand and RoCE devices. */
    public static final int TRANSPORT_IB = 0;
    /** {@code IBV_TRANSPORT_UNSPECIFIED}: what EFA devices report (their node type is unspecified). */
    public static final int TRANSPORT_UNSPECIFIED = 4;

    /** {@return the name of {@link #transportType} as {@code ibv_devinfo} prints it (rdma-core's transport_str)} */
    public String transportName() {
        return switch (transportType) {
            case TRANSPORT_IB -> "InfiniBand";
            case 1 -> "iWARP";
            case 2 -> "usNIC";
            case 3 -> "usNIC UDP";
            case TRANSPORT_UNSPECIFIED -> "unspecified";
            default -> "invalid transport";
        };
    }
}
