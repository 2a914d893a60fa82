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
import org.efaah.verbs.VerbsProvider;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** Lists devices, ports and GIDs, like {@code ibv_devinfo}. */
@Command(name = "devices",
        description = "List verbs devices with their ports and max_ah, and the provider serving them "
                + "(like ibv_devinfo; -v adds max_pd and the GID tables).")
final class DevicesCommand implements Callable<Integer> {
    @Mixin
    ProviderOptions providerOptions;

    @Option(names = {"-d", "--ib-dev"}, paramLabel = "NAME", description = "Only this device (default: all).")
    String deviceName;

    @Option(names = "-v", description = "All attributes: max_pd, gid_tbl_len and every GID (as ibv_devinfo -v).")
    boolean allAttributes;

    @Mixin
    OutputOptions output;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
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
                    devices.add(device(report, device, mock));
                }
            }
            report.put("devices", devices);
        }
        report.finish();
        return 0;
    }

    private Map<String, Object> device(Report report, Device device, boolean mock) {
        DeviceAttributes a = device.attributes();
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("name", a.name());
        d.put("vendor_id", a.vendorId());
        d.put("vendor_part_id", a.vendorPartId());
        d.put("efa", a.efa());
        d.put("max_ah", a.maxAh());
        d.put("max_pd", a.maxPd());
        d.put("phys_port_cnt", a.portCount());
        report.line("hca_id: %s", a.name());
        if (mock) {
            // On its own line under every device, so no excerpt of this output passes for hardware.
            report.line("\tmock:\t\t\tyes: simulated by efa-ah's mock provider, no hardware");
        }
        d.put("mock", mock);
        report.line("\tvendor_id:\t\t0x%04x%s", a.vendorId(), a.efa() ? " (EFA)" : "");
        report.line("\tvendor_part_id:\t\t%d", a.vendorPartId());
        report.line("\tmax_ah:\t\t\t%d", a.maxAh());
        if (allAttributes || output.verbose) {
            report.line("\tmax_pd:\t\t\t%d", a.maxPd());
        }
        report.line("\tphys_port_cnt:\t\t%d", a.portCount());
        List<Object> ports = new ArrayList<>();
        for (int port = 1; port <= a.portCount(); port++) {
            ports.add(port(report, device, port));
        }
        d.put("ports", ports);
        return d;
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

    private static GidType gidType(Device device, int port, int index) {
        try {
            return device.gidType(port, index);
        } catch (VerbsException e) {
            return null; // as ibv_devinfo, which then prints no type
        }
    }

    /**
     * A GID as {@code ibv_devinfo -v} prints it (rdma-core's {@code print_formated_gid}): a RoCE v2
     * entry in IPv6 notation, an InfiniBand, EFA or RoCE v1 entry as eight groups of four hex
     * digits; on an Ethernet port followed by {@code , RoCE v1} or {@code , RoCE v2}.
     */
    static String gidLine(Gid gid, GidType type, int linkLayer) {
        String text;
        if (type == GidType.ROCE_V2 || type == null) {
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

    private Map<String, Object> port(Report report, Device device, int port) {
        PortAttributes p = device.port(port);
        // ibv_devinfo prints the name from ibv_port_state_str and the enum value: PORT_ACTIVE (4).
        String state = "PORT_" + p.stateName() + " (" + p.state() + ")";
        report.line("\t\tport:\t%d", port);
        report.line("\t\t\tstate:\t\t\t%s", state);
        report.line("\t\t\tactive_mtu:\t\t%s", mtu(p.activeMtu()));
        report.line("\t\t\tport_lid:\t\t%d", p.lid());
        report.line("\t\t\tlink_layer:\t\t%s", p.linkLayerName());
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("port", port);
        m.put("state", p.state());
        m.put("state_name", "PORT_" + p.stateName());
        m.put("active_mtu", p.activeMtu());
        m.put("port_lid", p.lid());
        m.put("link_layer", p.linkLayerName());
        m.put("gid_tbl_len", p.gidTableLength());
        if (allAttributes || output.verbose) {
            report.line("\t\t\tgid_tbl_len:\t\t%d", p.gidTableLength());
            Map<String, Object> gids = new LinkedHashMap<>();
            for (int i = 0; i < p.gidTableLength(); i++) {
                Gid gid;
                try {
                    gid = device.gid(port, i);
                } catch (VerbsException e) {
                    continue; // newer kernels answer an empty slot with an error (ENODATA)
                }
                if (!gid.isZero()) {
                    GidType type = gidType(device, port, i);
                    report.line("\t\t\tGID[%3d]:\t\t%s", i, gidLine(gid, type, p.linkLayer()));
                    gids.put(Integer.toString(i), gid.toString());
                }
            }
            m.put("gids", gids);
        }
        return m;
    }
}
