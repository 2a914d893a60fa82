package org.efaah.verbs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.fixture.LogCapture;
import org.efaah.health.HealthCheck;
import org.efaah.health.HealthReport;
import org.efaah.health.HealthStatus;
import org.efaah.health.HealthThresholds;
import org.efaah.roce.RoceNetwork;
import org.efaah.ud.Datagram;
import org.efaah.ud.UdEndpoint;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.efaah.verbs.spi.AsyncEventVerbs;
import org.efaah.verbs.spi.CompletionChannelVerbs;
import org.efaah.verbs.spi.CreatedAh;
import org.efaah.verbs.spi.DatagramVerbs;
import org.efaah.verbs.spi.EfaVerbs;
import org.efaah.verbs.spi.NetworkVerbs;
import org.efaah.verbs.spi.VerbsProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A provider written against the SPI's core alone (docs/api.md, "Packages"), or the core and some
 * facets: it compiles with every facet left to its default, each facet answers VerbsException
 * EOPNOTSUPP and nothing else, and on every device kind the mock models (EFA, RoCE) a device opens
 * on it without a warning, its AHs are cached, inspected and reported healthy or not, the health
 * saying what a missing facet costs (no event reader; on RoCE AHs that follow no network change),
 * a RoceNetwork subscription hears nothing and says so, and with the datagram path alone an
 * endpoint sends and receives. Issue 33, section 7: on RoCE the cache's acquire threw
 * "rtnetlink failed: EOPNOTSUPP (95)".
 */
class CoreOnlyProviderTest {

    /** The device kinds of the mock. InfiniBand it does not model. */
    enum Kind {
        EFA, ROCE;

        MockConfig config() {
            return this == EFA ? MockConfig.builder().build()
                    : MockConfig.builder().efa(false).gidTableLength(3)
                            .gids(List.of(Gid.parse("fe80::1"), Gid.parse("::ffff:10.0.0.1"), Gid.parse("2001:db8:1::1")))
                            .gidTypes(List.of(GidType.ROCE_V2, GidType.ROCE_V2, GidType.ROCE_V2)).build();
        }

        /** A peer; on RoCE with the sgid_index of the global GID given, which a core without GID types needs. */
        AddressHandleAttributes peer() {
            return this == EFA ? AddressHandleAttributes.forGid("fe80::efa:0:0:99")
                    : AddressHandleAttributes.forGid("2001:db8:7::99").withSgidIndex(2);
        }
    }

    /**
     * The mock behind the core's abstract methods only, plus the facets in {@code offered} (and
     * {@code ibv_query_gid_ex}'s GID types when {@code gidTypes}); every other accessor keeps its default.
     */
    static class Partial implements VerbsProvider {
        final MockVerbsProvider mock;
        final Set<Class<?>> offered;
        final boolean gidTypes;

        Partial(Kind kind, Set<Class<?>> offered, boolean gidTypes) {
            this.mock = new MockVerbsProvider(kind.config());
            this.offered = offered;
            this.gidTypes = gidTypes;
        }

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

        @Override
        public GidType queryGidType(long context, int portNum, int index) {
            return gidTypes ? mock.queryGidType(context, portNum, index) : VerbsProvider.super.queryGidType(context,
                    portNum, index);
        }

        @Override
        public DatagramVerbs datagrams() {
            return offered.contains(DatagramVerbs.class) ? mock.datagrams() : VerbsProvider.super.datagrams();
        }

        @Override
        public CompletionChannelVerbs completionChannels() {
            return offered.contains(CompletionChannelVerbs.class) ? mock.completionChannels()
                    : VerbsProvider.super.completionChannels();
        }

        @Override
        public AsyncEventVerbs asyncEvents() {
            return offered.contains(AsyncEventVerbs.class) ? mock.asyncEvents() : VerbsProvider.super.asyncEvents();
        }

        @Override
        public NetworkVerbs networkChanges() {
            return offered.contains(NetworkVerbs.class) ? mock.networkChanges() : VerbsProvider.super.networkChanges();
        }

        @Override
        public EfaVerbs efa() {
            return offered.contains(EfaVerbs.class) ? mock.efa() : VerbsProvider.super.efa();
        }
    }

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

