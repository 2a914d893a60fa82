package org.efaah.internal;

import java.time.Duration;
import java.util.function.Consumer;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.cache.RetentionPolicy;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.Gid;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;

/**
 * What an application does with the library, run by {@link ThreadLifetimeTest} from its own
 * class loader: a device, a PD and a cache that starts every thread the library has (the
 * device's event reader, the reaper, on RoCE the network reader; every handle tracked for
 * leaks), some acquires, one handle leaked, then everything closed.
 */
public final class IsolatedScenario implements Consumer<Boolean> {
    private static final Gid PEER = Gid.parse("::ffff:10.9.1.250");

    @Override
    public void accept(Boolean efa) {
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().efa(efa).build());
        if (!efa) {
            mock.network().setNeighbour(0, PEER, "02:00:0a:09:01:fa");
        }
        try (Device device = Device.openFirst(mock);
             ProtectionDomain pd = device.allocatePd();
             AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.PARANOID)
                     .retention(RetentionPolicy.idle(Duration.ofHours(1), 64)).build()) {
            AddressHandleAttributes peer = efa ? AddressHandleAttributes.forGid(PEER)
                    : AddressHandleAttributes.builder().dgid(PEER).sgidIndex(0).build();
            for (int i = 0; i < 3; i++) {
                try (AddressHandle h = cache.acquire(pd, peer)) {
                    h.hardware();
                }
            }
            leak(cache, pd, peer); // reported at the close, with its acquire site naming this class
            cache.inspection().health();
            cache.inspection().entries(e -> true, 10);
        }
    }

    private static void leak(AddressHandleCache cache, ProtectionDomain pd, AddressHandleAttributes peer) {
        if (cache.acquire(pd, peer).isClosed()) {
            throw new AssertionError("a new handle is open");
        }
    }
}
