package org.efaah.ud;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.verbs.Device;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.QueuePairType;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;

/**
 * Endpoints on the mock devices ({@code efa_0..efa_N-1}, or RoCE's) of one provider, sharing one cache;
 * {@link #close()} closes them in the order that releases everything and checks that no AH is left.
 */
final class MockEndpoints implements AutoCloseable {
    final MockVerbsProvider mock;
    /** The endpoint options of an SRD endpoint, the rest as defaults. */
    static UdEndpoint.Options srd() {
        return UdEndpoint.Options.defaults().withTransport(QueuePairType.SRD);
    }

    final AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.PARANOID).build();
    private final List<UdEndpoint> endpoints = new ArrayList<>();
    private final List<AutoCloseable> parents = new ArrayList<>();

    MockEndpoints(int devices) {
        this(MockConfig.builder().deviceCount(devices).build());
    }

    MockEndpoints(MockConfig config) {
        mock = new MockVerbsProvider(config);
    }

    /** A PD on its own open of device {@code efa_<device>} (or {@code roce_<device>} on a RoCE mock). */
    ProtectionDomain pd(int device) {
        Device d = Device.open(mock, mock.deviceNames().get(device));
        ProtectionDomain pd = d.allocatePd();
        parents.add(0, d);
        parents.add(0, pd);
        return pd;
    }

    UdEndpoint endpoint(ProtectionDomain pd, UdEndpoint.Options options) {
        UdEndpoint e = UdEndpoint.open(pd, cache, options);
        endpoints.add(e);
        return e;
    }

    /** Endpoints first (they hold AH references for sends in flight), then the cache, then PDs and devices. */
    @Override
    public void close() throws Exception {
        endpoints.forEach(UdEndpoint::close);
        cache.close();
        for (AutoCloseable c : parents) {
            c.close();
        }
        assertEquals(0, mock.counters().liveAhs());
    }
}
