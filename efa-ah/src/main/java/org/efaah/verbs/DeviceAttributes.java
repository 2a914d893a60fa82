package org.efaah.verbs;

/**
 * What {@code ibv_query_device(3)} (and, on EFA, {@code efadv_query_device}) report about a
 * device, reduced to what an AH cache needs.
 *
 * @param name          the device name, e.g. {@code efa_0}, {@code rxe0}, {@code mlx5_0}
 * @param vendorId      the PCI vendor id ({@code 0x1d0f} for Amazon EFA)
 * @param vendorPartId  the vendor's part id
 * @param maxAh         {@code max_ah}: the most AHs the device holds at once
 * @param maxPd         {@code max_pd}
 * @param portCount     {@code phys_port_cnt}; ports are numbered 1..portCount
 * @param efa           whether the device is an EFA device (libefa answered for it). EFA keys an
 *                      AH by the destination GID alone.
 */
public record DeviceAttributes(String name, int vendorId, int vendorPartId, int maxAh, int maxPd,
                               int portCount, boolean efa) {
    /** The PCI vendor id of Amazon, which makes EFA devices. */
    public static final int AMAZON_VENDOR_ID = 0x1d0f;
}
