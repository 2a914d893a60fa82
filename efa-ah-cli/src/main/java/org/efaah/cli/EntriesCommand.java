package org.efaah.cli;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import javax.management.ObjectName;
import javax.management.openmbean.CompositeData;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** Lists a running service's cache entries over JMX: a look inside. */
@Command(name = "entries",
        description = "List the AHs a running service's cache holds, over its JMX port: device, PD, dgid, AHN, "
                + "references, state, age, time idle, invalidated, handles leaked (garbage-collected without close()). A table, or --json.")
final class EntriesCommand implements Callable<Integer> {
    /** The columns: the MXBean's item, the header, and how the value is shown. */
    private static final String[][] COLUMNS = {
        {"device", "DEVICE"}, {"pd", "PD"}, {"dgid", "DGID"}, {"ahn", "AHN"}, {"references", "REFS"},
        {"state", "STATE"}, {"ageNanos", "AGE"}, {"idleNanos", "IDLE"}, {"invalidated", "INVALIDATED"},
        {"leaks", "LEAKS"}};

    @ArgGroup(exclusive = false, multiplicity = "1")
    JmxTarget jmx;

    @Option(names = "--limit", paramLabel = "N", description = "The most rows per cache, 1..1000000 (default: ${DEFAULT-VALUE}).")
    int limit = 100;

    @Option(names = "--device", paramLabel = "NAME", description = "Only AHs on this device.")
    String device = "";

    @Option(names = "--pd", paramLabel = "ID", description = "Only AHs in this PD (an id from a listing, pd@...).")
    String pd = "";

    @Option(names = "--gid", paramLabel = "GID", description = "Only AHs to this destination GID.")
    String gid = "";

    @Mixin
    OutputOptions output;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        Check.range(spec, "--limit", limit, 1, 1_000_000, "");
        Report report = new Report(spec.commandLine().getOut(), output.json);
        report.put("command", "entries").put("jmx", jmx.address);
        List<Object> caches = new ArrayList<>();
        try (JmxTarget.Connection c = jmx.connect(spec)) {
            for (ObjectName cache : c.caches()) {
                long live = jmx.within("reading " + cache, () -> (Long) c.server().getAttribute(cache, "LiveEntries"));
                CompositeData[] rows = jmx.within("listing " + cache, () -> (CompositeData[]) c.server().invoke(cache,
                        "entries", new Object[] {limit, device, pd, gid},
                        new String[] {"int", String.class.getName(), String.class.getName(), String.class.getName()}));
                report.line("cache %s: %d AH(s) live, %d row(s) listed", JmxTarget.label(cache), live, rows.length);
                table(report, rows);
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("cache", JmxTarget.label(cache));
                m.put("live_entries", live);
                List<Object> entries = new ArrayList<>();
                for (CompositeData row : rows) {
                    Map<String, Object> e = new LinkedHashMap<>();
                    for (String key : row.getCompositeType().keySet()) {
                        e.put(snake(key), row.get(key));
                    }
                    entries.add(e);
                }
                m.put("entries", entries);
                caches.add(m);
            }
        }
        report.put("caches", caches);
        report.finish();
        return 0;
    }

    private static void table(Report report, CompositeData[] rows) {
        List<String[]> cells = new ArrayList<>();
        String[] header = new String[COLUMNS.length];
        for (int i = 0; i < COLUMNS.length; i++) {
            header[i] = COLUMNS[i][1];
        }
        cells.add(header);
        for (CompositeData row : rows) {
            String[] line = new String[COLUMNS.length];
            for (int i = 0; i < COLUMNS.length; i++) {
                Object v = row.get(COLUMNS[i][0]);
                line[i] = COLUMNS[i][0].endsWith("Nanos") ? duration((Long) v)
                        : COLUMNS[i][0].equals("ahn") && ((Integer) v) < 0 ? "-" : String.valueOf(v);
            }
            cells.add(line);
        }
        int[] width = new int[COLUMNS.length];
        for (String[] line : cells) {
            for (int i = 0; i < line.length; i++) {
                width[i] = Math.max(width[i], line[i].length());
            }
        }
        for (String[] line : cells) {
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < line.length; i++) {
                sb.append(i == 0 ? "" : "  ").append(String.format("%-" + width[i] + "s", line[i]));
            }
            report.line("%s", sb.toString().stripTrailing());
        }
    }

    /** A duration for people: 850ms, 12.3s, 4m05s, 3h02m. */
    static String duration(long nanos) {
        long ms = nanos / 1_000_000;
        if (ms < 1000) {
            return ms + "ms";
        }
        if (ms < 60_000) {
            return String.format(java.util.Locale.ROOT, "%.1fs", ms / 1000.0);
        }
        long s = ms / 1000;
        if (s < 3600) {
            return String.format(java.util.Locale.ROOT, "%dm%02ds", s / 60, s % 60);
        }
        return String.format(java.util.Locale.ROOT, "%dh%02dm", s / 3600, s / 60 % 60);
    }

    private static String snake(String camel) {
        return camel.replaceAll("([a-z])([A-Z])", "$1_$2").toLowerCase(java.util.Locale.ROOT);
    }
}
