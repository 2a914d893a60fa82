package org.efaah.verbs;

import java.util.Objects;

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
                               long sysImageGuid, int hwVer, Limits limits, IbLimits ibLimits) {
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

    /**
     * The queue, memory and capability fields of {@code struct ibv_device_attr} (from
     * {@code ibv_query_device(3)}), named as there; {@code ibv_devinfo -v} prints them. Counts are
     * the most of each object the device holds at once.
     *
     * @param maxMrSize      {@code max_mr_size}: the largest memory region, bytes (a uint64)
     * @param pageSizeCap    {@code page_size_cap}: the page sizes the device supports, one bit each (a uint64)
     * @param maxQp          {@code max_qp}
     * @param maxQpWr        {@code max_qp_wr}: work requests per queue
     * @param deviceCapFlags {@code device_cap_flags}: {@code IBV_DEVICE_*} bits (a uint32)
     * @param maxSge         {@code max_sge}: scatter/gather entries per work request
     * @param maxSgeRd       {@code max_sge_rd}: scatter/gather entries per RDMA read
     * @param maxCq          {@code max_cq}
     * @param maxCqe         {@code max_cqe}: entries per completion queue
     * @param maxMr          {@code max_mr}
     * @param maxMw          {@code max_mw}
     * @param maxFmr         {@code max_fmr}
     * @param maxMapPerFmr   {@code max_map_per_fmr}
     * @param maxSrq         {@code max_srq}
     * @param maxSrqWr       {@code max_srq_wr}
     * @param maxSrqSge      {@code max_srq_sge}
     */
    public record Limits(long maxMrSize, long pageSizeCap, int maxQp, int maxQpWr, int deviceCapFlags, int maxSge,
                         int maxSgeRd, int maxCq, int maxCqe, int maxMr, int maxMw, int maxFmr, int maxMapPerFmr,
                         int maxSrq, int maxSrqWr, int maxSrqSge) {
        /*
         * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
         * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
         * NoObjectMethodsTest). Same meaning and format as the generated ones.
         */
        @Override
        public boolean equals(Object o) {
            return o == this || o instanceof Limits that && that.maxMrSize == maxMrSize
                    && that.pageSizeCap == pageSizeCap && that.maxQp == maxQp && that.maxQpWr == maxQpWr
                    && that.deviceCapFlags == deviceCapFlags && that.maxSge == maxSge && that.maxSgeRd == maxSgeRd
                    && that.maxCq == maxCq && that.maxCqe == maxCqe && that.maxMr == maxMr && that.maxMw == maxMw
                    && that.maxFmr == maxFmr && that.maxMapPerFmr == maxMapPerFmr && that.maxSrq == maxSrq
                    && that.maxSrqWr == maxSrqWr && that.maxSrqSge == maxSrqSge;
        }

        @Override
        public int hashCode() {
            int h = Long.hashCode(maxMrSize);
            h = 31 * h + Long.hashCode(pageSizeCap);
            h = 31 * h + maxQp;
            h = 31 * h + maxQpWr;
            h = 31 * h + deviceCapFlags;
            h = 31 * h + maxSge;
            h = 31 * h + maxSgeRd;
            h = 31 * h + maxCq;
            h = 31 * h + maxCqe;
            h = 31 * h + maxMr;
            h = 31 * h + maxMw;
            h = 31 * h + maxFmr;
            h = 31 * h + maxMapPerFmr;
            h = 31 * h + maxSrq;
            h = 31 * h + maxSrqWr;
            h = 31 * h + maxSrqSge;
            return h;
        }

        @Override
        public String toString() {
            return new StringBuilder("Limits[maxMrSize=").append(maxMrSize)
                    .append(", pageSizeCap=").append(pageSizeCap).append(", maxQp=").append(maxQp)
                    .append(", maxQpWr=").append(maxQpWr).append(", deviceCapFlags=").append(deviceCapFlags)
                    .append(", maxSge=").append(maxSge).append(", maxSgeRd=").append(maxSgeRd)
                    .append(", maxCq=").append(maxCq).append(", maxCqe=").append(maxCqe)
                    .append(", maxMr=").append(maxMr).append(", maxMw=").append(maxMw)
                    .append(", maxFmr=").append(maxFmr).append(", maxMapPerFmr=").append(maxMapPerFmr)
                    .append(", maxSrq=").append(maxSrq).append(", maxSrqWr=").append(maxSrqWr)
                    .append(", maxSrqSge=").append(maxSrqSge).append(']').toString();
        }
    }

    /**
     * The fields of {@code struct ibv_device_attr} for InfiniBand-architecture features a UD or SRD
     * endpoint does not use (RDMA read and atomic depths, EE contexts, RDDs, raw QPs, multicast,
     * P_Keys, the ACK delay), named as there; {@code ibv_devinfo -v} prints them. EFA reports 0 for
     * all but {@code max_pkeys} (1).
     *
     * @param maxQpRdAtom           {@code max_qp_rd_atom}
     * @param maxEeRdAtom           {@code max_ee_rd_atom}
     * @param maxResRdAtom          {@code max_res_rd_atom}
     * @param maxQpInitRdAtom       {@code max_qp_init_rd_atom}
     * @param maxEeInitRdAtom       {@code max_ee_init_rd_atom}
     * @param atomicCap             {@code atomic_cap}: {@code enum ibv_atomic_cap}, 0 none, 1 HCA, 2 global
     * @param maxEe                 {@code max_ee}
     * @param maxRdd                {@code max_rdd}
     * @param maxRawIpv6Qp          {@code max_raw_ipv6_qp}
     * @param maxRawEthyQp          {@code max_raw_ethy_qp}
     * @param maxMcastGrp           {@code max_mcast_grp}
     * @param maxMcastQpAttach      {@code max_mcast_qp_attach}
     * @param maxTotalMcastQpAttach {@code max_total_mcast_qp_attach}
     * @param maxPkeys              {@code max_pkeys}: P_Key table entries per port
     * @param localCaAckDelay       {@code local_ca_ack_delay}
     */
    public record IbLimits(int maxQpRdAtom, int maxEeRdAtom, int maxResRdAtom, int maxQpInitRdAtom,
                           int maxEeInitRdAtom, int atomicCap, int maxEe, int maxRdd, int maxRawIpv6Qp,
                           int maxRawEthyQp, int maxMcastGrp, int maxMcastQpAttach, int maxTotalMcastQpAttach,
                           int maxPkeys, int localCaAckDelay) {
        /*
         * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
         * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
         * NoObjectMethodsTest). Same meaning and format as the generated ones.
         */
        @Override
        public boolean equals(Object o) {
            return o == this || o instanceof IbLimits that && that.maxQpRdAtom == maxQpRdAtom
                    && that.maxEeRdAtom == maxEeRdAtom && that.maxResRdAtom == maxResRdAtom
                    && that.maxQpInitRdAtom == maxQpInitRdAtom && that.maxEeInitRdAtom == maxEeInitRdAtom
                    && that.atomicCap == atomicCap && that.maxEe == maxEe && that.maxRdd == maxRdd
                    && that.maxRawIpv6Qp == maxRawIpv6Qp && that.maxRawEthyQp == maxRawEthyQp
                    && that.maxMcastGrp == maxMcastGrp && that.maxMcastQpAttach == maxMcastQpAttach
                    && that.maxTotalMcastQpAttach == maxTotalMcastQpAttach && that.maxPkeys == maxPkeys
                    && that.localCaAckDelay == localCaAckDelay;
        }

        @Override
        public int hashCode() {
            int h = maxQpRdAtom;
            h = 31 * h + maxEeRdAtom;
            h = 31 * h + maxResRdAtom;
            h = 31 * h + maxQpInitRdAtom;
            h = 31 * h + maxEeInitRdAtom;
            h = 31 * h + atomicCap;
            h = 31 * h + maxEe;
            h = 31 * h + maxRdd;
            h = 31 * h + maxRawIpv6Qp;
            h = 31 * h + maxRawEthyQp;
            h = 31 * h + maxMcastGrp;
            h = 31 * h + maxMcastQpAttach;
            h = 31 * h + maxTotalMcastQpAttach;
            h = 31 * h + maxPkeys;
            h = 31 * h + localCaAckDelay;
            return h;
        }

        @Override
        public String toString() {
            return new StringBuilder("IbLimits[maxQpRdAtom=").append(maxQpRdAtom)
                    .append(", maxEeRdAtom=").append(maxEeRdAtom).append(", maxResRdAtom=").append(maxResRdAtom)
                    .append(", maxQpInitRdAtom=").append(maxQpInitRdAtom)
                    .append(", maxEeInitRdAtom=").append(maxEeInitRdAtom).append(", atomicCap=").append(atomicCap)
                    .append(", maxEe=").append(maxEe).append(", maxRdd=").append(maxRdd)
                    .append(", maxRawIpv6Qp=").append(maxRawIpv6Qp).append(", maxRawEthyQp=").append(maxRawEthyQp)
                    .append(", maxMcastGrp=").append(maxMcastGrp)
                    .append(", maxMcastQpAttach=").append(maxMcastQpAttach)
                    .append(", maxTotalMcastQpAttach=").append(maxTotalMcastQpAttach)
                    .append(", maxPkeys=").append(maxPkeys).append(", localCaAckDelay=").append(localCaAckDelay)
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
        return o == this || o instanceof DeviceAttributes that && Objects.equals(that.name, name)
                && that.vendorId == vendorId && that.vendorPartId == vendorPartId && that.maxAh == maxAh
                && that.maxPd == maxPd && that.portCount == portCount && that.efa == efa
                && that.transportType == transportType && Objects.equals(that.fwVer, fwVer)
                && that.nodeGuid == nodeGuid && that.sysImageGuid == sysImageGuid && that.hwVer == hwVer
                && Objects.equals(that.limits, limits) && Objects.equals(that.ibLimits, ibLimits);
    }

    @Override
    public int hashCode() {
        int h = Objects.hashCode(name);
        h = 31 * h + vendorId;
        h = 31 * h + vendorPartId;
        h = 31 * h + maxAh;
        h = 31 * h + maxPd;
        h = 31 * h + portCount;
        h = 31 * h + Boolean.hashCode(efa);
        h = 31 * h + transportType;
        h = 31 * h + Objects.hashCode(fwVer);
        h = 31 * h + Long.hashCode(nodeGuid);
        h = 31 * h + Long.hashCode(sysImageGuid);
        h = 31 * h + hwVer;
        h = 31 * h + Objects.hashCode(limits);
        h = 31 * h + Objects.hashCode(ibLimits);
        return h;
    }

    @Override
    public String toString() {
        return new StringBuilder("DeviceAttributes[name=").append(name).append(", vendorId=").append(vendorId)
                .append(", vendorPartId=").append(vendorPartId).append(", maxAh=").append(maxAh)
                .append(", maxPd=").append(maxPd).append(", portCount=").append(portCount)
                .append(", efa=").append(efa).append(", transportType=").append(transportType)
                .append(", fwVer=").append(fwVer).append(", nodeGuid=").append(nodeGuid)
                .append(", sysImageGuid=").append(sysImageGuid).append(", hwVer=").append(hwVer)
                .append(", limits=").append(limits).append(", ibLimits=").append(ibLimits).append(']').toString();
    }
}
