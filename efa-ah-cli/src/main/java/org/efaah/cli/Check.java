package org.efaah.cli;

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

    static ParameterException fail(CommandSpec spec, String option, String what) {
        return new ParameterException(spec.commandLine(), option + ": " + what + origin(spec, option));
    }

    private static String origin(CommandSpec spec, String option) {
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
