package org.efaah.ud;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.verbs.Device;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.spi.VerbsProvider;

/**
 * SRD endpoints, each on its own open of one of a provider's devices (the mock's EFA devices, or a
 * wrapper of them that counts or refuses calls), sharing one cache that detects every leak;
 * {@link #close()} closes the endpoints, PDs and devices in reverse order of opening, then the cache.
 */
final class SrdEndpointFixture implements AutoCloseable {
    final AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.PARANOID).build();
    private final VerbsProvider provider;
    private final List<AutoCloseable> opened = new ArrayList<>();

    SrdEndpointFixture(VerbsProvider provider) {
        this.provider = provider;
    }

    UdEndpoint endpoint(int device, int sendDepth, int receiveDepth) {
        Device d = Device.open(provider, provider.deviceNames().get(device));
        ProtectionDomain pd = d.allocatePd();
        UdEndpoint e = UdEndpoint.open(pd, cache, MockEndpoints.srd().withDepths(sendDepth, receiveDepth));
        opened.add(0, d);
        opened.add(0, pd);
        opened.add(0, e);
        return e;
    }

    /** {@code count} 2-byte payloads: the tag, then the index. */
    static ByteBuffer[] payloads(char tag, int count) {
        ByteBuffer[] p = new ByteBuffer[count];
        for (int i = 0; i < count; i++) {
            p[i] = ByteBuffer.wrap(new byte[] {(byte) tag, (byte) i});
        }
        return p;
    }

    /** Sends {@code count} X that take that many of {@code b}'s receives, and waits for their completions. */
    static void fill(UdEndpoint a, AddressHandle toB, UdEndpoint b, int count) {
        a.sendBatch(toB, b.address(), payloads('X', count), 0, count);
        assertTrue(a.flush(5, TimeUnit.SECONDS), "the X completed");
    }

    @Override
    public void close() throws Exception {
        for (AutoCloseable c : opened) {
            c.close();
        }
        cache.close();
    }
}
