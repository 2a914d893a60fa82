package org.efaah.cli;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.ud.DatagramView;
import org.efaah.ud.SendFailure;
import org.efaah.ud.UdEndpoint;
import org.efaah.ud.WorkCompletionException;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.QueuePairType;
import org.efaah.verbs.VerbsProviders;
import org.efaah.verbs.spi.VerbsProvider;

/**
 * scripts/bench-stream's warm half: the stream's loop (StreamCommand's loopback, both sides in one
 * process: the same options, {@code sendBatch} of 64, {@code receive(handler, 64, ...)} on a second
 * thread, the flush and the end markers) run again and again in one JVM on the native provider,
 * alternating with the C reference (efa-ah/src/bench/native/stream_reference.c, run as a child
 * process), and one line per run: the datagrams sent and delivered, the wall time (first send to
 * the later of the flush's end and the last arrival), each thread's CPU ({@link
 * java.lang.management.ThreadMXBean}) and bytes allocated ({@link
 * com.sun.management.ThreadMXBean#getCurrentThreadAllocatedBytes()}), the wall's ends (start_ns, end_ns:
 * {@link System#nanoTime()}, CLOCK_MONOTONIC on Linux, as the C reference prints them, for
 * scripts/bench-stream --profile to keep the stream's samples alone), and the 1-minute load. A
 * bench, not a test: surefire never runs it (its name has no Test).
 *
 * <p>The endpoints are opened once and kept for every run, as a service keeps them; between runs the
 * end markers left over are drained. {@code --pace} makes the sender wait for room in the
 * receiver's ring before each batch, as the C reference's --pace does (UD then drops nothing).
 *
 * <pre>
 * java -cp CLI-JAR:efa-ah-cli/target/test-classes org.efaah.cli.StreamBench --transport srd|ud -s SIZE
 *     -n COUNT --pairs P --warmup W [--pace] -- C-REFERENCE-COMMAND...
 * </pre>
 */
public final class StreamBench {
    private static final byte END = 1;
    private static final int END_BYTES = 9;
    private static final int END_COPIES = 5;
    private static final int BATCH = 64;
    private static final int WINDOW = 64;
    private static final int RX_DEPTH = 1024;

    private final QueuePairType transport;
    private final int size;
    private final long count;
    private final boolean pace;
    private final java.lang.management.ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    private final com.sun.management.ThreadMXBean allocations =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    private final PrintStream out;

    private StreamBench(QueuePairType transport, int size, long count, boolean pace, PrintStream out) {
        this.transport = transport;
        this.size = size;
        this.count = count;
        this.pace = pace;
        this.out = out;
    }

    public static void main(String[] args) throws Exception {
        run(args, System.out);
    }

