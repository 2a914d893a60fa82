package org.efaah.bench;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.ud.Datagram;
import org.efaah.ud.UdEndpoint;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.ProtectionDomain;
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
 * The datagram path on the mock (issue 21): one UD send from one endpoint and its receive at
 * another, per operation, on one thread; the mock delivers at post, so the receive finds the
 * datagram at its first poll. Time and allocation (with {@code -prof gc}) per datagram: the
 * endpoint's work and the mock's, not a device's. The sender's completions are reaped as its
 * slots run out.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class DatapathBench {
    private Device d0;
    private Device d1;
    private ProtectionDomain pd0;
    private ProtectionDomain pd1;
    private AddressHandleCache cache;
    private UdEndpoint server;
    private UdEndpoint client;
    private AddressHandle toServer;
    private final ByteBuffer small = ByteBuffer.allocate(64);
    private final ByteBuffer large = ByteBuffer.allocate(1024);

    @Setup
    public void setUp() {
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().deviceCount(2).createLatencyNanos(0).build());
        d0 = Device.open(mock, "efa_0");
        d1 = Device.open(mock, "efa_1");
        pd0 = d0.allocatePd();
        pd1 = d1.allocatePd();
        cache = AddressHandleCache.create(LeakDetection.DISABLED);
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

    private Datagram sendReceive(ByteBuffer payload) {
        client.send(toServer, server.address(), payload.clear());
        Datagram d = server.receive(1, TimeUnit.SECONDS);
        if (d == null) {
            throw new IllegalStateException("the mock lost a datagram");
        }
        return d;
    }

    /** @return the datagram, so that it is not optimised away */
    @Benchmark
    public Datagram sendReceive64() {
        return sendReceive(small);
    }

    /** @return the datagram, so that it is not optimised away */
    @Benchmark
    public Datagram sendReceive1024() {
        return sendReceive(large);
    }
}
