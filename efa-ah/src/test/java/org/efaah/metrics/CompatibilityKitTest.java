package org.efaah.metrics;

import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.cache.CacheMeterBinder;
import io.micrometer.core.instrument.binder.cache.CacheMeterBinderCompatibilityKit;
import java.util.ArrayList;
import java.util.List;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.Gid;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.AfterEach;

/**
 * Micrometer's own checks of a cache binder (micrometer-test's kit) on the AH cache: a put is an
 * acquire that keeps its handle (so the entry stays), a get an acquire and close; keys map to GIDs.
 */
class CompatibilityKitTest extends CacheMeterBinderCompatibilityKit<AddressHandleCache> {
    private final Device device = Device.openFirst(new MockVerbsProvider());
    private final ProtectionDomain pd = device.allocatePd();
    private final List<AddressHandle> held = new ArrayList<>();

    @Override
    public AddressHandleCache createCache() {
        return AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED).build();
    }

    @Override
    public CacheMeterBinder<AddressHandleCache> binder() {
        return new AddressHandleCacheMetrics(cache, "mycache", Tags.empty());
    }

    private static AddressHandleAttributes attributes(String key) {
        return AddressHandleAttributes.forGid(Gid.of(0xfd00L << 48, key.hashCode() & 0xffffffffL));
    }

    @Override
    public void put(String key, String value) {
        held.add(cache.acquire(pd, attributes(key)));
    }

    @Override
    public String get(String key) {
        try (AddressHandle ah = cache.acquire(pd, attributes(key))) {
            return key;
        }
    }

    @Override
    public void dereferenceCache() {
        // The cache is reachable from the device's event listener list until it closes.
        held.forEach(AddressHandle::close);
        held.clear();
        cache.close();
        super.dereferenceCache();
    }

    @AfterEach
    void tearDown() {
        held.forEach(AddressHandle::close);
        if (cache != null) {
            cache.close();
        }
        pd.close();
        device.close();
    }
}
