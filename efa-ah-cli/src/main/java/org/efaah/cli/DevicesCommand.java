package org.efaah.cli;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import org.efaah.verbs.Device;
import org.efaah.verbs.DeviceAttributes;
import org.efaah.verbs.Gid;
import org.efaah.verbs.GidType;
import org.efaah.verbs.PortAttributes;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.spi.VerbsProvider;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** Lists devices, ports and GIDs, like {@code ibv_devinfo}. */
@Command(name = "devices",
        description = "List verbs devices with their ports and max_ah, and the provider serving them "
                + "(as ibv_devinfo prints them; -v adds every ibv_device_attr and ibv_port_attr field and the GIDs).")
final class DevicesCommand implements Callable<Integer> {
    @Mixin
    ProviderOptions providerOptions;

    @Option(names = {"-d", "--ib-dev"}, paramLabel = "NAME", description = "Only this device (default: all).")
    String deviceName;

    @Option(names = {"-i", "--ib-port"}, paramLabel = "PORT",
            description = "Only this port of each device, 1..255 (default: all ports).")
    Integer portNum;

    @Option(names = "-v", description = "All attributes of ibv_device_attr and ibv_port_attr, and every GID "
            + "(as ibv_devinfo -v).")
    boolean allAttributes;

    @Mixin
    OutputOptions output;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        int onlyPort = portNum == null ? 0 : Check.ibPort(spec, portNum);
        Report report = new Report(spec.commandLine().getOut(), output.json);
        try (VerbsProvider provider = providerOptions.open(spec, 0)) {
            boolean mock = provider.name().equals("mock");
            if (mock && !providerOptions.mockChosen()) {
                // auto settled for the mock: listing its invented devices would pass for hardware.
                spec.commandLine().getErr().printf("%s: no RDMA devices (%s); --provider mock lists the mock's%n",
                        spec.qualifiedName(), providerOptions.describe(provider, output.verbose)
                                .replaceFirst("^mock \\((.*)\\)$", "$1"));
                return Main.FAILED;
            }
            report.line("provider: %s", providerOptions.describe(provider, output.verbose));
            report.put("command", "devices").put("provider", provider.name());
            List<String> names = provider.deviceNames();
            if (deviceName != null) {
                providerOptions.openDevice(spec, provider, "--ib-dev", deviceName).close();
                names = List.of(deviceName);
            }
            if (names.isEmpty()) {
                spec.commandLine().getErr().printf("%s: no RDMA devices on the %s provider%n", spec.qualifiedName(),
                        provider.name());
                return Main.FAILED;
            }
            List<Object> devices = new ArrayList<>();
            for (String name : names) {
                try (Device device = Device.open(provider, name)) {
                    if (onlyPort != 0) {
                        Check.ibPort(spec, device, onlyPort);
                    }
                    devices.add(device(report, device, mock, onlyPort));
                }
            }
            report.put("devices", devices);
        }
        report.finish();
        return 0;
    }

    private Map<String, Object> device(Report report, Device device, boolean mock, int onlyPort) {
        DeviceAttributes a = device.attributes();
        boolean verbose = allAttributes || output.verbose;
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("name", a.name());
        d.put("mock", mock);
        d.put("efa", a.efa());
        // The lines and their order are ibv_devinfo's (print_hca_cap), tabs included.
        report.line("hca_id:\t%s", a.name());
        if (mock) {
            // On its own line under every device, so no excerpt of this output passes for hardware.
            report.line("\tmock:\t\t\tyes: simulated by efa-ah's mock provider, no hardware");
        }
        report.line("\ttransport:\t\t\t%s (%d)", a.transportName(), a.transportType());
        d.put("transport", a.transportType());
        if (!a.fwVer().isEmpty()) {
            report.line("\tfw_ver:\t\t\t\t%s", a.fwVer());
        }
        d.put("fw_ver", a.fwVer());
        report.line("\tnode_guid:\t\t\t%s", Devinfo.guid(a.nodeGuid()));
        d.put("node_guid", Devinfo.guid(a.nodeGuid()));
        report.line("\tsys_image_guid:\t\t\t%s", Devinfo.guid(a.sysImageGuid()));
        d.put("sys_image_guid", Devinfo.guid(a.sysImageGuid()));
        report.line("\tvendor_id:\t\t\t0x%04x", a.vendorId()); // 0x1d0f: Amazon's, EFA ("efa" in --json)
        d.put("vendor_id", a.vendorId());
        report.line("\tvendor_part_id:\t\t\t%d", a.vendorPartId());
        d.put("vendor_part_id", a.vendorPartId());
        report.line("\thw_ver:\t\t\t\t0x%X", a.hwVer());
        d.put("hw_ver", Integer.toUnsignedLong(a.hwVer()));
        report.line("\tphys_port_cnt:\t\t\t%d", a.portCount());
        d.put("phys_port_cnt", a.portCount());
        d.put("max_ah", a.maxAh());
        d.put("max_pd", a.maxPd());
        if (verbose) {
            verboseDevice(report, a, d);
        } else {
            report.line("\tmax_ah:\t\t\t\t%d", a.maxAh()); // not ibv_devinfo's without -v, but what this tool is for
        }
        List<Object> ports = new ArrayList<>();
        for (int port = 1; port <= a.portCount(); port++) {
            if (onlyPort == 0 || port == onlyPort) {
                ports.add(port(report, device, a, port, verbose));
            }
        }
        d.put("ports", ports);
        return d;
    }

    private static void verboseDevice(Report report, DeviceAttributes a, Map<String, Object> d) {
        DeviceAttributes.Limits l = a.limits();
        DeviceAttributes.IbLimits ib = a.ibLimits();
        report.line("\tmax_mr_size:\t\t\t0x%x", l.maxMrSize());
        report.line("\tpage_size_cap:\t\t\t0x%x", l.pageSizeCap());
        report.line("\tmax_qp:\t\t\t\t%d", l.maxQp());
        report.line("\tmax_qp_wr:\t\t\t%d", l.maxQpWr());
        report.line("\tdevice_cap_flags:\t\t0x%08x", l.deviceCapFlags());
        List<String> flags = Devinfo.deviceCapFlags(l.deviceCapFlags());
        flags.forEach(f -> report.line("\t\t\t\t\t%s", f));
        report.line("\tmax_sge:\t\t\t%d", l.maxSge());
        report.line("\tmax_sge_rd:\t\t\t%d", l.maxSgeRd());
        report.line("\tmax_cq:\t\t\t\t%d", l.maxCq());
        report.line("\tmax_cqe:\t\t\t%d", l.maxCqe());
        report.line("\tmax_mr:\t\t\t\t%d", l.maxMr());
        report.line("\tmax_pd:\t\t\t\t%d", a.maxPd());
        report.line("\tmax_qp_rd_atom:\t\t\t%d", ib.maxQpRdAtom());
        report.line("\tmax_ee_rd_atom:\t\t\t%d", ib.maxEeRdAtom());
        report.line("\tmax_res_rd_atom:\t\t%d", ib.maxResRdAtom());
        report.line("\tmax_qp_init_rd_atom:\t\t%d", ib.maxQpInitRdAtom());
        report.line("\tmax_ee_init_rd_atom:\t\t%d", ib.maxEeInitRdAtom());
        report.line("\tatomic_cap:\t\t\t%s (%d)", Devinfo.atomicCap(ib.atomicCap()), ib.atomicCap());
        report.line("\tmax_ee:\t\t\t\t%d", ib.maxEe());
        report.line("\tmax_rdd:\t\t\t%d", ib.maxRdd());
        report.line("\tmax_mw:\t\t\t\t%d", l.maxMw());
        report.line("\tmax_raw_ipv6_qp:\t\t%d", ib.maxRawIpv6Qp());
        report.line("\tmax_raw_ethy_qp:\t\t%d", ib.maxRawEthyQp());
        report.line("\tmax_mcast_grp:\t\t\t%d", ib.maxMcastGrp());
        report.line("\tmax_mcast_qp_attach:\t\t%d", ib.maxMcastQpAttach());
        report.line("\tmax_total_mcast_qp_attach:\t%d", ib.maxTotalMcastQpAttach());
        report.line("\tmax_ah:\t\t\t\t%d", a.maxAh());
        report.line("\tmax_fmr:\t\t\t%d", l.maxFmr());
        if (l.maxFmr() != 0) {
            report.line("\tmax_map_per_fmr:\t\t%d", l.maxMapPerFmr());
        }
        report.line("\tmax_srq:\t\t\t%d", l.maxSrq());
        if (l.maxSrq() != 0) {
            report.line("\tmax_srq_wr:\t\t\t%d", l.maxSrqWr());
            report.line("\tmax_srq_sge:\t\t\t%d", l.maxSrqSge());
        }
        report.line("\tmax_pkeys:\t\t\t%d", ib.maxPkeys());
        report.line("\tlocal_ca_ack_delay:\t\t%d", ib.localCaAckDelay());
        Map<String, Object> limits = new LinkedHashMap<>();
        limits.put("max_mr_size", l.maxMrSize());
        limits.put("page_size_cap", l.pageSizeCap());
        limits.put("max_qp", l.maxQp());
        limits.put("max_qp_wr", l.maxQpWr());
        limits.put("device_cap_flags", Integer.toUnsignedLong(l.deviceCapFlags()));
        limits.put("max_sge", l.maxSge());
        limits.put("max_sge_rd", l.maxSgeRd());
        limits.put("max_cq", l.maxCq());
        limits.put("max_cqe", l.maxCqe());
        limits.put("max_mr", l.maxMr());
        limits.put("max_mw", l.maxMw());
        limits.put("max_srq", l.maxSrq());
        limits.put("atomic_cap", ib.atomicCap());
        limits.put("max_pkeys", ib.maxPkeys());
        d.put("limits", limits);
    }

    /** As ibv_devinfo prints an MTU: the bytes and the enum ibv_mtu, {@code 1024 (3)}; other sizes as bytes. */
    static String mtu(int bytes) {
        for (int e = 1; e <= 5; e++) {
            if (bytes == 128 << e) {
                return bytes + " (" + e + ")";
            }
        }
        return Integer.toString(bytes);
    }

    /**
     * Whether a GID type query failed because the libibverbs cannot tell types at all: it has no
     * {@code ibv_query_gid_ex} (rdma-core older than 32), which the provider says with EOPNOTSUPP,
     * its one "unsupported" answer.
     */
    static boolean typeUnknown(VerbsException e) {
        return e.errno() == org.efaah.verbs.Errno.EOPNOTSUPP;
    }

    /**
     * A GID as {@code ibv_devinfo -v} prints it (rdma-core's {@code print_formated_gid}): a RoCE v2
     * entry in IPv6 notation, an InfiniBand, EFA or RoCE v1 entry as eight groups of four hex
     * digits; on an Ethernet port followed by {@code , RoCE v1} or {@code , RoCE v2}. A GID of
     * unknown type ({@code type} null) as {@code ibv_devinfo} printed every GID before it printed
     * types (rdma-core 28's {@code print_all_port_gids}): eight groups, nothing after them.
     */
    static String gidLine(Gid gid, GidType type, int linkLayer) {
        String text;
        if (type == GidType.ROCE_V2) {
            text = gid.toString();
        } else {
            byte[] b = gid.toBytes();
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < b.length; i += 2) {
                sb.append(i == 0 ? "" : ":").append(String.format("%02x%02x", b[i], b[i + 1]));
            }
            text = sb.toString();
        }
        if (linkLayer == PortAttributes.LINK_LAYER_ETHERNET && type != null && type != GidType.IB) {
            text += type == GidType.ROCE_V2 ? ", RoCE v2" : ", RoCE v1";
        }
        return text;
    }

    private Map<String, Object> port(Report report, Device device, DeviceAttributes a, int port, boolean verbose) {
        PortAttributes p = device.port(port);
        PortAttributes.Details x = p.details();
        report.line("\t\tport:\t%d", port);
        report.line("\t\t\tstate:\t\t\t%s (%d)", Devinfo.portState(p.state()), p.state());
        report.line("\t\t\tmax_mtu:\t\t%s", mtu(p.maxMtu()));
        report.line("\t\t\tactive_mtu:\t\t%s", mtu(p.activeMtu()));
        report.line("\t\t\tsm_lid:\t\t\t%d", p.smLid());
        report.line("\t\t\tport_lid:\t\t%d", p.lid());
        report.line("\t\t\tport_lmc:\t\t0x%02x", p.lmc());
        report.line("\t\t\tlink_layer:\t\t%s", p.linkLayerName());
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("port", port);
        m.put("state", p.state());
        m.put("state_name", Devinfo.portState(p.state()));
        m.put("max_mtu", p.maxMtu());
        m.put("active_mtu", p.activeMtu());
        m.put("sm_lid", p.smLid());
        m.put("port_lid", p.lid());
        m.put("port_lmc", p.lmc());
        m.put("link_layer", p.linkLayerName());
        m.put("max_msg_sz", p.maxMessageSize());
        m.put("gid_tbl_len", p.gidTableLength());
        if (verbose) {
            report.line("\t\t\tmax_msg_sz:\t\t0x%x", p.maxMessageSize());
            report.line("\t\t\tport_cap_flags:\t\t0x%08x", x.portCapFlags());
            report.line("\t\t\tport_cap_flags2:\t0x%04x", x.portCapFlags2());
            report.line("\t\t\tmax_vl_num:\t\t%s (%d)", Devinfo.maxVlNum(x.maxVlNum()), x.maxVlNum());
            report.line("\t\t\tbad_pkey_cntr:\t\t0x%x", x.badPkeyCntr());
            report.line("\t\t\tqkey_viol_cntr:\t\t0x%x", x.qkeyViolCntr());
            report.line("\t\t\tsm_sl:\t\t\t%d", x.smSl());
            report.line("\t\t\tpkey_tbl_len:\t\t%d", x.pkeyTblLen());
            report.line("\t\t\tgid_tbl_len:\t\t%d", p.gidTableLength());
            report.line("\t\t\tsubnet_timeout:\t\t%d", x.subnetTimeout());
            report.line("\t\t\tinit_type_reply:\t%d", x.initTypeReply());
            report.line("\t\t\tactive_width:\t\t%sX (%d)", Devinfo.width(x.activeWidth()), x.activeWidth());
            report.line("\t\t\tactive_speed:\t\t%s (%d)", Devinfo.speed(x.activeSpeed()), x.activeSpeed());
            if (a.transportType() == DeviceAttributes.TRANSPORT_IB) {
                report.line("\t\t\tphys_state:\t\t%s (%d)", Devinfo.physState(x.physState()), x.physState());
            }
            m.put("port_cap_flags", Integer.toUnsignedLong(x.portCapFlags()));
            m.put("max_vl_num", x.maxVlNum());
            m.put("qkey_viol_cntr", Integer.toUnsignedLong(x.qkeyViolCntr()));
            m.put("pkey_tbl_len", x.pkeyTblLen());
            m.put("active_width", x.activeWidth());
            m.put("active_speed", x.activeSpeed());
            m.put("phys_state", x.physState());
            Map<String, Object> gids = new LinkedHashMap<>();
            for (int i = 0; i < p.gidTableLength(); i++) {
                Gid gid;
                try {
                    gid = device.gid(port, i);
                } catch (VerbsException e) {
                    continue; // newer kernels answer an empty slot with an error (ENODATA)
                }
                if (!gid.isZero()) {
                    GidType type = null; // where the libibverbs cannot tell: no type, as ibv_devinfo before types
                    boolean line = true;
                    try {
                        type = device.gidType(port, i);
                    } catch (VerbsException e) {
                        // ibv_devinfo prints no line for a GID whose type query failed (rdma-core 31's
                        // print_all_port_gids).
                        line = typeUnknown(e);
                    }
                    if (line) {
                        report.line("\t\t\tGID[%3d]:\t\t%s", i, gidLine(gid, type, p.linkLayer()));
                    }
                    gids.put(Integer.toString(i), gid.toString());
                }
            }
            m.put("gids", gids);
        }
        report.line("");
        return m;
    }
}
