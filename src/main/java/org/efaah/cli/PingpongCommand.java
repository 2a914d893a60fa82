package org.efaah.cli;

import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.CacheStats;
import org.efaah.ud.Datagram;
import org.efaah.ud.EndpointAddress;
import org.efaah.ud.UdEndpoint;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.VerbsProvider;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * UD ping-pong through cached AHs, like {@code ibv_ud_pingpong}: the client sends, the server
 * echoes through a return-path AH, the client checks every byte and times the round trip.
 * Without {@code --server} or {@code --connect} both sides run in this process.
 */
@Command(name = "pingpong", mixinStandardHelpOptions = true,
        description = "UD ping-pong through cached AHs (server, client, or both in one process); "
                + "reports round-trip latency and throughput.")
final class PingpongCommand implements Callable<Integer> {
    /** First payload byte of the client's last message: tells the server to stop. */
    private static final byte BYE = 1;

    @Mixin
    ProviderOptions providerOptions;

    @ArgGroup(exclusive = true)
    Role role = new Role();

    static final class Role {
        @Option(names = "--server", description = "Serve until the client says goodbye.")
        boolean server;

        @Option(names = "--connect", paramLabel = "GID/QPN/QKEY", description = "Be the client of this server.")
        String connect;
    }

    @Option(names = "--address-file", paramLabel = "FILE",
            description = "Server: write its address here; client: read the server's address from here.")
    Path addressFile;

    @Option(names = {"-s", "--size"}, description = "Payload bytes, 1..path MTU (default: ${DEFAULT-VALUE}).")
    int size = 64;

    @Option(names = {"-n", "--iterations"}, description = "Round trips (default: ${DEFAULT-VALUE}).")
    int iterations = 10_000;

    @Option(names = "--sgid-index", description = "This side's GID index (default: ${DEFAULT-VALUE}).")
    int sgidIndex = 0;

    @Option(names = "--device", description = "Device name (default: the first).")
    String deviceName;

    @Option(names = "--transport", paramLabel = "ud|srd",
            description = "Datagram transport: ud (every device) or srd (EFA only) (default: ud).")
    String transport = "ud";

