package org.efaah.ud;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.LoopbackVerbsProvider;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;

/**
 * Issue 35: once running, a send allocates nothing per datagram, by {@code sendBatch} (the stream's
 * shape: 64 payloads to one peer) and by {@code send}, measured as the bytes the sending thread
 * allocated ({@code ThreadMXBean.getThreadAllocatedBytes}) over thousands of sends.
 *
 * <p>On {@link LoopbackVerbsProvider} over the mock's RoCE devices: its datapath allocates nothing
 * itself (the mock's does), and it models UD on RoCE only. Two windows of 1,000 rounds (65,000
 * datagrams): one after a short warm-up, while the send path runs interpreted or at C1 (neither
 * removes an allocation by escape analysis, so nothing may rely on it), and one after a long one,
 * at C2. The short warm-up takes what is made once (the spare AH holders, the waiter's step,
 * classes' first use).
 *
 * <p>The bound is not 0: a window now and then sees a few hundred to a few thousand bytes once (a
 * deoptimisation materialising the objects C2 had removed), never again in the next. Anything per datagram or per
 * batch is far above it: 16 bytes a round (the smallest object, once per batch) is 16,000.
 */
class SendAllocationTest {
    private static final int BATCH = 64;

    /** Bytes a window may see at most: half of what one 16-byte object a round would make. */
    private static final long BOUND = 8_000;

    @Test
    void sendsAllocateNothingPerDatagramOnceRunning() {
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().deviceCount(2).efa(false)
                .createLatencyNanos(0).build());
        LoopbackVerbsProvider provider = new LoopbackVerbsProvider(mock);
        try (Device d0 = Device.open(provider, mock.deviceNames().get(0));
             Device d1 = Device.open(provider, mock.deviceNames().get(1));
             ProtectionDomain pd0 = d0.allocatePd();
             ProtectionDomain pd1 = d1.allocatePd();
             AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED).build();
             UdEndpoint server = UdEndpoint.open(pd0, cache, UdEndpoint.Options.defaults());
             UdEndpoint client = UdEndpoint.open(pd1, cache, UdEndpoint.Options.defaults());
             AddressHandle toServer = cache.acquire(pd1, AddressHandleAttributes.forGid(server.address().gid()))) {
            ByteBuffer[] batch = new ByteBuffer[BATCH];
            for (int i = 0; i < batch.length; i++) {
                batch[i] = ByteBuffer.allocate(64);
            }
            ByteBuffer one = ByteBuffer.allocate(64);
            Sender sender = new Sender(client, toServer, server.address(), batch, one);

            sender.rounds(100);
            long early = sender.allocatedOver(1_000);
            sender.rounds(20_000);
            long warm = sender.allocatedOver(1_000);

            long datagrams = client.counters().sent();
            assertEquals((100 + 1_000 + 20_000 + 1_000) * (BATCH + 1L), datagrams, "every send posted");
            System.out.printf("FIGURE send allocation (RoCE, loopback provider): %d B over %d datagrams early, "
                    + "%d B over as many warm%n", early, 1_000 * (BATCH + 1L), warm);
            assertTrue(early < BOUND, "bytes allocated by 1,000 rounds of a sendBatch of 64 and a send, "
                    + "interpreted or at C1: " + early);
            assertTrue(warm < BOUND, "bytes allocated by 1,000 rounds of a sendBatch of 64 and a send, warm: " + warm);
            assertTrue(client.flush(5, TimeUnit.SECONDS), "every send completed");
        }
    }

    /** One round: a batch of 64 and one single send, to the server (which reads none: UD drops them). */
    private record Sender(UdEndpoint client, AddressHandle ah, EndpointAddress to, ByteBuffer[] batch,
                          ByteBuffer one) {
        void rounds(int n) {
            for (int r = 0; r < n; r++) {
                for (ByteBuffer p : batch) {
                    p.clear();
                }
                client.sendBatch(ah, to, batch, 0, batch.length);
                client.send(ah, to, one.clear());
            }
        }

        long allocatedOver(int n) {
            com.sun.management.ThreadMXBean threads =
                    (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
            long before = threads.getCurrentThreadAllocatedBytes();
            rounds(n);
            return threads.getCurrentThreadAllocatedBytes() - before;
        }
    }
}
