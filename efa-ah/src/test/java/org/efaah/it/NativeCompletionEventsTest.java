package org.efaah.it;

import org.efaah.verbs.spi.CompletionChannelVerbs;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.ud.Datagram;
import org.efaah.ud.UdEndpoint;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.CompletionQueue;
import org.efaah.verbs.Device;
import org.efaah.verbs.Errno;
import org.efaah.verbs.ForwardingVerbsProvider;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.spi.VerbsProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Issue 21 item 1 on a real kernel device (rxe0 in the VM): completion channels from C
 * ({@code ibv_create_comp_channel}, {@code ibv_req_notify_cq}, {@code ibv_get_cq_event} with the stop
 * eventfd, {@code ibv_ack_cq_events} before {@code ibv_destroy_cq}); a sleeping receive wakes for each
 * datagram, a CQ with unacknowledged events still closes, and the idle CPU of a waiting receive is
 * printed beside that of the polled wait the endpoint used before. An EFA device without CQ
 * notifications refuses a CQ on a channel ({@code EOPNOTSUPP}: {@code efa_create_cq_ex}, rdma-core
 * 94ed75b42): there the CQ's refusal is checked and the endpoint must fall back to polling.
 */
@Tag("native")
class NativeCompletionEventsTest {
    private Device device;
    private ProtectionDomain pd;
    private AddressHandleCache cache;
    private int gidIndex;
    private VerbsProvider provider;

    @BeforeEach
    void open() {
        provider = NativeDevice.provider();
        device = NativeDevice.open(provider);
        pd = device.allocatePd();
        cache = AddressHandleCache.builder().leakDetection(LeakDetection.PARANOID).build();
        gidIndex = NativeDevice.gidIndex();
    }

    @AfterEach
    void close() {
        if (cache != null) {
            cache.close();
        }
        if (pd != null) {
            pd.close();
        }
        if (device != null) {
            device.close();
        }
    }

    /*
     * Whether the device takes a CQ on a completion channel: always off EFA (a refusal there fails
     * the test); on EFA only with CQ notifications, which efadv's device_caps does not report in
     * every version, so it is tried.
     */
    private boolean hasChannels() {
        try {
            device.createCqWithEvents(1).close();
            return true;
        } catch (VerbsException e) {
            if (!device.isEfa() || e.errno() != Errno.EOPNOTSUPP) {
                throw e;
            }
            return false;
        }
    }

    private String waitName(boolean channels) {
        return channels ? "asleep on its completion channel" : "polling (no CQ notifications, so no channel)";
    }

    private UdEndpoint.Options noSpin() {
        return UdEndpoint.Options.defaults().withSgidIndex(gidIndex).withSpin(0, TimeUnit.NANOSECONDS);
    }

    @Test
    void aCqWithEventsArmsWaitsAndClosesWithEventsUnacknowledged() {
        if (!hasChannels()) {
            VerbsException e = assertThrows(VerbsException.class, () -> device.createCqWithEvents(16));
            NativeDevice.figure(device.name() + ": a CQ on a completion channel: " + e.getMessage());
            assertEquals(Errno.EOPNOTSUPP, e.errno(), e.getMessage());
            return;
        }
        CompletionQueue cq = device.createCqWithEvents(16);
        try {
            assertTrue(cq.hasEvents());
            assertTrue(cq.eventFd() >= 0, "the channel's fd");
            cq.requestNotification();
            assertEquals(0, cq.awaitEvents(20), "no completion: the wait times out");
        } finally {
            cq.close();
        }
        CompletionQueue stopped = device.createCqWithEvents(16);
        stopped.stopWaiting();
        assertEquals(CompletionChannelVerbs.CHANNEL_STOPPED, stopped.awaitEvents(10_000));
        stopped.close();
    }

    @Test
    void aSleepingReceiveWakesForEachDatagram() throws Exception {
        try (UdEndpoint server = UdEndpoint.open(pd, cache, noSpin());
             UdEndpoint client = UdEndpoint.open(pd, cache, noSpin());
             AddressHandle toServer = cache.acquire(pd, AddressHandleAttributes.builder()
                     .dgid(server.address().gid()).sgidIndex(gidIndex).build())) {
            boolean channels = hasChannels();
            assertEquals(channels, server.eventDriven(), channels ? "the device has completion channels"
                    : "without completion channels the endpoint polls");
            int rounds = 50;
            long t0 = System.nanoTime();
            for (int i = 0; i < rounds; i++) {
                CompletableFuture<Datagram> r = CompletableFuture.supplyAsync(() -> server.receive(10, TimeUnit.SECONDS));
                Thread.sleep(2); // the receive is asleep on its channel by now, mostly
                client.send(toServer, server.address(), ByteBuffer.wrap(new byte[] {(byte) i, 1, 2, 3}));
                Datagram d = r.get(20, TimeUnit.SECONDS);
                assertNotNull(d, "round " + i);
                assertEquals((byte) i, d.payload()[0]);
            }
            assertTrue(client.flush(10, TimeUnit.SECONDS));
            NativeDevice.figure(String.format("%s: %d datagrams each reached a receive %s, %.1f ms per round "
                    + "(2 ms of it a sleep)", device.name(), rounds, waitName(channels),
                    (System.nanoTime() - t0) / 1e6 / rounds));
        }
    }

    @Test
    void idleReceiveCpuEventDrivenAndPolled() {
        boolean channels = hasChannels();
        double events = idleCpuPercent(pd, UdEndpoint.Options.defaults().withSgidIndex(gidIndex), channels);
        // The polled wait the endpoint had before issue 21: a provider without channels gets it still.
        VerbsProvider noChannels = new ForwardingVerbsProvider(provider) {
            @Override
            public long createCompletionChannel(long context) {
                throw new VerbsException("ibv_create_comp_channel", Errno.EOPNOTSUPP, "hidden for the comparison");
            }
        };
        Device polledDevice = NativeDevice.open(noChannels);
        try {
            ProtectionDomain polledPd = polledDevice.allocatePd();
            try {
                double polled = idleCpuPercent(polledPd, UdEndpoint.Options.defaults().withSgidIndex(gidIndex), false);
                NativeDevice.figure(String.format("%s: idle receive(2 s) used %.2f%% of a core %s, %.1f%% "
                        + "polling with parks (the wait before issue 21)", device.name(), events, waitName(channels),
                        polled));
            } finally {
                polledPd.close();
            }
        } finally {
            polledDevice.close();
        }
    }

    private double idleCpuPercent(ProtectionDomain on, UdEndpoint.Options options, boolean eventDriven) {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        try (UdEndpoint e = UdEndpoint.open(on, cache, options)) {
            assertEquals(eventDriven, e.eventDriven());
            long cpu0 = threads.getCurrentThreadCpuTime();
            long t0 = System.nanoTime();
            assertNull(e.receive(2, TimeUnit.SECONDS));
            long wall = System.nanoTime() - t0;
            return 100.0 * (threads.getCurrentThreadCpuTime() - cpu0) / wall;
        }
    }
}