    private static Optional<HealthCheck> check(HealthReport report, String name) {
        return report.checks().stream().filter(c -> c.name().equals(name)).findFirst();
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

    @ParameterizedTest
    @EnumSource(Kind.class)
    void aCoreOnlyProviderServesAhCachesQuietlyAndItsHealthSaysWhatItLacks(Kind kind) {
        Partial p = new Partial(kind, Set.of(), false);
        try (LogCapture log = LogCapture.of(Device.class, DeviceEventReader.class, RoceNetwork.class,
                AddressHandleCache.class);
             Device d = Device.openFirst(p); ProtectionDomain pd = d.allocatePd();
             AddressHandleCache cache = AddressHandleCache.create()) {
            List<DeviceEvent> events = new CopyOnWriteArrayList<>();
            d.addEventListener(events::add);
            try (AddressHandle a = cache.acquire(pd, kind.peer());
                 AddressHandle b = cache.acquire(pd, kind.peer())) {
                assertEquals(a.nativeHandle(), b.nativeHandle());
                assertEquals(1, p.mock.counters().liveAhs());
                assertEquals(1, cache.inspection().liveEntries());
                assertEquals(1, cache.inspection().entries(e -> true, 10).size());
                if (kind == Kind.ROCE) {
                    // The core cannot tell GID types: no sgid_index can be chosen, and the message says to give one.
                    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                            () -> cache.acquire(pd, AddressHandleAttributes.forGid("2001:db8:7::99")));
                    assertTrue(e.getMessage().startsWith("sgid_index: not given") && e.getMessage().contains(
                            "cannot tell GID types") && !e.getMessage().contains("\n"), e.getMessage());
                }
            }

            HealthReport health = cache.inspection().health();
            HealthCheck events0 = check(health, "event_reader").orElseThrow(() -> new AssertionError(health.toString()));
            assertEquals(HealthStatus.DEGRADED, events0.status());
            assertTrue(events0.message().startsWith("no asynchronous events are read (") && events0.message()
                    .contains("the core-only provider has no asynchronous events"), events0.message());
            assertEquals(events0, check(d.health(HealthThresholds.DEFAULTS), "event_reader").orElseThrow());
            Optional<HealthCheck> network = check(health, "network_reader");
            if (kind == Kind.ROCE) {
                assertEquals(HealthStatus.DEGRADED, network.orElseThrow(() -> new AssertionError(health.toString()))
                        .status());
                assertTrue(network.get().message().contains("AHs follow no neighbour or link change")
                        && network.get().message().contains("the core-only provider has no network changes"),
                        network.get().message());
            } else {
                assertEquals(Optional.empty(), network, "EFA follows no network");
            }

            try (RoceNetwork.Subscription s = RoceNetwork.subscribe(d, e -> { })) {
                assertEquals(kind == Kind.ROCE ? network : Optional.empty(), s.health());
                s.close();
                assertEquals(Optional.empty(), s.health(), "ended");
            }

            VerbsException e = assertThrows(VerbsException.class,
                    () -> UdEndpoint.open(pd, cache, UdEndpoint.Options.defaults()));
            assertEquals(Errno.EOPNOTSUPP, e.errno());
            assertEquals(List.of(), events, "no event reader, no event");
            assertEquals(List.of(), log.messages(Level.WARN));
        }
    }

    /** With ibv_query_gid_ex's types, the core alone chooses sgid_index on RoCE as the full provider does. */
    @ParameterizedTest
    @EnumSource(Kind.class)
    void aCoreWithGidTypesChoosesTheSourceGidItself(Kind kind) {
        Partial p = new Partial(kind, Set.of(), true);
        try (LogCapture log = LogCapture.of(Device.class, DeviceEventReader.class, RoceNetwork.class,
                AddressHandleCache.class);
             Device d = Device.openFirst(p); ProtectionDomain pd = d.allocatePd();
             AddressHandleCache cache = AddressHandleCache.create();
             AddressHandle a = cache.acquire(pd, AddressHandleAttributes.forGid(
                     kind == Kind.EFA ? "fe80::efa:0:0:99" : "2001:db8:7::99"))) {
            assertEquals(kind == Kind.EFA ? 0 : 2, a.hardware().attributes().sgidIndex());
            assertEquals(List.of(), log.messages(Level.WARN));
        }
    }

    static Stream<Arguments> everyKindAndSetOfFacets() {
        List<Class<?>> all = List.of(DatagramVerbs.class, CompletionChannelVerbs.class, AsyncEventVerbs.class,
                NetworkVerbs.class, EfaVerbs.class);
        List<Arguments> out = new ArrayList<>();
        for (Kind kind : Kind.values()) {
            for (int mask = 0; mask < 1 << all.size(); mask++) {
                Set<Class<?>> offered = new HashSet<>();
                for (int i = 0; i < all.size(); i++) {
                    if ((mask & 1 << i) != 0) {
                        offered.add(all.get(i));
                    }
                }
                out.add(Arguments.of(kind, offered));
            }
        }
        return out.stream();
    }

