package org.efaah.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import java.util.List;
import java.util.function.Supplier;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.fixture.LogCapture;
import org.efaah.roce.RoceNetwork;
import org.efaah.ud.UdEndpoint;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.efaah.verbs.spi.CreatedAh;
import org.efaah.verbs.spi.VerbsProvider;
import org.junit.jupiter.api.Test;

/**
 * A provider written against the SPI's core alone (docs/api.md, "Packages"): it compiles with
 * every facet left to its default, each facet answers VerbsException EOPNOTSUPP and nothing else,
 * a device opens on it without a warning, and its AHs are cached.
 */
class CoreOnlyProviderTest {

    /** Only the core's abstract methods, over the mock. */
    static class CoreOnly implements VerbsProvider {
        final MockVerbsProvider mock = new MockVerbsProvider();

        @Override public String name() { return "core-only"; }
        @Override public List<String> deviceNames() { return mock.deviceNames(); }
        @Override public long openDevice(String name) { return mock.openDevice(name); }
        @Override public void closeDevice(long context) { mock.closeDevice(context); }
        @Override public DeviceAttributes queryDevice(long context) { return mock.queryDevice(context); }
        @Override public PortAttributes queryPort(long context, int portNum) { return mock.queryPort(context, portNum); }
        @Override public Gid queryGid(long context, int portNum, int index) { return mock.queryGid(context, portNum, index); }
        @Override public long allocatePd(long context) { return mock.allocatePd(context); }
        @Override public void deallocatePd(long pd) { mock.deallocatePd(pd); }
        @Override public CreatedAh createAh(long pd, AddressHandleAttributes a) { return mock.createAh(pd, a); }
        @Override public void destroyAh(long ah) { mock.destroyAh(ah); }
        @Override public void close() { mock.close(); }
    }

    @Test
    void everyFacetOfACoreOnlyProviderAnswersEopnotsupp() {
        CoreOnly p = new CoreOnly();
        List<Supplier<Object>> facets = List.of(p::datagrams, p::completionChannels, p::asyncEvents,
                p::networkChanges, p::efa, () -> p.queryGidType(0, 1, 0));
        for (Supplier<Object> facet : facets) {
            VerbsException e = assertThrows(VerbsException.class, facet::get);
            assertEquals(Errno.EOPNOTSUPP, e.errno());
            assertTrue(e.getMessage().contains("core-only provider"), e.getMessage());
        }
    }

    @Test
    void aDeviceOnACoreOnlyProviderOpensQuietlyAndCachesAhs() {
        CoreOnly p = new CoreOnly();
        try (LogCapture log = LogCapture.of(Device.class, DeviceEventReader.class, RoceNetwork.class,
                AddressHandleCache.class);
             Device d = Device.openFirst(p); ProtectionDomain pd = d.allocatePd();
             AddressHandleCache cache = AddressHandleCache.create()) {
            try (AddressHandle a = cache.acquire(pd, AddressHandleAttributes.forGid("fe80::1"));
                 AddressHandle b = cache.acquire(pd, AddressHandleAttributes.forGid("fe80::1"))) {
                assertEquals(a.ahn(), b.ahn());
                assertEquals(1, p.mock.counters().liveAhs());
            }
            VerbsException e = assertThrows(VerbsException.class,
                    () -> UdEndpoint.open(pd, cache, UdEndpoint.Options.defaults()));
            assertEquals(Errno.EOPNOTSUPP, e.errno());
            assertEquals(List.of(), log.messages(Level.WARN));
        }
    }
}
