package org.efaah.cli;

import java.util.Locale;
import org.efaah.verbs.Device;
import org.efaah.verbs.QueuePairType;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;

/** {@code --transport ud|srd}, one option for the datagram commands ({@code pingpong}, {@code stream}). */
final class TransportOption {
    @Option(names = "--transport", paramLabel = "ud|srd",
            description = "Datagram transport: ud (every device) or srd (EFA only) (default: ${DEFAULT-VALUE}).")
    String transport = "ud";

    /**
     * The QP type asked for, {@code ud} or {@code srd} in any case; anything else is a usage error.
     * Checked before any provider opens.
     */
    QueuePairType type(CommandSpec spec) {
        return switch (transport.toLowerCase(Locale.ROOT)) {
            case "ud" -> QueuePairType.UD;
            case "srd" -> QueuePairType.SRD;
            default -> throw Check.fail(spec, "--transport", transport + "; valid ud, srd");
        };
    }

    /**
     * SRD on a device that is not EFA is a usage error naming the device, before any QP is made
     * (where {@code efadv_create_qp_ex} would answer EOPNOTSUPP).
     */
    void check(CommandSpec spec, Device device) {
        if (type(spec) == QueuePairType.SRD && !device.isEfa()) {
            throw Check.fail(spec, "--transport", "srd needs an EFA device; " + device.name()
                    + " is not one (vendor_id 0x" + Integer.toHexString(device.attributes().vendorId())
                    + "); use ud");
        }
    }
}
