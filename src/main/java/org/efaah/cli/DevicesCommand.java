package org.efaah.cli;

import java.io.PrintWriter;
import java.util.List;
import java.util.concurrent.Callable;
import org.efaah.verbs.Device;
import org.efaah.verbs.DeviceAttributes;
import org.efaah.verbs.Gid;
import org.efaah.verbs.PortAttributes;
import org.efaah.verbs.VerbsProvider;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** Lists devices, ports and GIDs, like {@code ibv_devinfo}. */
@Command(name = "devices", mixinStandardHelpOptions = true,
        description = "List verbs devices with their ports, GIDs and max_ah, and the provider serving them.")
final class DevicesCommand implements Callable<Integer> {
    @Mixin
    ProviderOptions providerOptions;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        try (VerbsProvider provider = providerOptions.open(0)) {
            out.println("provider: " + providerOptions.describe(provider));
            List<String> names = provider.deviceNames();
            if (names.isEmpty()) {
                out.println("no devices");
            }
            for (String name : names) {
                try (Device device = Device.open(provider, name)) {
                    DeviceAttributes a = device.attributes();
                    out.printf("device %s%n", a.name());
                    out.printf("  vendor_id:      0x%04x%s%n", a.vendorId(), a.efa() ? " (EFA)" : "");
                    out.printf("  vendor_part_id: 0x%04x%n", a.vendorPartId());
                    out.printf("  max_ah:         %d%n", a.maxAh());
                    out.printf("  max_pd:         %d%n", a.maxPd());
                    out.printf("  phys_port_cnt:  %d%n", a.portCount());
                    for (int port = 1; port <= a.portCount(); port++) {
                        PortAttributes p = device.port(port);
                        out.printf("  port %d: state %s, link_layer %s, active_mtu %d, gid_tbl_len %d%n", port,
                                p.stateName(), p.linkLayerName(), p.activeMtu(), p.gidTableLength());
                        for (int i = 0; i < p.gidTableLength(); i++) {
                            Gid gid;
                            try {
                                gid = device.gid(port, i);
                            } catch (org.efaah.verbs.VerbsException e) {
                                continue; // newer kernels answer an empty slot with an error
                            }
                            if (!gid.isZero()) {
                                out.printf("    GID[%3d]: %s%n", i, gid);
                            }
                        }
                    }
                }
            }
        }
        out.flush();
        return 0;
    }
}
