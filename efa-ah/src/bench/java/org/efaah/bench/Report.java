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
    private final Properties storm = new Properties();
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
        for (String file : new String[] {"scale.properties", "churn.properties"}) {
            Path scaleFile = dir.resolve(file);
            if (Files.exists(scaleFile)) {
                try (Reader in = Files.newBufferedReader(scaleFile)) {
                    r.scale.load(in);
                }
            }
        }
        Path stormFile = dir.resolve("storm.properties");
        if (Files.exists(stormFile)) {
            try (Reader in = Files.newBufferedReader(stormFile)) {
                r.storm.load(in);
            }
        }
        r.build(cores);
        System.out.print(r.render(cores));
        System.out.print(r.renderStorm());
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
        Score floor = jmh("HitPathBench.floor", 1);
        rows.add(new String[] {"floor: map read + atomic increment and decrement, no handle (ns/op)",
                fmt(floor), fmt(floor), "-"});
        Score inPlace = jmh("HitPathBench.efaAhDisabledInPlace", 1);
        Score baseInPlace = jmh("HitPathBench.baselineInPlace", 1);
        row("hit, 1 thread, leak detection DISABLED (ns/op)", inPlace, baseInPlace);
        row("  the same, relative to the floor (x)", over(inPlace, floor), over(baseInPlace, floor));
        Score sampledInPlace = jmh("HitPathBench.efaAhSampledInPlace", 1);
        row("hit, 1 thread, leak detection SAMPLED, the default (ns/op)", sampledInPlace, baseInPlace);
        rows.add(new String[] {"  the same, relative to DISABLED (x)", fmt(over(sampledInPlace, inPlace)), "", "-"});
        row("hit, 1 thread, DISABLED, statistics off (ns/op)",
                jmh("HitPathBench.efaAhDisabledNoStatsInPlace", 1), baseInPlace);
        row("hit allocation, DISABLED (B/op)",
                jmh("HitPathBench.efaAhDisabledInPlace:gc.alloc.rate.norm", 1),
                jmh("HitPathBench.baselineInPlace:gc.alloc.rate.norm", 1));
        row("hit allocation, SAMPLED (B/op)",
                jmh("HitPathBench.efaAhSampledInPlace:gc.alloc.rate.norm", 1),
                jmh("HitPathBench.baselineInPlace:gc.alloc.rate.norm", 1));
        row("hit, handle kept by the caller, DISABLED (ns/op)",
                jmh("HitPathBench.efaAhDisabled", 1), jmh("HitPathBench.baseline", 1));
        row("hit allocation, handle kept by the caller, DISABLED (B/op)",
                jmh("HitPathBench.efaAhDisabled:gc.alloc.rate.norm", 1), jmh("HitPathBench.baseline:gc.alloc.rate.norm", 1));

        row("datapath on the mock: UD send + receive of one 64 B datagram (ns/op)",
                jmh("DatapathBench.sendReceive64", 1), null);
        row("datapath on the mock: UD send + receive of one 1,024 B datagram (ns/op)",
                jmh("DatapathBench.sendReceive1024", 1), null);
        row("datapath allocation, 64 B datagram (B/op)", jmh("DatapathBench.sendReceive64:gc.alloc.rate.norm", 1), null);
        row("datapath allocation, 64 B, received by a handler, on the mock (B/op)",
                jmh("DatapathBench.sendHandle64:gc.alloc.rate.norm", 1), null);
        row("datapath allocation, 64 B, received by a handler, endpoint alone (loopback provider) (B/op)",
                jmh("DatapathBench.loopbackSendHandle64:gc.alloc.rate.norm", 1), null);
        row("datapath, 64 B, received by a handler, endpoint alone (loopback provider) (ns/op)",
                jmh("DatapathBench.loopbackSendHandle64", 1), null);

        Score missEfa = jmh("MissPathBench.efaAh", 1);
        Score missBase = jmh("MissPathBench.baseline", 1);
        Score provider = jmh("MissPathBench.provider", 1);
        row("miss: acquire new key + last close, raw, zero-latency mock (ns/op)", missEfa, missBase);
        rows.add(new String[] {"miss: the provider alone, pd.createAh + destroy (ns/op)", fmt(provider), fmt(provider), "-"});
        row("miss overhead: raw minus the provider alone (ns/op)",
                provider == null || missEfa == null ? null : missEfa.minus(provider),
                provider == null || missBase == null ? null : missBase.minus(provider));
        Score nullEfa = jmh("MissPathBench.efaAhOnNullProvider", 1);
        Score nullBase = jmh("MissPathBench.baselineOnNullProvider", 1);
        Score nullProvider = jmh("MissPathBench.providerOnNullProvider", 1);
        row("miss on the null provider (keeps nothing): acquire + last close (ns/op)", nullEfa, nullBase);
        rows.add(new String[] {"  the null provider alone (ns/op)", fmt(nullProvider), fmt(nullProvider), "-"});
        row("  miss overhead on the null provider: raw minus the provider alone (ns/op)",
                nullProvider == null || nullEfa == null ? null : nullEfa.minus(nullProvider),
                nullProvider == null || nullBase == null ? null : nullBase.minus(nullProvider));
        row("miss allocation, zero-latency mock (B/op)", jmh("MissPathBench.efaAh:gc.alloc.rate.norm", 1),
                jmh("MissPathBench.baseline:gc.alloc.rate.norm", 1));

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
        churnRows();
    }

    /** ChurnProbe: retention on in the efa-ah column, off in the baseline column. */
    private void churnRows() {
        row("churn, 50 µs creates: hardware creates per 1,000 acquires (retention on vs off)",
                perThousand(churn("on.createsPerAcquire")), perThousand(churn("off.createsPerAcquire")));
        row("churn, 50 µs creates: acquire + close, per thread (µs; retention on vs off)",
                churn("on.microsPerAcquire"), churn("off.microsPerAcquire"));
    }

    private static Score perThousand(Score s) {
        return s == null ? null : new Score(s.value * 1000, Double.NaN);
    }

    private Score churn(String key) {
        String v = scale.getProperty("churn." + key);
        return v == null ? null : new Score(Double.parseDouble(v), Double.NaN);
    }

    /** a / b, its error from the two relative errors in quadrature. */
    private static Score over(Score a, Score b) {
        if (a == null || b == null || b.value <= 0) {
            return null;
        }
        double q = a.value / b.value;
        double ra = Double.isNaN(a.error) ? 0 : a.error / a.value;
        double rb = Double.isNaN(b.error) ? 0 : b.error / b.value;
        return new Score(q, q * Math.sqrt(ra * ra + rb * rb));
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
                .append("hit = acquire + close of a key another handle keeps alive, the handle used in place (its native\n")
                .append("AH to a Blackhole, as around a send) unless \"kept\" (the handle itself to a Blackhole); floor =\n")
                .append("ConcurrentHashMap.get + AtomicInteger increment and decrement, same run. Contention figures are\n")
                .append("hits too (in place), leak detection DISABLED; miss = acquire of a key nobody holds + its last\n")
                .append("close (create + destroy).\n")
                .append("Scale (ScaleProbe): an uncapped null provider, one PD; times are the best of the rounds; heap =\n")
                .append("MemoryMXBean used heap after System.gc() (ParallelGC) before and after, over the keys; efa-ah's\n")
                .append("entry includes the one AddressHandle keeping it alive; \"verbs layer\" = pd.createAh alone.\n")
                .append("Churn (ChurnProbe): 4 threads, peers from a sliding window of 64, acquire + close each; the\n")
                .append("efa-ah column keeps unreferenced AHs (idle 1 s, at most 1,024), the baseline column keeps none.\n");
        return sb.toString();
    }

    /**
     * The connect storm table (from {@link StormProbe}), or nothing when the run has none. Each
     * configuration's ideal is ceil(distinct / min(T, C)) * L; the lock-across-create baseline
     * runs one create at a time whatever C is, so its time is shared by the rows of one L, T and
     * variant.
     */
    private String renderStorm() {
        if (storm.getProperty("storm.peers") == null) {
            return "";
        }
        int k = Integer.parseInt(storm.getProperty("storm.peers"));
        String[] head = {"peers", "L (us)", "T", "C", "ideal (ms)", "device alone (ms)", "efa-ah (ms)",
                "efa-ah / ideal", "efa-ah / device alone", "lock across create (ms)", "speed-up", "min(T,C)"};
        List<String[]> out = new ArrayList<>();
        for (String variant : StormProbe.VARIANTS) {
            for (long us : StormProbe.LATENCIES_US) {
                for (int t : StormProbe.THREADS) {
                    String base = "storm." + variant + ".L" + us + ".T" + t;
                    double locked = stormValue(base + ".baselineMs");
                    int distinct = Integer.parseInt(storm.getProperty("storm." + variant + ".T" + t + ".distinct", "0"));
                    for (int c : StormProbe.DEPTHS) {
                        double efa = stormValue(base + ".C" + c + ".efaAhMs");
                        double alone = stormValue(base + ".C" + c + ".deviceMs");
                        int parallel = Math.min(t, c);
                        double ideal = Math.ceil(distinct / (double) parallel) * us / 1000.0;
                        out.add(new String[] {variant + " " + String.format(Locale.ROOT, "%,d", distinct),
                                Long.toString(us), Integer.toString(t), Integer.toString(c), num(ideal), num(alone),
                                num(efa), String.format(Locale.ROOT, "%.2f", efa / ideal),
                                String.format(Locale.ROOT, "%.2f", efa / alone), num(locked),
                                String.format(Locale.ROOT, "%.1f", locked / efa), Integer.toString(parallel)});
                    }
                }
            }
        }
        StringBuilder sb = new StringBuilder("\n");
        table(sb, head, out);
        sb.append('\n').append(String.format(Locale.ROOT,
                "Connect storm (StormProbe): T threads each acquire their peers, none cached yet, on a mock device whose\n"
                        + "creates take L with at most C in progress (MockConfig.adminQueueDepth); wall time to the last handle,\n"
                        + "best of %s round(s). same = all threads want the same %,d peers, each starting at its own offset;\n"
                        + "overlap = %,d peers all share + %,d of each thread's own. ideal = ceil(distinct / min(T, C)) * L.\n"
                        + "lock across create = the baseline (one lock held over the create, libfabric's domain lock), which\n"
                        + "makes one create at a time; speed-up = its time / efa-ah's (target: at least min(T,C)). device\n"
                        + "alone = T threads making the distinct creates straight on the PD, each its own share, no cache: what\n"
                        + "this machine and mock allow (waking a thread costs tens of us on a loaded 2-core machine).\n",
                storm.getProperty("storm.rounds", "?"), k, k / 2, k / 2));
        for (long us : StormProbe.LATENCIES_US) {
            double mock = stormValue("storm.L" + us + ".mockMs");
            sb.append(String.format(Locale.ROOT, "One create at L = %d us really takes %s us here (%,d creates by one thread, no cache).%n",
                    us, num(mock * 1000 / k), k));
        }
        return sb.toString();
    }

    private double stormValue(String key) {
        String v = storm.getProperty(key);
        return v == null ? Double.NaN : Double.parseDouble(v);
    }

    private static void table(StringBuilder sb, String[] head, List<String[]> rows) {
        int[] w = new int[head.length];
        java.util.Arrays.fill(w, 3);
        List<String[]> all = new ArrayList<>();
        all.add(head);
        all.addAll(rows);
        for (String[] r : all) {
            for (int i = 0; i < r.length; i++) {
                w[i] = Math.max(w[i], r[i].length());
            }
        }
        line(sb, head, w);
        String[] rule = new String[head.length];
        for (int i = 0; i < rule.length; i++) {
            rule[i] = (i == 0 ? "" : "-") + "-".repeat(Math.max(3, w[i]) - (i == 0 ? 0 : 2)) + (i == 0 ? "" : ":");
        }
        line(sb, rule, w);
        for (String[] r : rows) {
            line(sb, r, w);
        }
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
