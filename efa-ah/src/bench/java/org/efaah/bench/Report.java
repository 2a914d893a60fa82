package org.efaah.bench;

import java.io.IOException;
import java.io.Reader;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;

/**
 * Turns one scripts/bench run into the table it prints: figure, efa-ah, baseline, ratio. Reads
 * every JMH CSV result ({@code -rf csv}) in the run's directory and the {@link ScaleProbe}
 * output ({@code scale.properties}); a figure whose results are missing shows "n/a".
 *
 * <p>Every figure is lower-is-better, so a ratio (efa-ah / baseline) below 1 means efa-ah wins.
 * Errors are JMH's 99.9% confidence half-intervals; a difference's error adds the two in quadrature.
 *
 * <p>Usage: {@code Report RESULT_DIR [CORES]}; CORES (default: this JVM's processor count) marks
 * the thread counts that oversubscribe the machine.
 */
public final class Report {
    private record Score(double value, double error) {
        Score minus(Score o) {
            double e = Double.isNaN(error) && Double.isNaN(o.error) ? Double.NaN : Math.sqrt(sq(error) + sq(o.error));
            return new Score(value - o.value, e);
        }

        private static double sq(double d) {
            return Double.isNaN(d) ? 0 : d * d;
        }
    }

    private final Map<String, Score> scores = new HashMap<>();
    private final Properties scale = new Properties();
    private final List<String[]> rows = new ArrayList<>();

    private Report() {
    }

    public static void main(String[] args) throws IOException {
        if (args.length < 1) {
            throw new IllegalArgumentException("usage: Report RESULT_DIR [CORES]");
        }
        Path dir = Path.of(args[0]);
        int cores = args.length > 1 ? Integer.parseInt(args[1]) : Runtime.getRuntime().availableProcessors();
        Report r = new Report();
        try (DirectoryStream<Path> csvs = Files.newDirectoryStream(dir, "*.csv")) {
            for (Path csv : csvs) {
                r.readCsv(csv);
            }
        }
        Path scaleFile = dir.resolve("scale.properties");
        if (Files.exists(scaleFile)) {
            try (Reader in = Files.newBufferedReader(scaleFile)) {
                r.scale.load(in);
            }
        }
        r.build(cores);
        System.out.print(r.render(cores));
    }

    private void readCsv(Path csv) throws IOException {
        List<String> lines = Files.readAllLines(csv);
        if (lines.isEmpty()) {
            return;
        }
        List<String> header = fields(lines.get(0));
        int bench = header.indexOf("Benchmark");
        int threads = header.indexOf("Threads");
        int score = header.indexOf("Score");
        int error = header.indexOf("Score Error (99.9%)");
        for (String line : lines.subList(1, lines.size())) {
            List<String> f = fields(line);
            // "org.efaah.bench.HitPathBench.baseline:gc.alloc.rate.norm" -> "HitPathBench.baseline:gc.alloc.rate.norm"
            String name = f.get(bench).substring("org.efaah.bench.".length());
            scores.put(name + "@" + f.get(threads), new Score(number(f.get(score)), number(f.get(error))));
        }
    }

    /** JMH quotes text fields and leaves numbers bare; no field holds a quote or a comma. */
    private static List<String> fields(String line) {
        List<String> out = new ArrayList<>();
        for (String f : line.split(",", -1)) {
            out.add(f.length() >= 2 && f.startsWith("\"") && f.endsWith("\"") ? f.substring(1, f.length() - 1) : f);
        }
        return out;
    }

    private static double number(String s) {
        try {
            return Double.parseDouble(s);
        } catch (NumberFormatException e) {
            return Double.NaN;
        }
    }

    private Score jmh(String benchmark, int threads) {
        return scores.get(benchmark + "@" + threads);
    }

    private Score scale(String key) {
        String v = scale.getProperty("scale." + key);
        return v == null ? null : new Score(Double.parseDouble(v), Double.NaN);
    }

