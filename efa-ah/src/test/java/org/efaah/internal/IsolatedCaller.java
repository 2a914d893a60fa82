package org.efaah.internal;

import java.time.Duration;
import java.util.List;
import java.util.function.Function;
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
 * An application of its own class loader using the library of the test's loader, run by
 * {@link ThreadLifetimeTest}: on the stack (its protection domain in the access control context
 * a new thread inherits), with an inheritable thread local holding one of its objects, while
 * it opens what starts the library's threads; returns what it opened, still open, in the order to close it.
 */
public final class IsolatedCaller implements Function<Boolean, List<AutoCloseable>> {
    private static final InheritableThreadLocal<Object> MINE = new InheritableThreadLocal<>();
    private static final Gid PEER = Gid.parse("::ffff:10.9.1.250");

    @Override
    public List<AutoCloseable> apply(Boolean efa) {
        MINE.set(this);
        try {
            MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().efa(efa).build());
            if (!efa) {
                mock.network().setNeighbour(0, PEER, "02:00:0a:09:01:fa");
            }
            Device device = Device.openFirst(mock);
            ProtectionDomain pd = device.allocatePd();
            AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.PARANOID)
                    .retention(RetentionPolicy.idle(Duration.ofHours(1), 64)).build();
            AddressHandleAttributes peer = efa ? AddressHandleAttributes.forGid(PEER)
                    : AddressHandleAttributes.builder().dgid(PEER).sgidIndex(0).build();
            try (AddressHandle h = cache.acquire(pd, peer)) {
                h.hardware();
            }
            return List.of(cache, pd, device); // the library's objects, none of this loader's
        } finally {
            MINE.remove();
        }
    }
}
