package org.efaah.cli;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.CacheStats;
import org.efaah.ud.Datagram;
import org.efaah.ud.EndpointAddress;
import org.efaah.ud.UdEndpoint;
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
 * UD ping-pong through cached AHs, like {@code ibv_ud_pingpong} and interoperable with it: the
 * client sends, the server echoes each datagram as it came through a return-path AH, the client
 * checks that each echo came from the server's QPN and GID, and every byte, and times the round
 * trip. A client ends with {@link #BYE}, which {@code ibv_ud_pingpong} never sends. Without
 * {@code --server} or {@code --connect} both sides run in this process.
 */
@Command(name = "pingpong",
        description = "UD ping-pong through cached AHs (server, client, or both in one process); "
                + "reports round-trip latency and throughput. Addresses are exchanged over TCP in "
                + "ibv_ud_pingpong's format, so either side may be rdma-core's ibv_ud_pingpong "
                + "(server: --server; client: --connect HOST[:PORT]), or given as "
                + "text (--connect GID/QPN/QKEY) or in a file (--address-file). On the mock provider only the "
                + "one-process form (neither --server nor --connect) can work: the mock joins the endpoints of "
                + "one process; --server and --connect across processes or hosts need an RDMA device.")
final class PingpongCommand implements Callable<Integer> {
    /**
     * The client's goodbye: a datagram of this one byte. Its payloads are never that (see
     * {@link #fill}), and {@code ibv_ud_pingpong}'s are 0x7b bytes or, with {@code -c}, page numbers.
     */
    private static final byte BYE = 1;

    @Mixin
    ProviderOptions providerOptions;

    @ArgGroup(exclusive = true)
    Role role = new Role();

    static final class Role {
        @Option(names = "--server", description = "Serve until the client says goodbye or, given -n, for that many "
                + "round trips (as ibv_ud_pingpong's server, whose client says no goodbye); listen on TCP --port for "
                + "the address exchange. Waits for a client without limit unless --timeout is given; a client whose "
                + "TCP connection ends before its 'done' went away: said at once, and the server waits for the next. "
                + "Refused on the mock provider, which nothing outside this process can reach.")
        boolean server;

        @Option(names = "--connect", paramLabel = "HOST[:PORT]|GID/QPN/QKEY",
                description = "Be the client of this server: its TCP host and port, or its address text.")
        String connect;
    }

    @Option(names = {"-p", "--port"}, description = "TCP port of the address exchange, 0 for any free one (server), "
            + "1..65535 (default: ${DEFAULT-VALUE}, as ibv_ud_pingpong).")
    int port = AddressExchange.DEFAULT_PORT;

    @Option(names = "--address-file", paramLabel = "FILE",
            description = "Server: also write its address here; client: read the server's address from here.")
    Path addressFile;

    @Option(names = {"-s", "--size"}, description = "Payload bytes, 1..the port's largest message: max_msg_sz on EFA, else the path MTU (default: ${DEFAULT-VALUE}).")
    int size = 64;

    @Option(names = {"-n", "--iters", "--iterations"}, description = "Round trips, >= 1 (default: ${DEFAULT-VALUE}); "
            + "a server ends after this many only when it is given.")
    long iterations = 10_000;

    @Option(names = {"-g", "--gid-idx", "--sgid-index"}, description = "This side's GID index, sgid_index "
            + "(default: ${DEFAULT-VALUE}).")
    int sgidIndex = 0;

    @Option(names = {"-d", "--ib-dev", "--device"}, paramLabel = "NAME", description = "Device name (default: the first).")
    String deviceName;

    @Option(names = {"-i", "--ib-port"}, paramLabel = "PORT", description = "Port of the device, 1..255 "
            + "(default: ${DEFAULT-VALUE}).")
    int ibPort = 1;

    @Mixin
    TransportOption transport;

    @Option(names = "--spin", paramLabel = "MICROSECONDS",
            description = "How long a wait for a datagram spins before it sleeps on the CQ's completion channel, "
                    + "0..1000000 (default: ${DEFAULT-VALUE}); the largest comes close to perftest's busy polling.")
    long spinMicros = UdEndpoint.DEFAULT_SPIN_NANOS / 1000;

    @Option(names = "--timeout", paramLabel = "SECONDS",
            description = "Seconds to wait for any one datagram or TCP connection, 1..86400 (default: "
                    + "${DEFAULT-VALUE}); a server waits for its first client without limit unless it is given.")
    int timeoutSeconds = 10;

    @Mixin
    OutputOptions output;

    @Spec
    CommandSpec spec;

    /** How long a server still waits for the client's goodbye after its TCP connection closed. */

    private final AtomicLong roundTrips = new AtomicLong();
    private final AtomicLong answered = new AtomicLong();

    @Override
    public Integer call() throws Exception {
        // --size is checked against the port's largest message once an endpoint is open: one range, the true one.
        Check.range(spec, "--iterations", iterations, 1, Long.MAX_VALUE, "");
        Check.range(spec, "--timeout", timeoutSeconds, 1, 86_400, "s");
        Check.range(spec, "--port", port, role.server ? 0 : 1, 65535, "");
        Check.range(spec, "--sgid-index", sgidIndex, 0, 255, "");
        Check.range(spec, "--spin", spinMicros, 0, 1_000_000, "µs");
        QueuePairType queuePairType = transport.type(spec);
        long progressMillis = output.progressMillis(spec);
        EndpointAddress given = null;
        AddressExchange.Target target = null;
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
        } else if (addressFile != null && !role.server) {
            given = Check.peer(spec, "--address-file", readAddressFile());
        }
        Check.ibPort(spec, ibPort);
        Report report = new Report(spec.commandLine().getOut(), output.json);
        report.put("command", "pingpong");
        try (VerbsProvider provider = providerOptions.open(spec, 0);
             Device device = providerOptions.openDevice(spec, provider, "--ib-dev", deviceName)) {
            Check.ibPort(spec, device, ibPort);
            transport.check(spec, device);
            if (role.server) {
                providerOptions.refuseServerOnMock(spec, provider, output.verbose);
            } else {
                providerOptions.announceMock(spec, report, output, provider);
            }
            ProtectionDomain pd = device.allocatePd();
            AddressHandleCache cache = AddressHandleCache.create();
            UdEndpoint.Options options = UdEndpoint.Options.defaults().withPortNum(ibPort).withSgidIndex(sgidIndex)
                    .withTransport(queuePairType).withSpin(spinMicros, TimeUnit.MICROSECONDS);
            // A server counts what it answered: the client's -n is the client's.
            try (Progress p = Progress.start(spec.commandLine().getErr(), output, progressMillis,
                    () -> role.server ? String.format("pingpong server: %,d datagrams answered", answered.get())
                            : String.format("pingpong: %,d round trips of %,d", roundTrips.get(), iterations))) {
                int exit;
                if (role.server) {
                    exit = serve(report, pd, cache, options);
                } else if (given != null || target != null) {
                    exit = client(report, pd, cache, options, given, target);
                } else {
                    exit = loopback(report, pd, cache, options);
                }
                report.finish();
                return exit;
            } finally {
                cache.close();
                pd.close();
            }
        }
    }

    private EndpointAddress readAddressFile() throws IOException {
        String text;
        try {
            text = Files.readString(addressFile, StandardCharsets.US_ASCII);
        } catch (IOException e) {
            // "Is a directory" and friends say nothing of the file without this.
            throw new IOException("--address-file " + addressFile + ": " + Failures.describe(e)
                    .replace(addressFile + ": ", ""), e);
        }
        try {
            return EndpointAddress.parse(text);
        } catch (IllegalArgumentException e) {
            throw Check.fail(spec, "--address-file", addressFile + " holds no server address: " + e.getMessage());
        }
    }

    private int serve(Report report, ProtectionDomain pd, AddressHandleCache cache, UdEndpoint.Options options)
            throws Exception {
        ClientState clients = new ClientState();
        try (UdEndpoint server = UdEndpoint.open(pd, cache, options);
             AddressExchange.Server tcp = new AddressExchange.Server(port, server.address(), timeoutSeconds * 1000,
                     clients::connected, clients::failed, clients::wentAway)) {
            Check.size(spec, size, server);
            String text = server.address().toText();
            report.line("server address: %s", text);
            report.line("listening on TCP port %d", tcp.port());
            report.put("server_address", text).put("tcp_port", tcp.port());
            if (addressFile != null) {
                writeAddressFile(text);
            }
            if (output.json) {
                // Scripts need the port before the run ends.
                spec.commandLine().getErr().println("pingpong server: listening on TCP port " + tcp.port()
                        + ", address " + text);
            }
            long served;
            try {
                // ibv_ud_pingpong's client sends no goodbye: given -n, the server stops after that many, as its does.
                long limit = spec.commandLine().getParseResult().hasMatchedOption("--iterations") ? iterations : 0;
                served = serveLoop(server, clients, mockHint(pd), limit);
            } catch (InterruptedOperationException e) {
                Thread.interrupted();
                report.line("server: interrupted after answering %,d datagrams", answered.get());
                report.put("datagrams_answered", answered.get()).put("interrupted", true);
                spec.commandLine().getErr().printf("%s: interrupted after answering %,d datagrams%n",
                        spec.qualifiedName(), answered.get());
                return Main.INTERRUPTED;
            }
            server.flush(timeoutSeconds, TimeUnit.SECONDS);
            CacheStats s = cache.stats();
            report.line("server: answered %,d datagrams with %d return-path AH(s) created (hits %,d)", served,
                    s.hardwareCreates(), s.hits());
            report.put("datagrams_answered", served).put("return_path_ahs", s.hardwareCreates());
        }
        return 0;
    }

    /** What the server knows of its clients, from the TCP exchange. */
    private final class ClientState {
        private final java.util.concurrent.atomic.AtomicInteger count = new java.util.concurrent.atomic.AtomicInteger();
        private volatile String current;
        private final java.util.concurrent.atomic.AtomicInteger goneCount = new java.util.concurrent.atomic.AtomicInteger();
        private volatile String gone;

        void connected(EndpointAddress who, java.net.SocketAddress from) {
            current = who + " from " + from;
            count.incrementAndGet();
            spec.commandLine().getErr().println("pingpong server: client " + current);
        }

        void failed(String why) {
            spec.commandLine().getErr().println("pingpong server: " + why);
        }

        /** A client had our address and ended its connection before 'done' (already told by {@link #failed}). */
        void wentAway(EndpointAddress who, java.net.SocketAddress from) {
            gone = who + " from " + from;
            goneCount.incrementAndGet();
        }
    }

    private void writeAddressFile(String text) throws IOException {
        Path tmp = addressFile.resolveSibling(addressFile.getFileName() + ".tmp");
        try {
            Files.writeString(tmp, text + "\n", StandardCharsets.US_ASCII);
            Files.move(tmp, addressFile, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new IOException("--address-file " + addressFile + ": cannot write the server address: "
                    + Failures.describe(e), e);
        }
    }

    /**
     * Answers datagrams until the client's goodbye, or {@code limit} of them when above 0. Before
     * any client, waits without limit unless --timeout was given; then at most --timeout between
     * datagrams. {@code clients} is null when nobody connects over TCP. Returns the datagrams
     * answered (the goodbye is not one).
     */
    private long serveLoop(UdEndpoint server, ClientState clients, String hint, long limit) {
        boolean waitForever = !spec.commandLine().getParseResult().hasMatchedOption("--timeout");
        long timeoutNanos = TimeUnit.SECONDS.toNanos(timeoutSeconds);
        long served = 0;
        long since = System.nanoTime();
        int clientsSeen = 0;
        int goneSeen = 0;
        for (;;) {
            Datagram d = server.receive(100, TimeUnit.MILLISECONDS);
            long now = System.nanoTime();
            if (clients != null && clients.count.get() != clientsSeen) {
                clientsSeen = clients.count.get();
                since = now;
            }
            if (clients != null && clients.goneCount.get() != goneSeen) {
                goneSeen = clients.goneCount.get(); // back to waiting for a client, from now
                since = now;
            }
            if (d == null) {
                if (served == 0 && clientsSeen == 0) {
                    if (!waitForever && now - since > timeoutNanos) {
                        throw new IllegalStateException("server: " + (goneSeen == 0 ? "no client came in "
                                + timeoutSeconds + " s (--timeout)" : "no other client came in " + timeoutSeconds
                                + " s (--timeout) after the client " + clients.gone + " went away before 'done'")
                                + hint);
                    }
                } else if (now - since > timeoutNanos) {
                    throw new IllegalStateException("server: no datagram in " + timeoutSeconds + " s after " + served
                            + (clients != null && clients.current != null ? " from the client " + clients.current : "")
                            + hint);
                }
                continue;
            }
            since = now;
            byte[] payload = d.payload();
            if (payload.length == 1 && payload[0] == BYE) {
                return served;
            }
            server.reply(d, ByteBuffer.wrap(payload));
            served++;
            answered.incrementAndGet();
            if (served == limit) {
                return served;
            }
        }
    }

    private int client(Report report, ProtectionDomain pd, AddressHandleCache cache, UdEndpoint.Options options,
                       EndpointAddress given, AddressExchange.Target target) throws IOException {
        try (UdEndpoint client = UdEndpoint.open(pd, cache, options)) {
            Check.size(spec, size, client);
            EndpointAddress server = given;
            if (target != null) {
                server = AddressExchange.connect(target, client.address(), timeoutSeconds * 1000);
                report.line("server %s at %s", server, target);
            }
            if (server.equals(client.address())) {
                throw new IllegalStateException("the server address " + server + " is this client's own endpoint: "
                        + "no server answers there" + mockHint(pd));
            }
            return runClient(report, client, cache, server, pd);
        }
    }


    private static String mockHint(ProtectionDomain pd) {
        return pd.device().provider().name().equals("mock")
                ? " (the mock provider joins the endpoints of one process only: across processes, use a device)" : "";
    }

    private int runClient(Report report, UdEndpoint client, AddressHandleCache cache, EndpointAddress server,
                          ProtectionDomain pd) {
        Latencies rtt = new Latencies();
        ByteBuffer message = ByteBuffer.allocate(size);
        long start;
        try (AddressHandle ah = cache.acquire(client.pd(),
                AddressHandleAttributes.builder().dgid(server.gid()).sgidIndex(sgidIndex).build())) {
            start = System.nanoTime();
            for (long i = 0; i < iterations; i++) {
                fill(message, i);
                long t0 = System.nanoTime();
                Datagram echo = null;
                boolean interrupted = Thread.currentThread().isInterrupted();
                try {
                    if (!interrupted) {
                        client.send(ah, server, message.duplicate());
                        echo = client.receive(timeoutSeconds, TimeUnit.SECONDS);
                    }
                } catch (InterruptedOperationException e) {
                    interrupted = true;
                }
                if (interrupted) {
                    // Ctrl-C: what was done so far, then exit 130. The closes below must not see the interrupt.
                    Thread.interrupted();
                    report(report, rtt, System.nanoTime() - start, client, i);
                    report.put("interrupted", true);
                    spec.commandLine().getErr().printf("%s: interrupted after %,d of %,d round trips%n",
                            spec.qualifiedName(), i, iterations);
                    return Main.INTERRUPTED;
                }
                rtt.record(System.nanoTime() - t0);
                check(echo, i, message.array(), server, pd);
                roundTrips.incrementAndGet();
            }
            long elapsed = System.nanoTime() - start;
            client.send(ah, server, ByteBuffer.wrap(new byte[] {BYE}));
            client.flush(timeoutSeconds, TimeUnit.SECONDS);
            report(report, rtt, elapsed, client, iterations);
        }
        return 0;
    }

    /** The echo of message {@code i} must come from the server's QPN and GID, every byte as sent. */
    private void check(Datagram echo, long i, byte[] sent, EndpointAddress server, ProtectionDomain pd) {
        if (echo == null) {
            throw new IllegalStateException("client: no echo of message " + i + " from " + server + " in "
                    + timeoutSeconds + " s" + (i == 0 ? " (is the server running?)" + mockHint(pd) : ""));
        }
        if (echo.sourceQpn() != server.qpn() || !echo.sourceGid().equals(server.gid())) {
            throw new IllegalStateException(String.format("client: the answer to message %d came from GID %s QPN 0x%06x,"
                    + " not from the server %s", i, echo.sourceGid(), echo.sourceQpn(), server));
        }
        byte[] got = echo.payload();
        if (!Arrays.equals(got, sent)) {
            throw new IllegalStateException("client: the echo of message " + i + " differs from what was sent");
        }
    }

    private void fill(ByteBuffer message, long iteration) {
        byte[] a = message.array();
        for (int j = 0; j < a.length; j++) {
            a[j] = (byte) (iteration * 13 + j);
        }
        if (a.length == 1 && a[0] == BYE) {
            a[0] = 0x7b; // never the goodbye
        }
    }

    private void report(Report report, Latencies rtt, long elapsedNanos, UdEndpoint client, long done) {
        double seconds = elapsedNanos / 1e9;
        report.line("%,d round trips of %d bytes in %.3f s, every echo from the server and every payload verified (%s)",
                done, size, seconds, client.pd().device().name());
        report.line("round trip: %s", rtt.summaryMicros());
        if (Rates.measurable(elapsedNanos)) {
            report.line("throughput: %,.0f round trips/s, %.2f MB/s of payload each way", done / seconds,
                    (double) done * size / seconds / 1e6);
        } else {
            report.line("throughput: %s", Rates.tooShort(elapsedNanos, done + " round trip(s)"));
        }
        report.put("device", client.pd().device().name()).put("round_trips", done).put("size_bytes", size)
                .put("elapsed_ns", elapsedNanos).put("round_trip", rtt.toMap()).put("verified", true);
    }

    private int loopback(Report report, ProtectionDomain pd, AddressHandleCache cache, UdEndpoint.Options options)
            throws Exception {
        try (UdEndpoint server = UdEndpoint.open(pd, cache, options);
             UdEndpoint client = UdEndpoint.open(pd, cache, options)) {
            Check.size(spec, size, client);
            report.line("loopback on %s: server %s, client %s", pd.device().name(), server.address(), client.address());
            AtomicReference<Throwable> serverFailure = new AtomicReference<>();
            Thread serving = new Thread(() -> {
                try {
                    serveLoop(server, null, "", 0);
                    server.flush(timeoutSeconds, TimeUnit.SECONDS);
                } catch (Throwable t) {
                    serverFailure.set(t);
                }
            }, "pingpong-server");
            serving.setDaemon(true);
            serving.start();
            int result = runClient(report, client, cache, server.address(), pd);
            if (result == Main.INTERRUPTED) {
                return result; // closing the endpoints ends the server thread's wait
            }
            try {
                serving.join(TimeUnit.SECONDS.toMillis(timeoutSeconds + 5L));
            } catch (InterruptedException e) {
                // Ctrl-C after the last round trip: the client's summary is out; closing ends the server thread.
                spec.commandLine().getErr().printf("%s: interrupted after %,d of %,d round trips%n",
                        spec.qualifiedName(), iterations, iterations);
                return Main.INTERRUPTED;
            }
            if (serverFailure.get() != null) {
                throw new IllegalStateException("server side failed: " + Failures.describe(serverFailure.get()),
                        serverFailure.get());
            }
            CacheStats s = cache.stats();
            report.line("AHs: %d hardware AH(s) for %,d look-ups (client's forward AH and the server's return path)",
                    s.hardwareCreates(), s.requests());
            report.put("hardware_ahs", s.hardwareCreates()).put("ah_lookups", s.requests());
            return result;
        }
    }
}