    /**
     * Every set of facets on every device kind, through every user path: a cache's acquire,
     * inspection and health, a RoceNetwork subscription, device event listeners, and an endpoint,
     * which opens where the datagram path is offered (SRD where the EFA extensions are too) and then
     * sends and receives, and otherwise answers EOPNOTSUPP. Nothing throws but that EOPNOTSUPP,
     * nothing warns, and the health names each facet missing that matters.
     */
    @ParameterizedTest(name = "{0} with {1}")
    @MethodSource("everyKindAndSetOfFacets")
    void everySetOfFacetsServesEveryPathItAllows(Kind kind, Set<Class<?>> offered) {
        Partial p = new Partial(kind, offered, true);
        try (LogCapture log = LogCapture.of(Device.class, DeviceEventReader.class, RoceNetwork.class,
                AddressHandleCache.class, UdEndpoint.class);
             Device d = Device.openFirst(p); ProtectionDomain pd = d.allocatePd();
             AddressHandleCache cache = AddressHandleCache.create()) {
            List<DeviceEvent> events = new CopyOnWriteArrayList<>();
            d.addEventListener(events::add);
            try (AddressHandle a = cache.acquire(pd, kind.peer());
                 AddressHandle b = cache.acquire(pd, kind.peer().toBuilder().sgidIndex(kind == Kind.EFA ? 0 : 2)
                         .build())) {
                assertEquals(a.nativeHandle(), b.nativeHandle());
                assertEquals(1, cache.inspection().entries(e -> true, 10).size());
            }
            HealthReport health = cache.inspection().health();
            assertEquals(offered.contains(AsyncEventVerbs.class) ? HealthStatus.UP : HealthStatus.DEGRADED,
                    check(health, "event_reader").orElseThrow(() -> new AssertionError(health.toString())).status());
            Optional<HealthCheck> network = check(health, "network_reader");
            if (kind == Kind.EFA) {
                assertEquals(Optional.empty(), network);
            } else if (!offered.contains(NetworkVerbs.class)) {
                assertEquals(HealthStatus.DEGRADED, network.orElseThrow().status());
            }
            try (RoceNetwork.Subscription s = RoceNetwork.subscribe(d, e -> { })) {
                assertEquals(kind == Kind.ROCE && !offered.contains(NetworkVerbs.class), s.health().map(
                        c -> c.status() == HealthStatus.DEGRADED).orElse(false), () -> s.health().toString());
            }
            for (QueuePairType transport : QueuePairType.values()) {
                boolean opens = offered.contains(DatagramVerbs.class)
                        && (transport == QueuePairType.UD || kind == Kind.EFA && offered.contains(EfaVerbs.class));
                UdEndpoint.Options options = UdEndpoint.Options.defaults().withTransport(transport);
                if (!opens) {
                    VerbsException e = assertThrows(VerbsException.class, () -> UdEndpoint.open(pd, cache, options)
                            .close(), transport.toString());
                    assertEquals(Errno.EOPNOTSUPP, e.errno(), e.getMessage());
                    continue;
                }
                try (UdEndpoint endpoint = UdEndpoint.open(pd, cache, options)) {
                    byte[] sent = {7, (byte) transport.ordinal()};
                    endpoint.send(endpoint.address(), ByteBuffer.wrap(sent));
                    Datagram received = endpoint.receive(10, TimeUnit.SECONDS);
                    assertNotNull(received, transport + ": the datagram came back within 10 s");
                    assertArrayEquals(sent, received.payload());
                }
            }
            // A GID change: heard (and the source GID chosen again) where the provider reads events, else unseen.
            p.mock.raiseEvent(d.name(), DeviceEvent.Kind.GID_CHANGE, 1);
            if (offered.contains(AsyncEventVerbs.class)) {
                for (int i = 0; i < 2000 && events.isEmpty(); i++) {
                    sleepMillis(5);
                }
                assertEquals(List.of(DeviceEvent.Kind.GID_CHANGE), events.stream().map(DeviceEvent::kind).toList());
            } else {
                assertEquals(List.of(), events, "no event reader, no event");
            }
            assertEquals(kind == Kind.EFA ? 0 : 2, d.resolve(AddressHandleAttributes.forGid(
                    kind == Kind.EFA ? "fe80::efa:0:0:99" : "2001:db8:7::99")).sgidIndex());
            assertEquals(List.of(), log.messages(Level.WARN));
        }
    }

    private static void sleepMillis(long ms) {
        try {
            TimeUnit.MILLISECONDS.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    /**
     * The datagram path alone (no completion channels, events, network or EFA extensions): an
     * endpoint opens with polled CQs and a UD QP, sends to itself and receives what it sent.
     */
    @ParameterizedTest
    @EnumSource(Kind.class)
    void withTheDatagramPathAloneAnEndpointSendsAndReceives(Kind kind) {
        Partial p = new Partial(kind, Set.of(DatagramVerbs.class), true);
        try (LogCapture log = LogCapture.of(Device.class, DeviceEventReader.class, RoceNetwork.class,
                AddressHandleCache.class, UdEndpoint.class);
             Device d = Device.openFirst(p); ProtectionDomain pd = d.allocatePd();
             AddressHandleCache cache = AddressHandleCache.create();
             UdEndpoint endpoint = UdEndpoint.open(pd, cache, UdEndpoint.Options.defaults())) {
            byte[] sent = {1, 2, 3, 4, 5};
            endpoint.send(endpoint.address(), ByteBuffer.wrap(sent));
            Datagram received = endpoint.receive(10, TimeUnit.SECONDS);
            assertNotNull(received, "the datagram came back within 10 s");
            assertArrayEquals(sent, received.payload());
            assertEquals(endpoint.address().qpn(), received.sourceQpn());
            assertEquals(HealthStatus.DEGRADED, check(cache.inspection().health(), "event_reader").orElseThrow().status());
            assertEquals(List.of(), log.messages(Level.WARN));
        }
    }
}
