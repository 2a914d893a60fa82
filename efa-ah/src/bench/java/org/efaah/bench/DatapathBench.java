package org.efaah.bench;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.ud.Datagram;
import org.efaah.ud.DatagramView;
import org.efaah.ud.UdEndpoint;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.LoopbackVerbsProvider;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.spi.VerbsProvider;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * The datagram path (issue 21): one UD send from one endpoint and its receive at another, per
 * operation, on one thread; the provider delivers at post, so the receive finds the datagram at its
 * first poll. Time and allocation (with {@code -prof gc}) per datagram. The sender's completions
 * are reaped as its slots run out.
 *
 * <ul>
 * <li>{@code sendReceive*}: on the EFA mock, received as a {@link Datagram} (a copy): the
 * endpoint's work and the mock's, which allocates per datagram itself (its completion records,
 * boxed handles in its maps, a copy of each payload).</li>
 * <li>{@code sendHandle*}: the same, received through a handler of {@link DatagramView}s (no copy).</li>
 * <li>{@code loopback*}: on {@link LoopbackVerbsProvider}, whose datapath allocates nothing: the
 * endpoint's share alone, the figure of the zero-allocation target.</li>
 * </ul>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class DatapathBench {
    /** Payloads per {@code sendBatch}: the stream's batch. */
    static final int BATCH = 64;

    /** Two endpoints on two devices of one provider, and the client's AH to the server. */
    abstract static class Path {
        private Device d0;
        private Device d1;
        private ProtectionDomain pd0;
        private ProtectionDomain pd1;
        private AddressHandleCache cache;
        UdEndpoint server;
        UdEndpoint client;
        AddressHandle toServer;
        final ByteBuffer small = ByteBuffer.allocate(64);
        final ByteBuffer large = ByteBuffer.allocate(1024);
        /** A stream's batch: 64 payloads of 64 B, sent in one {@code sendBatch}. */
        final ByteBuffer[] batch = new ByteBuffer[BATCH];
        /** Sums what the handler read, so that nothing is optimised away. */
        long seen;
        final Consumer<DatagramView> handler = this::take;

        private void take(DatagramView d) {
            seen += d.length() + d.payload().get(0) + d.sourceQpn();
        }

        void open(VerbsProvider provider, String name0, String name1) {
            for (int i = 0; i < batch.length; i++) {
                batch[i] = ByteBuffer.allocate(64);
            }
            d0 = Device.open(provider, name0);
            d1 = Device.open(provider, name1);
            pd0 = d0.allocatePd();
            pd1 = d1.allocatePd();
            cache = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED).build();
            server = UdEndpoint.open(pd0, cache, UdEndpoint.Options.defaults());
            client = UdEndpoint.open(pd1, cache, UdEndpoint.Options.defaults());
            toServer = cache.acquire(pd1, AddressHandleAttributes.forGid(server.address().gid()));
        }

        @TearDown
        public void tearDown() {
            client.flush(5, TimeUnit.SECONDS);
            toServer.close();
            client.close();
            server.close();
            cache.close();
            pd0.close();
            pd1.close();
            d0.close();
            d1.close();
        }

        Datagram sendReceive(ByteBuffer payload) {
            client.send(toServer, server.address(), payload.clear());
            Datagram d = server.receive(1, TimeUnit.SECONDS);
            if (d == null) {
                throw new IllegalStateException("the provider lost a datagram");
            }
            return d;
        }

        /** One batch sent and every datagram of it handled: per operation, {@value #BATCH} datagrams. */
        long sendBatchHandle() {
            for (ByteBuffer p : batch) {
                p.clear();
            }
            client.sendBatch(toServer, server.address(), batch, 0, batch.length);
            for (int got = 0; got < batch.length; ) {
                int n = server.receive(handler, batch.length, 1, TimeUnit.SECONDS);
                if (n == 0) {
                    throw new IllegalStateException("the provider lost a datagram");
                }
                got += n;
            }
            return seen;
        }

        long sendHandle(ByteBuffer payload) {
            client.send(toServer, server.address(), payload.clear());
            if (server.receive(handler, 16, 1, TimeUnit.SECONDS) != 1) {
                throw new IllegalStateException("the provider lost a datagram");
            }
            return seen;
        }
    }

    /** On the EFA mock. */
    @State(Scope.Benchmark)
    public static class Mock extends Path {
        @Setup
        public void setUp() {
            open(new MockVerbsProvider(MockConfig.builder().deviceCount(2).createLatencyNanos(0).build()),
                    "efa_0", "efa_1");
        }
    }

    /** On the loopback provider (the RoCE-model mock for all but the datapath). */
    @State(Scope.Benchmark)
    public static class Loopback extends Path {
        @Setup
        public void setUp() {
            open(new LoopbackVerbsProvider(new MockVerbsProvider(MockConfig.builder().deviceCount(2).efa(false)
                    .createLatencyNanos(0).build())), "roce_0", "roce_1");
        }
    }

    /** @return the datagram, so that it is not optimised away */
    @Benchmark
    public Datagram sendReceive64(Mock path) {
        return path.sendReceive(path.small);
    }

    /** @return the datagram, so that it is not optimised away */
    @Benchmark
    public Datagram sendReceive1024(Mock path) {
        return path.sendReceive(path.large);
    }

    /** @return what the handler read */
    @Benchmark
    public long sendHandle64(Mock path) {
        return path.sendHandle(path.small);
    }

    /** @return the datagram, so that it is not optimised away */
    @Benchmark
    public Datagram loopbackSendReceive64(Loopback path) {
        return path.sendReceive(path.small);
    }

    /** @return what the handler read */
    @Benchmark
    public long loopbackSendHandle64(Loopback path) {
        return path.sendHandle(path.small);
    }

    /**
     * A batch of {@value #BATCH} datagrams of 64 B sent with {@code sendBatch} and handled, the
     * stream's shape; per operation, so divide by {@value #BATCH} for a datagram.
     *
     * @return what the handler read
     */
    @Benchmark
    public long loopbackSendBatchHandle64(Loopback path) {
        return path.sendBatchHandle();
    }

    /** @return what the handler read */
    @Benchmark
    public long loopbackSendHandle1024(Loopback path) {
        return path.sendHandle(path.large);
    }
}
