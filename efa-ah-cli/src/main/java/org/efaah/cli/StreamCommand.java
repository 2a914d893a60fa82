package org.efaah.cli;

import java.nio.ByteBuffer;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.ud.DatagramView;
import org.efaah.ud.EndpointAddress;
import org.efaah.ud.SendFailure;
import org.efaah.ud.UdEndpoint;
import org.efaah.ud.WorkCompletionException;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.InterruptedOperationException;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.QueuePairType;
import org.efaah.verbs.spi.VerbsProvider;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * One-way UD or SRD streaming, like {@code ib_send_bw -c UD}: the sender keeps up to
 * {@code --window} sends in flight (the endpoint's send depth: a send waits for a slot), the
 * receiver counts what arrives. UD may drop datagrams (a receiver with no receive posted, a full
 * ring); the receiver says how many arrived of how many were sent, which the sender's end marker
 * tells it. Both sides in one process, or {@code --server} (the receiver) and {@code --connect}
 * (the sender) across the pingpong address exchange.
 */
@Command(name = "stream",
        description = "One-way UD or SRD stream (--transport), like ib_send_bw -c UD: a window of sends in "
                + "flight, the receiver counting; prints messages/s and MB/s (both sides in one process, or --server "
                + "to receive and --connect HOST[:PORT] to send, addresses exchanged as by pingpong).")
final class StreamCommand implements Callable<Integer> {
    /** The sender's end marker: {@code END} and the count sent (8 bytes, big-endian); data never starts so. */
    private static final byte END = 1;
    private static final int END_BYTES = 9;
    private static final int END_COPIES = 5;
    private static final long END_SPACING_MILLIS = 50;

    @Mixin
    ProviderOptions providerOptions;

    @ArgGroup(exclusive = true)
    Role role = new Role();

    static final class Role {
        @Option(names = "--server", description = "Receive and count; listen on TCP --port for the sender's address "
                + "exchange.")
        boolean server;

        @Option(names = "--connect", paramLabel = "HOST[:PORT]|GID/QPN/QKEY", description = "Send to this receiver: "
                + "its address exchanged over TCP, as by pingpong, or given as text (as the receiver prints it).")
        String connect;
    }

    @Option(names = {"-p", "--port"}, description = "TCP port of the address exchange (default: ${DEFAULT-VALUE}).")
    int port = AddressExchange.DEFAULT_PORT;

    @Option(names = {"-s", "--size"}, description = "Payload bytes, 1..the port's largest message: max_msg_sz on EFA, "
            + "else the path MTU (default: ${DEFAULT-VALUE}).")
    int size = 64;

    @Option(names = {"-n", "--count"}, description = "Datagrams to send, >= 1 (default: ${DEFAULT-VALUE}).")
    long count = 100_000;

    @Option(names = "--window", description = "Sends in flight at most, 1..8192 (default: ${DEFAULT-VALUE}).")
    int window = 64;

    @Option(names = {"-r", "--rx-depth"}, paramLabel = "N", description = "Receives the receiver keeps posted, "
            + "1..8192, as perftest's --rx-depth (default: twice --window, 1024..8192). Over UD, whatever arrives "
            + "while all are taken is dropped.")
    Integer rxDepth;

    @Option(names = "--spin", paramLabel = "MICROSECONDS",
            description = "How long a wait for a completion spins before it sleeps on the CQ's completion channel, "
                    + "0..1000000 (default: ${DEFAULT-VALUE}); the largest comes close to perftest's busy polling.")
    long spinMicros = UdEndpoint.DEFAULT_SPIN_NANOS / 1000;

    @Option(names = "--sgid-index", description = "This side's GID index (default: ${DEFAULT-VALUE}).")
    int sgidIndex = 0;

    @Option(names = {"-d", "--ib-dev", "--device"}, paramLabel = "NAME", description = "Device name (default: the first).")
    String deviceName;

    @Option(names = {"-i", "--ib-port"}, paramLabel = "PORT", description = "Port of the device, 1..255 "
            + "(default: ${DEFAULT-VALUE}).")
    int ibPort = 1;

    @Mixin
    TransportOption transport;

    @Option(names = "--timeout", paramLabel = "SECONDS",
            description = "Seconds the receiver waits for the first or next datagram, 1..86400 (default: "
                    + "${DEFAULT-VALUE}).")
    int timeoutSeconds = 10;

    @Mixin
    OutputOptions output;

    @Spec
    CommandSpec spec;

    private final AtomicLong sentCount = new AtomicLong();
    /** Set when Ctrl-C (an interrupt) stopped the run: it reports what was done and exits 130. */
    private volatile boolean interrupted;
    private volatile long receivedCount;
    /** Lost datagrams above this share of those sent are told, with why. */
    private static final int LOSS_PERCENT_TOLD = 2;
    /** The receiver's posted receives, as --rx-depth or its default chose. */
    private int receivesPosted;
    /** The device and transport, as the report lines name them: {@code efa_0, SRD}. */
    private String where;

    /** What the receiver counted; {@code announced} is -1 when no end marker came. */
    private record Received(long datagrams, long bytes, long firstNanos, long lastNanos, long announced, long sleeps,
                            boolean interrupted) {
    }

    @Override
    public Integer call() throws Exception {
        // --size is checked against the port's largest message once the endpoint is open: one range, the true one.
        Check.range(spec, "--count", count, 1, Long.MAX_VALUE, "");
        Check.range(spec, "--window", window, 1, 8192, "");
        int receives = rxDepth != null ? rxDepth : Math.min(8192, Math.max(1024, 2 * window));
        Check.range(spec, "--rx-depth", receives, 1, 8192, "");
        receivesPosted = receives;
        Check.range(spec, "--timeout", timeoutSeconds, 1, 86_400, "s");
        Check.range(spec, "--spin", spinMicros, 0, 1_000_000, "µs");
        Check.range(spec, "--port", port, role.server ? 0 : 1, 65535, "");
        Check.range(spec, "--sgid-index", sgidIndex, 0, 255, "");
        Check.ibPort(spec, ibPort);
        QueuePairType queuePairType = transport.type(spec);
        AddressExchange.Target target = null;
        EndpointAddress given = null;
        if (role.connect != null) {
            try {
                if (role.connect.contains("/")) {
                    given = Check.peer(spec, "--connect", EndpointAddress.parse(role.connect));
                } else {
                    target = AddressExchange.Target.parse(role.connect, port);
                }
            } catch (IllegalArgumentException e) {
                throw Check.fail(spec, "--connect", e.getMessage().replaceFirst("^--connect: ", ""));
            }
        }
        long progressMillis = output.progressMillis(spec);
        Report report = new Report(spec.commandLine().getOut(), output.json);
        report.put("command", "stream").put("transport", queuePairType.name().toLowerCase(java.util.Locale.ROOT));
        try (VerbsProvider provider = providerOptions.open(spec, 0);
             Device device = providerOptions.openDevice(spec, provider, "--ib-dev", deviceName)) {
            Check.ibPort(spec, device, ibPort);
            transport.check(spec, device);
            where = device.name() + ", " + queuePairType;
            if (role.server) {
                providerOptions.refuseServerOnMock(spec, provider, output.verbose);
            } else {
                providerOptions.announceMock(spec, report, output, provider);
            }
            ProtectionDomain pd = device.allocatePd();
            AddressHandleCache cache = AddressHandleCache.create();
            UdEndpoint.Options sending = UdEndpoint.Options.defaults().withPortNum(ibPort).withSgidIndex(sgidIndex)
                    .withDepths(window, 16).withSpin(spinMicros, TimeUnit.MICROSECONDS).withTransport(queuePairType);
            UdEndpoint.Options receiving = UdEndpoint.Options.defaults().withPortNum(ibPort).withSgidIndex(sgidIndex)
                    .withDepths(1, receives).withSpin(spinMicros, TimeUnit.MICROSECONDS)
                    .withTransport(queuePairType);
            try (Progress p = Progress.start(spec.commandLine().getErr(), output, progressMillis,
                    () -> String.format("stream: %,d of %,d sent", sentCount.get(), count))) {
                if (role.server) {
                    serve(report, pd, cache, receiving);
                } else if (role.connect != null) {
                    try (UdEndpoint sender = UdEndpoint.open(pd, cache, sending)) {
                        Check.size(spec, size, sender);
                        EndpointAddress to = given;
                        if (to == null) {
                            to = AddressExchange.connect(target, sender.address(), timeoutSeconds * 1000);
                            report.line("receiver %s at %s", to, target);
                        } else {
                            report.line("receiver %s", to);
                        }
                        send(report, sender, cache, to);
                    }
                } else {
                    loopback(report, pd, cache, sending, receiving);
                }
                report.put("interrupted", interrupted);
                report.finish();
                if (interrupted) {
                    spec.commandLine().getErr().printf("%s: interrupted after %s%n", spec.qualifiedName(), role.server
                            ? String.format("receiving %,d datagrams", receivedCount)
                            : String.format("sending %,d of %,d datagrams", sentCount.get(), count));
                    return Main.INTERRUPTED;
                }
                return 0;
            } finally {
                cache.close();
                pd.close();
            }
        }
    }


    private void serve(Report report, ProtectionDomain pd, AddressHandleCache cache, UdEndpoint.Options options)
            throws Exception {
        try (UdEndpoint receiver = UdEndpoint.open(pd, cache, options);
             AddressExchange.Server tcp = new AddressExchange.Server(port, receiver.address(), timeoutSeconds * 1000,
                     (client, from) -> spec.commandLine().getErr().println("stream server: sender " + client + " from "
                             + from),
                     dropped -> spec.commandLine().getErr().println("stream server: " + dropped))) {
            Check.size(spec, size, receiver);
            report.line("receiver address: %s", receiver.address().toText());
            report.line("listening on TCP port %d", tcp.port());
            report.put("tcp_port", tcp.port());
            if (output.json) {
                spec.commandLine().getErr().println("stream server: listening on TCP port " + tcp.port());
            }
            report(report, receive(receiver));
        }
    }

    /**
     * Counts datagrams until the sender's end marker, or {@code --timeout} with none, or an interrupt
     * (Ctrl-C): then what came so far, the interrupt flag cleared.
     */
    private Received receive(UdEndpoint receiver) {
        Counter counter = new Counter();
        long sleeps = receiver.counters().receiveSleeps();
        for (;;) {
            // A stream that never lets the wait block would never see the interrupt in it: looked for here too.
            boolean stopped = Thread.interrupted();
            int got = 0;
            if (!stopped) {
                try {
                    // Up to a window's worth per wake-up, read in place: no copy, no allocation per datagram.
                    got = receiver.receive(counter, RECEIVE_BATCH, timeoutSeconds, TimeUnit.SECONDS);
                } catch (InterruptedOperationException e) {
                    Thread.interrupted(); // set again by the endpoint; the closes below must not see it
                    stopped = true;
                }
            }
            if (stopped) {
                return new Received(counter.datagrams, counter.bytes, counter.first, counter.last, counter.announced,
                        receiver.counters().receiveSleeps() - sleeps, true);
            }
            if (got == 0) {
                if (counter.datagrams == 0) {
                    throw new IllegalStateException("receiver: no datagram in " + timeoutSeconds + " s");
                }
                return new Received(counter.datagrams, counter.bytes, counter.first, counter.last, -1,
                        receiver.counters().receiveSleeps() - sleeps, false);
            }
            if (counter.announced >= 0) {
                return new Received(counter.datagrams, counter.bytes, counter.first, counter.last, counter.announced,
                        receiver.counters().receiveSleeps() - sleeps, false);
            }
        }
    }

    /** Datagrams taken per receive call at most. */
    private static final int RECEIVE_BATCH = 64;

    /** Counts what a receive call hands it, and notes the end marker. */
    private static final class Counter implements Consumer<DatagramView> {
        long datagrams;
        long bytes;
        long first;
        long last;
        long announced = -1;

        @Override
        public void accept(DatagramView d) {
            if (announced >= 0) {
                return; // what follows the marker is not counted (other copies of it)
            }
            ByteBuffer p = d.payload();
            if (p.remaining() == END_BYTES && p.get(0) == END) {
                announced = p.getLong(1);
                return;
            }
            long now = System.nanoTime();
            if (datagrams == 0) {
                first = now;
            }
            last = now;
            datagrams++;
            bytes += p.remaining();
        }
    }

    /** Sends posted per call at most ({@code EFA_AH_MAX_BATCH}, the stub's chain). */
    private static final int SEND_BATCH = 64;

    /**
     * Sends {@code --count} datagrams, a window in flight, then the end marker; reports the send rate.
     * Ctrl-C (an interrupt) stops the sending: the end marker then announces what was sent.
     */
    private void send(Report report, UdEndpoint sender, AddressHandleCache cache, EndpointAddress to) {
        byte[] payload = new byte[size];
        java.util.Arrays.fill(payload, (byte) 0x7b); // never END
        ByteBuffer message = ByteBuffer.wrap(payload);
        // One post of up to a window's worth of sends: one crossing to the provider for the lot.
        ByteBuffer[] batch = new ByteBuffer[Math.min(window, SEND_BATCH)];
        for (int i = 0; i < batch.length; i++) {
            batch[i] = message.duplicate();
        }
        try (AddressHandle ah = cache.acquire(sender.pd(),
                AddressHandleAttributes.builder().dgid(to.gid()).sgidIndex(sgidIndex).build())) {
            long sleeps = sender.counters().sendSleeps();
            long resendsBefore = sender.counters().rnrResends();
            long postedBefore = sender.counters().sent();
            long start = System.nanoTime();
            boolean stopped = false;
            try {
                // A send that finds a free slot never waits, so the loop itself looks for Ctrl-C.
                for (long i = 0; i < count && !(stopped = Thread.currentThread().isInterrupted()); ) {
                    int n = (int) Math.min(batch.length, count - i);
                    for (int j = 0; j < n; j++) {
                        batch[j].clear();
                    }
                    try {
                        sender.sendBatch(ah, to, batch, 0, n);
                    } catch (WorkCompletionException e) {
                        countReceiverNotReady(e); // then the rest of the batch, which was not posted
                    }
                    i = sender.counters().sent() - postedBefore;
                    sentCount.set(i);
                }
            } catch (InterruptedOperationException e) {
                stopped = true;
            }
            if (stopped) {
                Thread.interrupted(); // the flush and the end marker below must not see it
                interrupted = true;
            }
            long sent = sender.counters().sent() - postedBefore; // an interrupted batch may have posted part
            sentCount.set(sent);
            if (!flush(sender, stopped ? 1 : timeoutSeconds) && !stopped) {
                throw new IllegalStateException("sender: sends still in flight after " + timeoutSeconds + " s");
            }
            long elapsed = System.nanoTime() - start;
            sleeps = sender.counters().sendSleeps() - sleeps;
            ByteBuffer end = ByteBuffer.allocate(END_BYTES).put(END).putLong(sent);
            for (int i = 0; i < END_COPIES; i++) {
                // Spaced out: a receiver whose ring the stream filled needs time to take the marker.
                if (!pause(END_SPACING_MILLIS)) {
                    interrupted = true;
                    break;
                }
                try {
                    sender.send(ah, to, end.clear());
                } catch (WorkCompletionException e) {
                    countReceiverNotReady(e); // a data send's, reported now; this copy was not posted
                    sender.send(ah, to, end.clear());
                }
            }
            flush(sender, 1);
            long failed = receiverNotReady;
            long resends = sender.counters().rnrResends() - resendsBefore;
            String of = sent == count ? String.format("%,d", sent) : String.format("%,d of %,d", sent, count);
            String rate = Rates.measurable(elapsed) ? String.format("%,.0f messages/s, %.2f MB/s", sent * 1e9 / elapsed,
                    (double) sent * size * 1e3 / elapsed) : Rates.tooShort(elapsed, of + " datagrams");
            report.line("sent %s datagrams of %d bytes in %.3f s, window %d: %s, %.3f sleeps per datagram (%s)%s", of,
                    size, elapsed / 1e9, window, rate, (double) sleeps / Math.max(1, sent), where,
                    stopped ? " (interrupted)" : "");
            if (sender.transport() == QueuePairType.SRD) {
                report.line("%,d RNR resends (sends that met a receiver with no receive posted, sent again after a "
                        + "backoff)", resends);
            }
            if (failed > 0) {
                report.line("%,d sends failed: receiver not ready (RNR: the receiver fell behind; SRD says so where UD "
                        + "drops)", failed);
            }
            report.put("sent", sent).put("size_bytes", size).put("window", window).put("send_elapsed_ns", elapsed)
                    .put("send_messages_per_s", Rates.perSecond(sent, elapsed))
                    .put("send_mb_per_s", Rates.perSecond(sent * (double) size / 1e6, elapsed))
                    .put("send_sleeps", sleeps).put("send_failures_rnr", failed)
                    .put("send_rnr_resends", resends);
        }
    }

    /** Sends (data and end marker) that failed for want of a receive at the receiver: SRD's RNR. */
    private long receiverNotReady;

    /**
     * Counts the failures an SRD receiver that fell behind causes (out of {@code rnr_retry}); any
     * other failure ends the stream.
     */
    private void countReceiverNotReady(WorkCompletionException e) {
        if (!e.failures().stream().allMatch(SendFailure::isReceiverNotReady)) {
            throw e;
        }
        receiverNotReady += e.failures().size();
    }

    /** {@link UdEndpoint#flush}, counting the RNR failures it reports; false when sends are still in flight. */
    private boolean flush(UdEndpoint sender, int seconds) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        for (;;) {
            try {
                return sender.flush(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (WorkCompletionException e) {
                countReceiverNotReady(e);
            }
        }
    }

    /** Sleeps; false if interrupted (the flag cleared: the caller notes it). */
    private static boolean pause(long millis) {
        try {
            Thread.sleep(millis);
            return true;
        } catch (InterruptedException e) {
            return false;
        }
    }

    /**
     * The receiver's side. Its rate counts the datagrams after the first over the time from the
     * first arrival to the last: n arrivals span n - 1 intervals.
     */
    private void report(Report report, Received r) {
        receivedCount = r.datagrams();
        long span = r.lastNanos() - r.firstNanos();
        String of = r.announced() >= 0 ? String.format(" of %,d sent", r.announced()) : " (the end marker was lost)";
        if (r.interrupted()) {
            of += r.announced() >= 0 ? " (interrupted)" : "";
            interrupted = true;
        }
        long after = Math.max(0, r.datagrams() - 1);
        double bytesAfter = r.datagrams() == 0 ? 0 : (double) r.bytes() * after / r.datagrams();
        String rate = r.datagrams() < 2 ? "too short for a rate (" + r.datagrams() + " datagram(s): no time between "
                + "arrivals)" : Rates.measurable(span) ? String.format("%,.0f messages/s, %.2f MB/s", after * 1e9 / span,
                bytesAfter * 1e3 / span) : Rates.tooShort(span, String.format("%,d datagrams", r.datagrams()));
        report.line("received %,d datagrams%s, %,d bytes, in %.3f s: %s, %.3f sleeps per datagram (%s)", r.datagrams(),
                of, r.bytes(), span / 1e9, rate, (double) r.sleeps() / Math.max(1, r.datagrams()), where);
        long lost = r.announced() >= 0 ? Math.max(0, r.announced() - r.datagrams()) : -1;
        if (lost * 100 > LOSS_PERCENT_TOLD * Math.max(1, r.announced())) {
            // A loss over UD is no failure of the run (the transport promises nothing) but a user who sees
            // only "received 40,256" cannot tell why: the receiver had too few receives posted for the rate.
            String why = String.format("%s: lost %,d of %,d datagrams (%.1f%%): %s", spec.qualifiedName(), lost,
                    r.announced(), 100.0 * lost / r.announced(), transport.type(spec) == QueuePairType.UD
                            ? "UD has no flow control: what arrives while the receiver's " + receivesPosted
                            + " receives (--rx-depth) are all taken is dropped; use --transport srd (a send "
                            + "meeting no receive is resent, never dropped), a smaller --window or a larger --rx-depth"
                            : "the receiver could not keep up with " + receivesPosted + " receives (--rx-depth)");
            spec.commandLine().getErr().println(why);
            report.put("lost_reason", why.substring(spec.qualifiedName().length() + 2));
        }
        report.put("lost", lost);
        boolean rated = r.datagrams() >= 2 && Rates.measurable(span);
        report.put("received", r.datagrams()).put("announced", r.announced()).put("received_bytes", r.bytes())
                .put("receive_elapsed_ns", span)
                .put("receive_messages_per_s", rated ? Rates.perSecond(after, span) : null)
                .put("receive_mb_per_s", rated ? Rates.perSecond(bytesAfter / 1e6, span) : null)
                .put("receive_sleeps", r.sleeps());
    }

    private void loopback(Report report, ProtectionDomain pd, AddressHandleCache cache, UdEndpoint.Options sending,
                          UdEndpoint.Options receiving) throws Exception {
        try (UdEndpoint receiver = UdEndpoint.open(pd, cache, receiving);
             UdEndpoint sender = UdEndpoint.open(pd, cache, sending)) {
            Check.size(spec, size, sender);
            AtomicReference<Object> received = new AtomicReference<>();
            Thread counting = new Thread(() -> {
                try {
                    received.set(receive(receiver));
                } catch (Throwable t) {
                    received.set(t);
                }
            }, "stream-receiver");
            counting.setDaemon(true);
            counting.start();
            send(report, sender, cache, receiver.address());
            long waitMillis = TimeUnit.SECONDS.toMillis(timeoutSeconds + 5L);
            if (interrupted) {
                waitMillis = 500; // for the end marker; then the receiver is stopped
            }
            try {
                counting.join(waitMillis);
            } catch (InterruptedException e) {
                interrupted = true; // Ctrl-C while the receiver drains
            }
            if (interrupted && counting.isAlive()) {
                counting.interrupt();
                joinUninterruptibly(counting, 1000);
            }
            Object r = received.get();
            if (r instanceof Throwable t) {
                throw new IllegalStateException("receiver failed: " + Failures.describe(t), t);
            }
            if (r == null) {
                throw new IllegalStateException("receiver: still counting " + (timeoutSeconds + 5) + " s after the end");
            }
            report(report, (Received) r);
        }
    }

    /** Waits up to {@code millis} for {@code t}, an interrupt kept for later. */
    private static void joinUninterruptibly(Thread t, long millis) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        boolean again = false;
        long left;
        while (t.isAlive() && (left = deadline - System.nanoTime()) > 0) {
            try {
                t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
            } catch (InterruptedException e) {
                again = true;
            }
        }
        if (again) {
            Thread.currentThread().interrupt();
        }
    }
}
