package org.efaah.cli;

import java.io.PrintWriter;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A command's results: lines of text as they come, or with {@code --json} one JSON object at the
 * end holding every value {@link #put put} (names in snake_case, latencies in ns).
 */
final class Report {
    private final PrintWriter out;
    private final boolean json;
    private final Map<String, Object> values = new LinkedHashMap<>();

    Report(PrintWriter out, boolean json) {
        this.out = out;
        this.json = json;
    }

    /** A line of text (not in JSON mode). */
    void line(String format, Object... args) {
        if (!json) {
            out.printf(format + "%n", args);
            out.flush();
        }
    }

    /** A result; {@code value} is a number, string, boolean, map, list or null. */
    Report put(String name, Object value) {
        values.put(name, value);
        return this;
    }

    /** Prints the JSON object in JSON mode. */
    void finish() {
        if (json) {
            out.println(toJson(values));
            out.flush();
        }
    }

    static String toJson(Object v) {
        StringBuilder sb = new StringBuilder();
        append(sb, v);
        return sb.toString();
    }

    private static void append(StringBuilder sb, Object v) {
        if (v == null || (v instanceof Double d && (d.isNaN() || d.isInfinite()))) {
            sb.append("null");
        } else if (v instanceof Number || v instanceof Boolean) {
            sb.append(v);
        } else if (v instanceof Map<?, ?> m) {
            sb.append('{');
            String sep = "";
            for (Map.Entry<?, ?> e : m.entrySet()) {
                sb.append(sep);
                append(sb, String.valueOf(e.getKey()));
                sb.append(':');
                append(sb, e.getValue());
                sep = ",";
            }
            sb.append('}');
        } else if (v instanceof List<?> l) {
            sb.append('[');
            String sep = "";
            for (Object o : l) {
                sb.append(sep);
                append(sb, o);
                sep = ",";
            }
            sb.append(']');
        } else {
            sb.append('"');
            for (char c : v.toString().toCharArray()) {
                switch (c) {
                    case '"' -> sb.append("\\\"");
                    case '\\' -> sb.append("\\\\");
                    case '\n' -> sb.append("\\n");
                    case '\r' -> sb.append("\\r");
                    case '\t' -> sb.append("\\t");
                    default -> {
                        if (c < 0x20) {
                            sb.append(String.format("\\u%04x", (int) c));
                        } else {
                            sb.append(c);
                        }
                    }
                }
            }
            sb.append('"');
        }
    }
}
