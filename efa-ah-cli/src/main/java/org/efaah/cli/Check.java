package org.efaah.cli;

import org.efaah.verbs.Device;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;

/**
 * Range checks of option values after parsing, in the option's own name and units; a value that
 * came from a system property or the environment is named with its source.
 */
final class Check {
    private Check() {
    }

    static void range(CommandSpec spec, String option, long value, long min, long max, String unit) {
        if (value < min || value > max) {
            throw fail(spec, option, value + unit(unit) + " is out of range; valid "
                    + (max == Long.MAX_VALUE ? ">= " + min : min + ".." + max) + unit(unit));
        }
    }

    /** Also refuses NaN and infinities. */
    static void range(CommandSpec spec, String option, double value, double min, double max, String unit) {
        if (!(value >= min && value <= max)) {
            throw fail(spec, option, format(value) + unit(unit) + " is out of range; valid " + format(min) + ".."
                    + format(max) + unit(unit));
        }
    }

    /**
     * {@code --ib-port}: 1..255 (a verbs port number is a uint8), checked before any provider opens.
     *
     * @return the port
     */
    static int ibPort(CommandSpec spec, int port) {
        range(spec, "--ib-port", port, 1, 255, "");
        return port;
    }

    /** {@code --ib-port} against the device, naming both (ibv_devinfo: "Invalid port requested for device"). */
    static void ibPort(CommandSpec spec, Device device, int port) {
        int count = device.attributes().portCount();
        if (port > count) {
            throw fail(spec, "--ib-port", "port " + port + " is not a port of " + device.name() + " (it has " + count
                    + (count == 1 ? " port" : " ports") + ", 1.." + count + ")");
        }
    }

    /**
     * {@code address}, refused when its GID is all zero: no port holds GID 0, so datagrams sent there
     * reach nobody. {@code ibv_ud_pingpong} advertises it when started without {@code -g}.
     */
    static org.efaah.ud.EndpointAddress peer(CommandSpec spec, String option, org.efaah.ud.EndpointAddress address) {
        if (address.gid().isZero()) {
            throw fail(spec, option, ZERO_GID);
        }
        return address;
    }

    /** Why a peer at the all-zero GID is refused. */
    static final String ZERO_GID = "the all-zero GID (::) is no peer's address (ibv_ud_pingpong advertises it when "
            + "started without -g; start it with -g GID_INDEX)";

    /** {@code --size}, checked against the largest message of {@code endpoint}'s port: the one true range. */
    static void size(CommandSpec spec, int size, org.efaah.ud.UdEndpoint endpoint) {
        if (size < 1 || size > endpoint.maxMessageSize()) {
            throw fail(spec, "--size", size + " bytes is out of range; valid 1.." + endpoint.maxMessageSize()
                    + " bytes (the port's largest message: max_msg_sz on EFA, else the path MTU)");
        }
    }

    static ParameterException fail(CommandSpec spec, String option, String what) {
        return new ParameterException(spec.commandLine(), option + ": " + what + origin(spec, option));
    }

    /** " (from SOURCE)" when the option's value came from a property or the environment, else "". */
    static String origin(CommandSpec spec, String option) {
        if (spec.commandLine().getParseResult() != null && spec.commandLine().getParseResult().hasMatchedOption(option)) {
            return "";
        }
        if (spec.commandLine().getDefaultValueProvider() instanceof Defaults d && spec.findOption(option) != null) {
            Defaults.Origin o = d.origin(spec.findOption(option));
            return o == null ? "" : " (from " + o.description() + ")";
        }
        return "";
    }

    private static String unit(String unit) {
        return unit.isEmpty() ? "" : " " + unit;
    }

    private static String format(double v) {
        return v == Math.rint(v) && Math.abs(v) < 1e15 ? Long.toString((long) v) : Double.toString(v);
    }
}
