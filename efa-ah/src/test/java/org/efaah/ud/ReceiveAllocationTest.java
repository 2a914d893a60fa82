package org.efaah.ud;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.List;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.ForwardingVerbsProvider;
import org.efaah.verbs.EfaDeviceAttributes;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.WorkCompletion;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.efaah.verbs.spi.EfaVerbs;
import org.efaah.verbs.spi.QueuePairNumbers;
import org.junit.jupiter.api.Test;

/**
 * Issue 35 item 2, of the kind "the handler receive path allocates nothing per datagram once
 * running": the bytes the receiving thread allocates over N datagrams handed to a handler that
 * reads the payload and the sender's QPN (the stream's handler), on the mock's EFA and RoCE
 * devices. Failed before on EFA: 32 bytes a datagram (an AddressHandle per look-up at poll).
 */
/*
 * An allocation count, not a timing: ThreadMXBean counts the thread's own allocations exactly
 * (TLAB refills included), whatever the load. The datagrams are sent first, from the same thread
 * (the mock's sends allocate), and only the receives are counted. The first rounds (3) warm up
 * what is made once (classes, the lambda's linkage, the mock's pages); the count is then taken
 * twice: after those warm-up rounds, while the receive path still runs interpreted (where nothing is
 * scalar-replaced, so 0 means the code allocates nothing), and after enough rounds for C2.
 */
class ReceiveAllocationTest {
    private static final int DEPTH = 256;
    private static final int ROUNDS_TO_COMPILE = 200;
    /** Rounds before the early count: what is made on first use (also by the wait paths' first turns) is made by then. */
    private static final int WARM_UP_ROUNDS = 3;

    @Test
    void onEfaTheHandlerPathAllocatesNothingPerDatagram() throws Exception {
        measure(MockConfig.builder().deviceCount(2).build());
    }

    @Test
    void onRoceTheHandlerPathAllocatesNothingPerDatagram() throws Exception {
        measure(MockConfig.builder().deviceCount(2).efa(false).build());
    }

    /**
     * The mock, made quiet for the counted window: the reposts the endpoint makes in it are kept
     * in arrays, and its polls of the receive CQ served from completions polled off the mock
     * before it. The mock's own posts and polls allocate (a record per receive, boxed handles for
     * its maps), which is the mock's cost, not the endpoint's; a device allocates nothing there.
     */
    static final class QuietMock extends ForwardingVerbsProvider {
        private final long[] qps = new long[DEPTH];
        private final long[] mrs = new long[DEPTH];
        private final int[] offsets = new int[DEPTH];
        private final int[] lengths = new int[DEPTH];
        private final long[] wrIds = new long[DEPTH];
        private int queued;
        private final WorkCompletion[] staged = new WorkCompletion[DEPTH];
        private int stagedHead;
        private int stagedCount;
        /** The receive CQ, learnt from the polls that returned receives; 0 until then. */
        private long receiveCq;
        private boolean withSourceGid;
        boolean quiet;
        private final EfaVerbs efa;

        QuietMock(MockVerbsProvider mock) {
            super(mock);
            for (int i = 0; i < DEPTH; i++) {
                staged[i] = new WorkCompletion();
            }
            efa = mock.config().efa() ? quiet(mock.efa()) : null;
        }

        private EfaVerbs quiet(EfaVerbs real) {
            return new EfaVerbs() {
                @Override
                public long createCqWithSourceGid(long context, int entries) {
                    return real.createCqWithSourceGid(context, entries);
                }

                @Override
                public long createCqWithSourceGid(long context, int entries, long channel) {
                    return real.createCqWithSourceGid(context, entries, channel);
                }

                @Override
                public int pollCqWithSourceGid(long cq, WorkCompletion[] into) {
                    return poll(cq, into, true);
                }

                @Override
                public QueuePairNumbers createSrdQp(long pd, long sendCq, long recvCq, int maxSendWr, int maxRecvWr) {
                    return real.createSrdQp(pd, sendCq, recvCq, maxSendWr, maxRecvWr);
                }

                @Override
                public EfaDeviceAttributes queryDevice(long context) {
                    return real.queryDevice(context);
                }

                @Override
                public void activateSrdQp(long qp, int portNum, int qkey, int rnrRetry) {
                    real.activateSrdQp(qp, portNum, qkey, rnrRetry);
                }
            };
        }

        @Override
        public EfaVerbs efa() {
            return efa != null ? efa : super.efa(); // a RoCE mock's refusal
        }

        @Override
        public int pollCq(long cq, WorkCompletion[] into) {
            return poll(cq, into, false);
        }