    private void build(int cores) {
        row("hit, 1 thread, leak detection DISABLED (ns/op)",
                jmh("HitPathBench.efaAhDisabled", 1), jmh("HitPathBench.baseline", 1));
        row("hit, 1 thread, leak detection SAMPLED, the default (ns/op)",
                jmh("HitPathBench.efaAhSampled", 1), jmh("HitPathBench.baseline", 1));
        row("hit allocation, DISABLED (B/op)",
                jmh("HitPathBench.efaAhDisabled:gc.alloc.rate.norm", 1), jmh("HitPathBench.baseline:gc.alloc.rate.norm", 1));
        row("hit allocation, SAMPLED (B/op)",
                jmh("HitPathBench.efaAhSampled:gc.alloc.rate.norm", 1), jmh("HitPathBench.baseline:gc.alloc.rate.norm", 1));

        Score missEfa = jmh("MissPathBench.efaAh", 1);
        Score missBase = jmh("MissPathBench.baseline", 1);
        Score provider = jmh("MissPathBench.provider", 1);
        row("miss: acquire new key + last close, raw, zero-latency mock (ns/op)", missEfa, missBase);
        rows.add(new String[] {"miss: the provider alone, pd.createAh + destroy (ns/op)", fmt(provider), fmt(provider), "-"});
        row("miss overhead: raw minus the provider alone (ns/op)",
                provider == null || missEfa == null ? null : missEfa.minus(provider),
                provider == null || missBase == null ? null : missBase.minus(provider));

        for (String kind : new String[] {"hot", "spread"}) {
            for (int t : new int[] {1, 2, 4, 8}) {
                String what = kind.equals("hot") ? "one hot key" : String.format(Locale.ROOT, "%,d keys spread", ContentionBench.SPREAD_KEYS);
                String load = t > cores ? ", oversubscribed: " + cores + " cores" : "";
                row(String.format(Locale.ROOT, "%s, %d thread%s%s (ns/op per thread)", what, t, t == 1 ? "" : "s", load),
                        jmh("ContentionBench." + kind + "EfaAh", t), jmh("ContentionBench." + kind + "Baseline", t));
            }
        }

        String n = scale.getProperty("scale.keys");
        String keys = n == null ? "N" : String.format(Locale.ROOT, "%,d", Long.parseLong(n));
        row(keys + " creates, null provider (ms)", scale("efa-ah.createMs"), scale("baseline.createMs"));
        row("  of which garbage collection (ms)", scale("efa-ah.createGcMs"), scale("baseline.createGcMs"));
        row(keys + " releases, last reference each (ms)", scale("efa-ah.releaseMs"), scale("baseline.releaseMs"));
        row("retained heap per live entry (B)", scale("efa-ah.bytesPerEntry"), scale("baseline.bytesPerEntry"));
        Score verbs = scale("verbs.bytesPerEntry");
        Score efaBytes = scale("efa-ah.bytesPerEntry");
        Score baseBytes = scale("baseline.bytesPerEntry");
        row("  of which above the verbs layer (B)",
                verbs == null || efaBytes == null ? null : efaBytes.minus(verbs),
                verbs == null || baseBytes == null ? null : baseBytes.minus(verbs));
    }

    private void row(String figure, Score efa, Score base) {
        // A ratio to next to nothing (the baseline allocates ~0 B per hit) says nothing.
        String ratio = efa == null || base == null || base.value < 1
                ? "n/a" : String.format(Locale.ROOT, "%.2f", efa.value / base.value);
        rows.add(new String[] {figure, fmt(efa), fmt(base), ratio});
    }

    private static String fmt(Score s) {
        if (s == null || Double.isNaN(s.value)) {
            return "n/a";
        }
        String v = num(s.value);
        return Double.isNaN(s.error) ? v : v + " ± " + num(s.error);
    }

    private static String num(double d) {
        double a = Math.abs(d);
        return String.format(Locale.ROOT, a >= 1000 || d == Math.rint(d) ? "%,.0f" : a >= 10 ? "%.1f" : "%.2f", d);
    }

    private String render(int cores) {
        String[] head = {"figure", "efa-ah", "baseline", "ratio"};
        int[] w = new int[head.length];
        List<String[]> all = new ArrayList<>();
        all.add(head);
        all.addAll(rows);
        for (String[] r : all) {
            for (int i = 0; i < r.length; i++) {
                w[i] = Math.max(w[i], r[i].length());
            }
        }
        StringBuilder sb = new StringBuilder();
        line(sb, head, w);
        String[] rule = new String[head.length];
        for (int i = 0; i < rule.length; i++) {
            rule[i] = (i == 0 ? "" : "-") + "-".repeat(Math.max(3, w[i]) - (i == 0 ? 0 : 2)) + (i == 0 ? "" : ":");
        }
        line(sb, rule, w);
        for (String[] r : rows) {
            line(sb, r, w);
        }
        sb.append('\n')
                .append("ratio = efa-ah / baseline; every figure is lower-is-better, so below 1 means efa-ah wins.\n")
                .append("baseline = one lock (synchronized) around a HashMap of refcounted AH entries, create and destroy\n")
                .append("under the lock: the design of libfabric's EFA provider and UCX. ± = JMH 99.9% half-interval.\n")
                .append("This machine: ").append(cores).append(" cores; thread counts above that measure oversubscription.\n")
                .append("hit = acquire + close of a key another handle keeps alive; contention figures are hits too, leak\n")
                .append("detection DISABLED; miss = acquire of a key nobody holds + its last close (create + destroy).\n")
                .append("Scale (ScaleProbe): an uncapped null provider, one PD; times are the best of the rounds; heap =\n")
                .append("MemoryMXBean used heap after System.gc() (ParallelGC) before and after, over the keys; efa-ah's\n")
                .append("entry includes the one AddressHandle keeping it alive; \"verbs layer\" = pd.createAh alone.\n");
        return sb.toString();
    }

    private static void line(StringBuilder sb, String[] cells, int[] w) {
        sb.append('|');
        for (int i = 0; i < cells.length; i++) {
            String c = cells[i];
            String pad = " ".repeat(Math.max(0, w[i] - c.length()));
            sb.append(' ').append(i == 0 ? c + pad : pad + c).append(" |");
        }
        sb.append('\n');
    }
}