    /** Runs as {@link #main}, each run's line printed on {@code out}. */
    static void run(String[] args, PrintStream out) throws Exception {
        QueuePairType transport = QueuePairType.SRD;
        int size = 64;
        long count = 200_000;
        int pairs = 5;
        int warmup = 3;
        boolean pace = false;
        List<String> reference = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--transport" -> transport = QueuePairType.valueOf(args[++i].toUpperCase(Locale.ROOT));
                case "-s" -> size = Integer.parseInt(args[++i]);
                case "-n" -> count = Long.parseLong(args[++i]);
                case "--pairs" -> pairs = Integer.parseInt(args[++i]);
                case "--warmup" -> warmup = Integer.parseInt(args[++i]);
                case "--pace" -> pace = true;
                case "--" -> {
                    reference.addAll(List.of(args).subList(i + 1, args.length));
                    i = args.length;
                }
                default -> throw new IllegalArgumentException("StreamBench: unknown argument " + args[i]);
            }
        }
        if (reference.isEmpty()) {
            throw new IllegalArgumentException("StreamBench: no C reference command after --");
        }
        new StreamBench(transport, size, count, pace, out).run(pairs, warmup, reference);
    }

    private void run(int pairs, int warmup, List<String> reference) throws Exception {
        try (VerbsProvider provider = VerbsProviders.open("native");
             Device device = Device.openFirst(provider)) {
            ProtectionDomain pd = device.allocatePd();
            AddressHandleCache cache = AddressHandleCache.create();
            UdEndpoint.Options sending = UdEndpoint.Options.defaults().withDepths(WINDOW, 16).withTransport(transport);
            UdEndpoint.Options receiving = UdEndpoint.Options.defaults().withDepths(1, RX_DEPTH)
                    .withTransport(transport);
            try (UdEndpoint receiver = UdEndpoint.open(pd, cache, receiving);
                 UdEndpoint sender = UdEndpoint.open(pd, cache, sending);
                 AddressHandle ah = cache.acquire(pd, AddressHandleAttributes.builder()
                         .dgid(receiver.address().gid()).sgidIndex(0).build())) {
                warmUp(sender, receiver, ah, warmup, reference);
                for (int pair = 0; pair < pairs; pair++) {
                    // The order alternates, so that a drift of the machine's load favours neither side.
                    if (pair % 2 == 0) {
                        print("c", pair, jitDuring(() -> runReference(reference)));
                        print("efa-ah", pair, jitDuring(() -> streamOnce(sender, receiver, ah)));
                    } else {
                        print("efa-ah", pair, jitDuring(() -> streamOnce(sender, receiver, ah)));
                        print("c", pair, jitDuring(() -> runReference(reference)));
                    }
                }
            } finally {
                cache.close();
                pd.close();
            }
        }
    }

    /*
     * Warm means the JIT has done: at least `warmup` runs, then more until the JIT has finished no
     * compilation for QUIET_NANOS of running the stream (the JIT's total time grows only as a
     * compilation ends, so one quiet run can hide a long compilation in progress), at most
     * MAX_WARMUP_NANOS. A fixed count of runs was not enough under load: on 2 cores at load 2 to 6
     * the C2 thread was still compiling the datapath through the first measured pairs (perf: C2
     * busy for a second after 3 warm-up runs; 150 KB allocated per run, interpreted or
     * deoptimised code), taking a core from efa-ah's two threads and from the C program run beside
     * it. Once past `warmup`, the warm-up runs whole pairs, C included, so that the JVM's side of a
     * C run (a process started, its line read and formatted) is compiled too: without it, C2 still
     * compiled for 120 ms during the first measured efa-ah run. Each line carries the JIT's time
     * during that run (jit_ms), so that a pair still compiling shows.
     */
    private static final long QUIET_NANOS = TimeUnit.MILLISECONDS.toNanos(1_000);
    private static final long MAX_WARMUP_NANOS = TimeUnit.SECONDS.toNanos(60);

    private void warmUp(UdEndpoint sender, UdEndpoint receiver, AddressHandle ah, int warmup, List<String> reference)
            throws IOException, InterruptedException {
        if (warmup == 0) {
            return; // asked for none (StreamBenchNativeTest's one quick pair)
        }
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        long start = System.nanoTime();
        long compiled = jit.getTotalCompilationTime();
        long quietSince = start;
        for (int i = 0; ; i++) {
            streamOnce(sender, receiver, ah);
            if (i + 1 >= warmup) {
                // the pair's other half too, once the stream is warm: what the JVM runs around the C
                // program (a process started, its line read) is compiled before the pairs, not in them
                jitDuring(() -> runReference(reference));
            }
            long now = System.nanoTime();
            long total = jit.getTotalCompilationTime();
            if (total != compiled) {
                compiled = total;
                quietSince = now;
            }
            if (i + 1 >= warmup && (now - quietSince >= QUIET_NANOS || now - start >= MAX_WARMUP_NANOS)) {
                return;
            }
        }
    }

    private interface Run {
        String run() throws IOException, InterruptedException;
    }

    private static String jitDuring(Run run) throws IOException, InterruptedException {
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        long before = jit.getTotalCompilationTime();
        String figures = run.run();
        return figures + " jit_ms=" + (jit.getTotalCompilationTime() - before);
    }

    private void print(String side, int pair, String figures) throws IOException {
        String load = Files.readString(Path.of("/proc/loadavg"), StandardCharsets.US_ASCII).split(" ")[0];
        out.println("run side=" + side + " pair=" + pair + " " + figures + " load1=" + load);
        out.flush();
    }

    private static String runReference(List<String> command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String line;
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(),
                StandardCharsets.US_ASCII))) {
            line = r.readLine();
        }
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException("the C reference did not end in 120 s");
        }
        if (p.exitValue() != 0 || line == null) {
            throw new IllegalStateException("the C reference failed (exit " + p.exitValue() + ")");
        }
        return line;
    }

    /** What the receiver thread counted, as StreamCommand's Counter, and published for --pace. */
    private static final class Counter implements Consumer<DatagramView> {
        long datagrams;
        long last;
        long announced = -1;
        final AtomicLong published = new AtomicLong();

        @Override
        public void accept(DatagramView d) {
            if (announced >= 0) {
                return;
            }
            ByteBuffer p = d.payload();
            if (p.remaining() == END_BYTES && p.get(0) == END) {
                announced = p.getLong(1);
                return;
            }
            last = System.nanoTime();
            datagrams++;
        }
    }

    private record ReceiverFigures(long cpuNanos, long allocatedBytes) {
    }

    private String streamOnce(UdEndpoint sender, UdEndpoint receiver, AddressHandle ah) throws InterruptedException {
        // The end markers of the run before, and anything else left, go first.
        while (receiver.poll(d -> { }, BATCH) > 0) {
            // drained
        }
        Counter counter = new Counter();
        AtomicReference<Object> outcome = new AtomicReference<>();
        Thread receiving = new Thread(() -> {
            try {
                long cpu = threads.getCurrentThreadCpuTime();
                long allocated = allocations.getCurrentThreadAllocatedBytes();
                for (;;) {
                    int got = receiver.receive(counter, BATCH, 10, TimeUnit.SECONDS);
                    counter.published.setRelease(counter.datagrams);
                    if (got == 0 || counter.announced >= 0) {
                        break;
                    }
                }
                outcome.set(new ReceiverFigures(threads.getCurrentThreadCpuTime() - cpu,
                        allocations.getCurrentThreadAllocatedBytes() - allocated));
            } catch (Throwable t) {
                outcome.set(t);
            }
        }, "stream-receiver");
        receiving.setDaemon(true);
        receiving.start();

        byte[] bytes = new byte[size];
        java.util.Arrays.fill(bytes, (byte) 0x7b);
        ByteBuffer message = ByteBuffer.wrap(bytes);
        ByteBuffer[] batch = new ByteBuffer[BATCH];
        for (int i = 0; i < batch.length; i++) {
            batch[i] = message.duplicate();
        }
        long failedRnr = 0;
        long sendSleepsBefore = sender.counters().sendSleeps();
        long receiveSleepsBefore = receiver.counters().receiveSleeps();
        long paceParks = 0;
        long resendsBefore = sender.counters().rnrResends();
        long postedBefore = sender.counters().sent();
        long cpu = threads.getCurrentThreadCpuTime();
        long allocated = allocations.getCurrentThreadAllocatedBytes();
        long start = System.nanoTime();
        for (long i = 0; i < count; ) {
            int n = (int) Math.min(batch.length, count - i);
            if (pace) {
                paceParks += waitForCredit(counter, i);
            }
            for (int j = 0; j < n; j++) {
                batch[j].clear();
            }
            try {
                sender.sendBatch(ah, receiver.address(), batch, 0, n);
                i += n; // as the C reference's e->sent: no Counters snapshot per batch
            } catch (WorkCompletionException e) {
                failedRnr += receiverNotReady(e);
                i = sender.counters().sent() - postedBefore;
            }
        }
        for (;;) {
            try {
                if (!sender.flush(10, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("sends still in flight after 10 s");
                }
                break;
            } catch (WorkCompletionException e) {
                failedRnr += receiverNotReady(e);
            }
        }
        long end = System.nanoTime();
        long senderCpu = threads.getCurrentThreadCpuTime() - cpu;
        long senderAllocated = allocations.getCurrentThreadAllocatedBytes() - allocated;
        long sent = sender.counters().sent() - postedBefore;
        ByteBuffer marker = ByteBuffer.allocate(END_BYTES).put(END).putLong(sent);
        for (int i = 0; i < END_COPIES && receiving.isAlive(); i++) {
            Thread.sleep(50);
            try {
                sender.send(ah, receiver.address(), marker.clear());
            } catch (WorkCompletionException e) {
                failedRnr += receiverNotReady(e);
            }
        }
        receiving.join(15_000);
        sender.flush(1, TimeUnit.SECONDS);
        Object r = outcome.get();
        if (r instanceof Throwable t) {
            throw new IllegalStateException("receiver failed: " + t, t);
        }
        if (r == null) {
            throw new IllegalStateException("receiver still counting 15 s after the end");
        }
        ReceiverFigures figures = (ReceiverFigures) r;
        long wall = Math.max(end, counter.last) - start;
        return String.format(Locale.ROOT, "sent=%d delivered=%d announced=%d wall_ns=%d start_ns=%d end_ns=%d "
                        + "sender_cpu_ns=%d receiver_cpu_ns=%d sender_allocated_bytes=%d receiver_allocated_bytes=%d "
                        + "rnr_resends=%d send_failures_rnr=%d send_sleeps=%d receive_sleeps=%d pace_parks=%d",
                sent, counter.datagrams, counter.announced, wall, start, start + wall, senderCpu,
                figures.cpuNanos(), senderAllocated, figures.allocatedBytes(),
                sender.counters().rnrResends() - resendsBefore, failedRnr,
                sender.counters().sendSleeps() - sendSleepsBefore,
                receiver.counters().receiveSleeps() - receiveSleepsBefore, paceParks);
    }

    /** As the C reference's wait_for_credit: room for a batch and a margin in the receiver's ring; parks, never spins. */
    private static long waitForCredit(Counter counter, long sent) {
        long limit = RX_DEPTH - 3L * BATCH;
        long giveUp = 0;
        long parks = 0;
        while (sent - counter.published.getAcquire() > limit) {
            long now = System.nanoTime();
            if (giveUp == 0) {
                giveUp = now + TimeUnit.SECONDS.toNanos(1);
            } else if (now - giveUp > 0) {
                return parks; // a datagram lost after all: go on rather than wait for ever
            }
            LockSupport.parkNanos(20_000);
            parks++;
        }
        return parks;
    }

    private static long receiverNotReady(WorkCompletionException e) {
        if (!e.failures().stream().allMatch(SendFailure::isReceiverNotReady)) {
            throw e;
        }
        return e.failures().size();
    }
}