        private int poll(long cq, WorkCompletion[] into, boolean sourceGid) {
            if (quiet && cq == receiveCq) {
                int n = 0;
                while (n < into.length && stagedCount > 0) {
                    into[n++].copyFrom(staged[stagedHead++]);
                    stagedCount--;
                }
                return n;
            }
            int n = sourceGid ? ((MockVerbsProvider) delegate()).efa().pollCqWithSourceGid(cq, into)
                    : super.pollCq(cq, into);
            if (n > 0 && into[0].opcode == WorkCompletion.OPCODE_RECV) {
                receiveCq = cq;
                withSourceGid = sourceGid;
            }
            return n;
        }

        @Override
        public void postReceive(long qp, long mr, int offset, int length, long wrId) {
            if (!quiet) {
                super.postReceive(qp, mr, offset, length, wrId);
                return;
            }
            qps[queued] = qp;
            mrs[queued] = mr;
            offsets[queued] = offset;
            lengths[queued] = length;
            wrIds[queued++] = wrId;
        }

        @Override
        public int postReceives(long qp, long mr, int[] offsets, int length, long[] wrIds, int count) {
            for (int i = 0; i < count; i++) {
                postReceive(qp, mr, offsets[i], length, wrIds[i]);
            }
            return count;
        }

        /** Before a round's sends: the reposts kept reach the mock. */
        void handOver() {
            for (int i = 0; i < queued; i++) {
                super.postReceive(qps[i], mrs[i], offsets[i], lengths[i], wrIds[i]);
            }
            queued = 0;
        }

        /** After them: what reached the receive CQ is polled off the mock, to be served in the window. */
        void stage() {
            stagedHead = 0;
            WorkCompletion[] one = {new WorkCompletion()};
            while (stagedCount < DEPTH && poll(receiveCq, one, withSourceGid) == 1) {
                staged[stagedCount++].copyFrom(one[0]);
            }
        }
    }

    private static void measure(MockConfig config) throws Exception {
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        assumeTrue(threads.isThreadAllocatedMemorySupported() && threads.isThreadAllocatedMemoryEnabled());
        QuietMock provider = new QuietMock(new MockVerbsProvider(config));
        List<String> names = provider.deviceNames();
        try (AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED).build();
             Device d0 = Device.open(provider, names.get(0)); Device d1 = Device.open(provider, names.get(1));
             ProtectionDomain pdR = d0.allocatePd(); ProtectionDomain pdA = d1.allocatePd();
             UdEndpoint receiver = UdEndpoint.open(pdR, cache, UdEndpoint.Options.defaults().withDepths(DEPTH, DEPTH));
             UdEndpoint a = UdEndpoint.open(pdA, cache, UdEndpoint.Options.defaults().withDepths(DEPTH, DEPTH));
             AddressHandle toReceiver = cache.acquire(pdA, AddressHandleAttributes.forGid(receiver.address().gid()));
             AddressHandle toA = cache.acquire(pdR, AddressHandleAttributes.forGid(a.address().gid()))) {
            long[] seen = new long[1];
            Consumer<DatagramView> handler = v -> seen[0] += v.length() + v.payload().get(0) + v.sourceQpn();
            ByteBuffer payload = ByteBuffer.allocate(64);
            for (int i = 0; i < WARM_UP_ROUNDS; i++) { // made once, the CQ learnt: not counted
                round(provider, a, toReceiver, receiver, payload, handler, threads);
            }
            long interpreted = round(provider, a, toReceiver, receiver, payload, handler, threads);
            for (int i = 0; i < ROUNDS_TO_COMPILE; i++) {
                round(provider, a, toReceiver, receiver, payload, handler, threads);
            }
            long compiled = round(provider, a, toReceiver, receiver, payload, handler, threads);
            provider.handOver();
            assertEquals("0 B, 0 B", interpreted + " B, " + compiled + " B",
                    "bytes the receiving thread allocated over " + DEPTH / 2 + " datagrams, early and once compiled");
        }
    }

    /** Sends half a receive queue's worth, then receives them all: the receiving thread's bytes allocated meanwhile. */
    private static long round(QuietMock provider, UdEndpoint a, AddressHandle toReceiver, UdEndpoint receiver, ByteBuffer payload,
                              Consumer<DatagramView> handler, com.sun.management.ThreadMXBean threads) {
        int n = DEPTH / 2;
        provider.handOver();
        for (int i = 0; i < n; i++) {
            a.send(toReceiver, receiver.address(), payload.clear());
        }
        a.flush(5, TimeUnit.SECONDS);
        boolean learnt = provider.receiveCq != 0;
        if (learnt) {
            provider.stage();
            provider.quiet = true;
        }
        long before = threads.getCurrentThreadAllocatedBytes();
        int got = 0;
        while (got < n) {
            int r = receiver.receive(handler, 64, 5, TimeUnit.SECONDS);
            if (r == 0) {
                break;
            }
            got += r;
        }
        long allocated = threads.getCurrentThreadAllocatedBytes() - before;
        provider.quiet = false;
        assertEquals(n, got, "datagrams received");
        return allocated;
    }
}
