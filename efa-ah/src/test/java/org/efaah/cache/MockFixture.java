package org.efaah.cache;

import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.mock.DuplicatePolicy;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;

/** A mock device, a PD and a cache, closed in the right order; checked after the test by {@link CacheInvariants}. */
final class MockFixture implements AutoCloseable {
    final MockVerbsProvider mock;
    final Device device;
    final ProtectionDomain pd;
    final AddressHandleCache cache;

    MockFixture() {
        this(strictDevice().build());
    }

    /**
     * The device the cache's tests run on: strict, so that a duplicate (PD, GID) create the cache
     * should never make fails loudly, where the default device (the kernel's AH cache) would answer it.
     */
    static MockConfig.Builder strictDevice() {
        return MockConfig.builder().duplicatePolicy(DuplicatePolicy.STRICT);
    }

    MockFixture(MockConfig config) {
        this(config, LeakDetection.PARANOID);
    }

    MockFixture(MockConfig config, LeakDetection leakDetection) {
        mock = new MockVerbsProvider(config);
        device = Device.openFirst(mock);
        pd = device.allocatePd();
        cache = AddressHandleCache.builder().leakDetection(leakDetection).build();
        CacheInvariants.track(cache, mock);
    }

    static AddressHandleAttributes peer(int n) {
        return AddressHandleAttributes.forGid("fe80::" + Integer.toHexString(n));
    }

    @Override
    public void close() {
        cache.close();
        pd.close();
        device.close();
    }
}