    @Option(names = "--timeout", description = "Seconds to wait for any one datagram (default: ${DEFAULT-VALUE}).")
    int timeoutSeconds = 10;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        if (size < 1 || iterations < 1 || timeoutSeconds < 1) {
            throw new IllegalArgumentException("size, iterations and timeout must be >= 1");
        }
        try (VerbsProvider provider = providerOptions.open(0);
             Device device = deviceName == null ? Device.openFirst(provider) : Device.open(provider, deviceName)) {
            ProtectionDomain pd = device.allocatePd();
            AddressHandleCache cache = AddressHandleCache.create();
            UdEndpoint.Options options = UdEndpoint.Options.defaults().withSgidIndex(sgidIndex)
                    .withTransport(transport(transport));
            try {
                if (role.server) {
                    return serve(out, pd, cache, options);
                }
                if (role.connect != null || addressFile != null) {
                    EndpointAddress server = role.connect != null ? EndpointAddress.parse(role.connect)
                            : EndpointAddress.parse(Files.readString(addressFile));
                    return client(out, pd, cache, options, server);
                }
                return loopback(out, pd, cache, options);
            } finally {
                cache.close();
                pd.close();
            }
        }
    }

    private int serve(PrintWriter out, ProtectionDomain pd, AddressHandleCache cache, UdEndpoint.Options options)
            throws Exception {
        try (UdEndpoint server = UdEndpoint.open(pd, cache, options)) {
            announce(out, server);
            long served = serveLoop(server, Long.MAX_VALUE);
            server.flush(timeoutSeconds, TimeUnit.SECONDS);
            CacheStats s = cache.stats();
            out.printf("server: answered %,d datagrams with %d return-path AH(s) created (hits %,d)%n", served,
                    s.hardwareCreates(), s.hits());
            out.flush();
        }
        return 0;
    }

    private long serveLoop(UdEndpoint server, long limit) {
        long served = 0;
        while (served < limit) {
            Datagram d = server.receive(timeoutSeconds, TimeUnit.SECONDS);
            if (d == null) {
                throw new IllegalStateException("server: no datagram in " + timeoutSeconds + " s");
            }
            served++;
            if (d.payload()[0] == BYE) {
                break;
            }
            server.reply(d, ByteBuffer.wrap(d.payload()));
        }
        return served;
    }

    private void announce(PrintWriter out, UdEndpoint server) throws Exception {
        String text = server.address().toText();
        out.println("server address: " + text);
        out.flush();
        if (addressFile != null) {
            Path tmp = addressFile.resolveSibling(addressFile.getFileName() + ".tmp");
            Files.writeString(tmp, text + "\n", StandardCharsets.US_ASCII);
            Files.move(tmp, addressFile, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        }
    }

    private int client(PrintWriter out, ProtectionDomain pd, AddressHandleCache cache, UdEndpoint.Options options,
                       EndpointAddress server) {
        try (UdEndpoint client = UdEndpoint.open(pd, cache, options)) {
            if (size > client.maxMessageSize()) {
                throw new IllegalArgumentException("size: " + size + " bytes; valid 1.." + client.maxMessageSize()
                        + " (the path MTU)");
            }
            return runClient(out, client, cache, server);
        }
    }

    private int runClient(PrintWriter out, UdEndpoint client, AddressHandleCache cache, EndpointAddress server) {
        long[] rtt = new long[iterations];
        ByteBuffer message = ByteBuffer.allocate(size);
        long start;
        try (AddressHandle ah = cache.acquire(client.pd(),
                AddressHandleAttributes.builder().dgid(server.gid()).sgidIndex(sgidIndex).build())) {
            start = System.nanoTime();
            for (int i = 0; i < iterations; i++) {
                fill(message, i);
                long t0 = System.nanoTime();
                client.send(ah, server, message.duplicate());
                Datagram echo = client.receive(timeoutSeconds, TimeUnit.SECONDS);
                rtt[i] = System.nanoTime() - t0;
                if (echo == null) {
                    throw new IllegalStateException("client: no echo of message " + i + " in " + timeoutSeconds + " s");
                }
                if (!Arrays.equals(echo.payload(), message.array())) {
                    throw new IllegalStateException("client: echo of message " + i + " differs from what was sent");
                }
            }
            long elapsed = System.nanoTime() - start;
            client.send(ah, server, ByteBuffer.wrap(new byte[] {BYE}));
            client.flush(timeoutSeconds, TimeUnit.SECONDS);
            report(out, rtt, elapsed, client);
        }
        return 0;
    }

    private void fill(ByteBuffer message, int iteration) {
        byte[] a = message.array();
        for (int j = 0; j < a.length; j++) {
            a[j] = (byte) (iteration * 13 + j);
        }
        a[0] = 0; // never BYE
    }

    private void report(PrintWriter out, long[] rtt, long elapsedNanos, UdEndpoint client) {
        long[] sorted = rtt.clone();
        Arrays.sort(sorted);
        double seconds = elapsedNanos / 1e9;
        out.printf("%,d round trips of %d bytes in %.3f s, every payload verified (%s)%n", iterations, size, seconds,
                client.pd().device().name());
        out.printf("round trip: p50 %.1f µs, p99 %.1f µs, max %.1f µs%n", sorted[sorted.length / 2] / 1e3,
                sorted[(int) (sorted.length * 0.99)] / 1e3, sorted[sorted.length - 1] / 1e3);
        out.printf("throughput: %,.0f round trips/s, %.2f MB/s of payload each way%n", iterations / seconds,
                (double) iterations * size / seconds / 1e6);
        out.flush();
    }

    private int loopback(PrintWriter out, ProtectionDomain pd, AddressHandleCache cache, UdEndpoint.Options options)
            throws Exception {
        try (UdEndpoint server = UdEndpoint.open(pd, cache, options);
             UdEndpoint client = UdEndpoint.open(pd, cache, options)) {
            if (size > client.maxMessageSize()) {
                throw new IllegalArgumentException("size: " + size + " bytes; valid 1.." + client.maxMessageSize()
                        + " (the path MTU)");
            }
            out.printf("loopback on %s: server %s, client %s%n", pd.device().name(), server.address(), client.address());
            AtomicReference<Throwable> serverFailure = new AtomicReference<>();
            Thread serving = new Thread(() -> {
                try {
                    serveLoop(server, Long.MAX_VALUE);
                    server.flush(timeoutSeconds, TimeUnit.SECONDS);
                } catch (Throwable t) {
                    serverFailure.set(t);
                }
            }, "pingpong-server");
            serving.start();
            int result = runClient(out, client, cache, server.address());
            serving.join(TimeUnit.SECONDS.toMillis(timeoutSeconds + 5));
            if (serverFailure.get() != null) {
                throw new IllegalStateException("server side failed", serverFailure.get());
            }
            CacheStats s = cache.stats();
            out.printf("AHs: %d hardware AH(s) for %,d look-ups (client's forward AH and the server's return path)%n",
                    s.hardwareCreates(), s.requests());
            return result;
        }
    }

    /** {@code ud} or {@code srd}, any case; anything else is refused naming the valid values. */
    static org.efaah.verbs.QueuePairType transport(String name) {
        return switch (name.toLowerCase(java.util.Locale.ROOT)) {
            case "ud" -> org.efaah.verbs.QueuePairType.UD;
            case "srd" -> org.efaah.verbs.QueuePairType.SRD;
            default -> throw new IllegalArgumentException("--transport: " + name + "; valid ud, srd");
        };
    }
}
