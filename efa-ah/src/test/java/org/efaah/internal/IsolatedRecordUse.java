package org.efaah.internal;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.RetentionPolicy;
import org.efaah.health.HealthThresholds;
import org.efaah.ud.EndpointAddress;
import org.efaah.ud.UdEndpoint;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.Gid;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;

/**
 * A caller's use of the library's values, run by {@link RecordLoaderTest} from the library's own
 * class loader: for one kind of value, two instances made apart (equal, or two snapshots of one
 * thing), each compared, hashed, printed and used as a {@link HashMap} key, as an application keeps
 * peers, options or reports; then everything closed and dropped.
 */
public final class IsolatedRecordUse implements Consumer<String> {
    private static final Gid PEER = Gid.parse("fe80::1:2");

    /**
     * The kinds {@link #accept} knows whose use keeps no loader: the cache's keys (classes, not records)
     * and the records whose equals, hashCode and toString are written out.
     */
    public static final List<String> KINDS = List.of("Gid", "AddressHandleAttributes", "EndpointAddress",
            "HealthThresholds", "RetentionPolicy", "UdEndpoint.Options", "UdEndpoint.Counters", "CacheStats",
            "HealthReport", "DeviceAttributes", "PortAttributes", "MockConfig", "MockCounters", "AddressHandleEntry");

    /*
     * Every record of the library pinned the loader (found 2026-12-07, issue 34): on JDK 17.0.15
     * strongly, on 25.0.3 through a SoftReference (MethodHandle.asTypeSoftCache), which System.gc()
     * does not clear. ObjectMethods' equals caches OBJECT_EQ.asType((Record, Object)boolean); its
     * hashCode and toString cache OBJECTS_HASHCODE / OBJECTS_TOSTRING .asType for a component of a
     * library type. Their equals, hashCode and toString are now written out; NoObjectMethodsTest
     * keeps any class of the library from linking through ObjectMethods again.
     */

    @Override
    public void accept(String kind) {
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.defaults());
        try (Device device = Device.openFirst(mock);
             ProtectionDomain pd = device.allocatePd();
             AddressHandleCache cache = AddressHandleCache.builder()
                     .retention(RetentionPolicy.idle(Duration.ofHours(1), 64)).build()) {
            // The cache hashes its key (the GID on EFA) on every acquire.
            try (AddressHandle h = cache.acquire(pd, AddressHandleAttributes.forGid(PEER))) {
                h.hardware();
            }
            try (UdEndpoint endpoint = UdEndpoint.open(pd, cache, UdEndpoint.Options.defaults())) {
                use(switch (kind) {
                    case "Gid" -> () -> Gid.parse("fe80::1:2");
                    case "AddressHandleAttributes" -> () -> AddressHandleAttributes.forGid(PEER);
                    case "EndpointAddress" -> () -> new EndpointAddress(PEER, endpoint.address().qpn(), 0x11111111L);
                    case "UdEndpoint.Options" -> () -> UdEndpoint.Options.defaults().withDepths(16, 32);
                    case "UdEndpoint.Counters" -> endpoint::counters;
                    case "CacheStats" -> cache::stats;
                    case "HealthReport" -> () -> cache.inspection().health();
                    case "HealthThresholds" -> () -> new HealthThresholds(0.5, 0.5, Duration.ofSeconds(5),
                            Duration.ofSeconds(7));
                    case "RetentionPolicy" -> () -> RetentionPolicy.idle(Duration.ofSeconds(3), 9);
                    case "DeviceAttributes" -> device::attributes;
                    case "PortAttributes" -> () -> device.port(1);
                    case "MockConfig" -> () -> MockConfig.builder().maxAh(7).build();
                    case "MockCounters" -> mock::counters;
                    case "AddressHandleEntry" -> () -> cache.inspection().entries(e -> true, 1).get(0);
                    default -> throw new IllegalArgumentException(kind);
                });
            }
        }
    }

    private static void use(Supplier<?> make) {
        Object a = make.get();
        Object b = make.get(); // equal to a, or a later snapshot of the same thing
        Map<Object, Object> byValue = new HashMap<>();
        byValue.put(a, a.toString());
        byValue.put(b, b.toString());
        if (!a.equals(a) || a.equals(null) || a.equals("other") || byValue.get(a) == null
                || a.equals(b) != b.equals(a) || a.equals(b) && a.hashCode() != b.hashCode()) {
            throw new AssertionError("equals and hashCode disagree for " + a + " and " + b);
        }
    }
}
