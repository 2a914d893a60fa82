package org.efaah.verbs;

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
public record IbDeviceLimits(int maxQpRdAtom, int maxEeRdAtom, int maxResRdAtom, int maxQpInitRdAtom,
                             int maxEeInitRdAtom, int atomicCap, int maxEe, int maxRdd, int maxRawIpv6Qp,
                             int maxRawEthyQp, int maxMcastGrp, int maxMcastQpAttach, int maxTotalMcastQpAttach,
                             int maxPkeys, int localCaAckDelay) {
}
