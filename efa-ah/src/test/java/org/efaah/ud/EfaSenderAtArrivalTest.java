package org.efaah.ud;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BiFunction;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.Errno;
import org.efaah.verbs.Gid;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.efaah.verbs.spi.CreatedAh;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 28 case 11, of the kind "on EFA a datagram names its sender as it was at arrival (or says
 * it cannot)": a datagram read after its sender's AH was destroyed and its AHN reused was credited
 * to the new peer. The mock gives out the lowest free AHN, so a destroyed AH's number is the next one.
 */
@org.junit.jupiter.api.Tag("timing") // scripts/test runs it under load: see TimingRounds
class EfaSenderAtArrivalTest {
    private static final long WAIT_SECONDS = 5;
    /** The churn case: A's turn at the AHN lasts at most this long (a receiver that names nothing by AHN). */
    private static final long TURN_BOUND_NANOS = TimeUnit.SECONDS.toNanos(1);

    /**
     * Issue 35: the sender is named when asked, not at poll. A datagram lent at the poll, and asked
     * only after its sender's AH was destroyed and the AHN given to B's, reads UNKNOWN (before,
     * the name read at poll was A's; never B's either way).
     */
    @Test
    void aDatagramAskedAfterItsAhnWasReusedIsUnknownNotTheNewPeers() throws Exception {
        try (MockEndpoints f = new MockEndpoints(3)) {
            ProtectionDomain pdR = f.pd(0);
            UdEndpoint receiver = f.endpoint(pdR, UdEndpoint.Options.defaults());
            UdEndpoint a = f.endpoint(f.pd(1), UdEndpoint.Options.defaults());
            UdEndpoint b = f.endpoint(f.pd(2), UdEndpoint.Options.defaults());
            AddressHandle toA = f.cache.acquire(pdR, AddressHandleAttributes.builder().dgid(a.address().gid()).build());
            int ahn = toA.ahn();
            a.send(receiver.address(), ByteBuffer.allocate(8));
            a.send(receiver.address(), ByteBuffer.allocate(8));
            assertEquals(2, a.counters().sent());
            // The handler throws on the first: the second stays lent, to be read by the next call.
            assertThrows(IllegalStateException.class, () -> receiver.receive(v -> {
                throw new IllegalStateException("busy");
            }, 2, 5, TimeUnit.SECONDS));
            toA.close();
            f.cache.invalidateAll();
            try (AddressHandle toB = f.cache.acquire(pdR, AddressHandleAttributes.builder()
                    .dgid(b.address().gid()).build())) {
                assertEquals(ahn, toB.ahn(), "the mock reuses the lowest free AHN");
                List<String> senders = new ArrayList<>();
                assertEquals(1, receiver.poll(v -> senders.add(v.origin() + " " + v.sourceGid() + " AHN " + v.sourceAhn()), 1));
                assertEquals(List.of(SourceOrigin.UNKNOWN + " null AHN " + ahn), senders,
                        "A's GID is " + a.address().gid() + ", B's " + b.address().gid());
            }
        }
    }

    /**
     * Of the kind "a datagram the endpoint took from its CQ is never lost": the receiver's cache
     * closed (against the rule, before the endpoint) after a datagram arrived naming its sender by
     * AHN. The receive hands the datagram over with its sender UNKNOWN; it threw, and the datagram
     * and its receive slot were gone.
     */
    @Test
    void aDatagramNamedByAhnIsStillDeliveredWhenTheReceiversCacheClosedUnderIt() throws Exception {
        try (MockEndpoints f = new MockEndpoints(2)) {
            ProtectionDomain pdR = f.pd(0);
            AddressHandleCache receiverCache = AddressHandleCache.builder().build();
            UdEndpoint receiver = UdEndpoint.open(pdR, receiverCache, UdEndpoint.Options.defaults());
            try {
                UdEndpoint a = f.endpoint(f.pd(1), UdEndpoint.Options.defaults());
                try (AddressHandle toA = receiverCache.acquire(pdR, to(a))) {
                    a.send(receiver.address(), ByteBuffer.wrap(new byte[] {42}));
                    a.flush(WAIT_SECONDS, TimeUnit.SECONDS);
                }
                receiverCache.close();
                Datagram d = receiver.receive(WAIT_SECONDS, TimeUnit.SECONDS);
                assertEquals(42, d.payload()[0]);
                assertEquals(SourceOrigin.UNKNOWN, d.origin());
                assertNull(d.sourceGid());
                assertThrows(IllegalStateException.class, () -> receiver.reply(d, ByteBuffer.allocate(1)),
                        "no reply through a closed cache");
            } finally {
                receiver.close();
            }
        }
    }

    @Test
    void aDatagramPolledAfterItsAhnWentToAnotherPeerIsUnknownNotThatPeers() throws Exception {
        try (MockEndpoints f = new MockEndpoints(3)) {
            ProtectionDomain pdR = f.pd(0);
            UdEndpoint receiver = f.endpoint(pdR, UdEndpoint.Options.defaults());
            UdEndpoint a = f.endpoint(f.pd(1), UdEndpoint.Options.defaults());
            UdEndpoint b = f.endpoint(f.pd(2), UdEndpoint.Options.defaults());
            AddressHandle toA = f.cache.acquire(pdR, to(a));
            int ahn = toA.ahn();
            // Both arrive now, slid toA's AHN: one read as a Datagram, one in place by a handler.
            a.send(receiver.address(), ByteBuffer.allocate(8));
            a.send(receiver.address(), ByteBuffer.allocate(8));
            toA.close();
            f.cache.invalidateAll(); // toA destroyed before the receiver polls
            try (AddressHandle toB = f.cache.acquire(pdR, to(b))) {
                assertEquals(ahn, toB.ahn(), "the mock reuses the lowest free AHN");
                Datagram d = receiver.receive(WAIT_SECONDS, TimeUnit.SECONDS);
                assertEquals(SourceOrigin.UNKNOWN, d.origin(), "B's GID is " + b.address().gid());
                assertNull(d.sourceGid());
                assertEquals(ahn, d.sourceAhn(), "the AHN the device wrote");
                IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                        () -> receiver.reply(d, ByteBuffer.allocate(1)));
                assertTrue(refused.getMessage().contains("given to a new AH after the datagram's arrival"),
                        refused.getMessage());
                List<SourceOrigin> inPlace = new ArrayList<>();
                assertEquals(1, receiver.receive(v -> {
                    inPlace.add(v.origin());
                    assertNull(v.sourceGid());
                    assertThrows(IllegalArgumentException.class, () -> receiver.acquireReplyAh(v));
                }, 1, WAIT_SECONDS, TimeUnit.SECONDS));
                assertEquals(List.of(SourceOrigin.UNKNOWN), inPlace);
                // Once a poll found the receive CQ empty, B's own datagrams name B by that AHN.
                assertEquals(0, receiver.poll(v -> { }, 1));
                b.send(receiver.address(), ByteBuffer.allocate(8));
                Datagram fromB = receiver.receive(WAIT_SECONDS, TimeUnit.SECONDS);
                assertEquals(SourceOrigin.AHN, fromB.origin());
                assertEquals(b.address().gid(), fromB.sourceGid());
                assertEquals(ahn, fromB.sourceAhn());
            }
        }
    }

    @Test
    void withoutReuseADatagramIsCreditedByItsAhnAlsoWhenItsAhWasMadeAfterTheEndpoint() throws Exception {
        try (MockEndpoints f = new MockEndpoints(2)) {
            ProtectionDomain pdR = f.pd(0);
            UdEndpoint receiver = f.endpoint(pdR, UdEndpoint.Options.defaults());
            UdEndpoint a = f.endpoint(f.pd(1), UdEndpoint.Options.defaults());
            try (AddressHandle toA = f.cache.acquire(pdR, to(a))) {
                a.send(receiver.address(), ByteBuffer.allocate(8));
                Datagram d = receiver.receive(WAIT_SECONDS, TimeUnit.SECONDS);
                assertEquals(SourceOrigin.AHN, d.origin());
                assertEquals(a.address().gid(), d.sourceGid());
                assertEquals(toA.ahn(), d.sourceAhn());
            }
        }
    }

    @Test
    void anotherAhnsReuseLeavesADatagramCreditedExactly() throws Exception {
        try (MockEndpoints f = new MockEndpoints(4)) {
            ProtectionDomain pdR = f.pd(0);
            UdEndpoint receiver = f.endpoint(pdR, UdEndpoint.Options.defaults());
            UdEndpoint a = f.endpoint(f.pd(1), UdEndpoint.Options.defaults());
            UdEndpoint c = f.endpoint(f.pd(2), UdEndpoint.Options.defaults());
            UdEndpoint d = f.endpoint(f.pd(3), UdEndpoint.Options.defaults());
            AddressHandle toC = f.cache.acquire(pdR, to(c));
            int cAhn = toC.ahn();
            try (AddressHandle toA = f.cache.acquire(pdR, to(a))) {
                a.send(receiver.address(), ByteBuffer.allocate(8));
                // Churn on another AHN between arrival and poll: C's AH goes, D's takes its number.
                toC.close();
                f.cache.invalidate(pdR, c.address().gid());
                try (AddressHandle toD = f.cache.acquire(pdR, to(d))) {
                    assertEquals(cAhn, toD.ahn(), "the mock reuses the lowest free AHN");
                    Datagram fromA = receiver.receive(WAIT_SECONDS, TimeUnit.SECONDS);
                    assertEquals(SourceOrigin.AHN, fromA.origin());
                    assertEquals(a.address().gid(), fromA.sourceGid());
                    assertEquals(toA.ahn(), fromA.sourceAhn());
                }
            }
        }
    }

    /**
     * Issue 33, of the kind "a receiver behind its senders still names them by AHN": a receiver
     * reading fewer datagrams per call than are queued looked each up with a mark as old as the
     * queue ahead of it, so a datagram that arrived under an AH made before the receiver's last
     * call was UNKNOWN (under churn, on a loaded machine, every one was: the churn test below).
     * Here the receive CQ never comes back empty before they are read.
     */
    @Test
    void aDatagramQueuedBehindABacklogIsNamedByTheAhItArrivedUnder() throws Exception {
        try (MockEndpoints f = new MockEndpoints(3)) {
            ProtectionDomain pdR = f.pd(0);
            // 8 receives, reposted 2 at a time.
            UdEndpoint receiver = f.endpoint(pdR, UdEndpoint.Options.defaults().withDepths(64, 8));
            UdEndpoint a = f.endpoint(f.pd(1), UdEndpoint.Options.defaults());
            UdEndpoint b = f.endpoint(f.pd(2), UdEndpoint.Options.defaults());
            // B's AH takes an AHN and gives it back: A's AH below gets it again, a reuse.
            f.cache.acquire(pdR, to(b)).close();
            f.cache.invalidate(pdR, b.address().gid());
            for (int i = 0; i < 8; i++) {
                a.send(receiver.address(), ByteBuffer.wrap(new byte[] {0}));
            }
            List<SourceOrigin> before = new ArrayList<>();
            assertEquals(2, receiver.poll(v -> before.add(v.origin()), 2)); // 2 receives posted again
            try (AddressHandle toA = f.cache.acquire(pdR, to(a))) {
                assertEquals(1, receiver.poll(v -> before.add(v.origin()), 1));
                a.send(receiver.address(), ByteBuffer.wrap(new byte[] {1}));
                a.send(receiver.address(), ByteBuffer.wrap(new byte[] {1}));
                List<String> after = new ArrayList<>();
                while (before.size() + after.size() < 10) {
                    assertEquals(1, receiver.poll(v -> {
                        if (v.payload().get(0) == 0) {
                            before.add(v.origin());
                        } else {
                            after.add(v.origin() + " " + v.sourceGid() + " AHN " + v.sourceAhn());
                        }
                    }, 1), "datagrams read: " + before + " " + after);
                }
                assertEquals(List.of(SourceOrigin.COMPLETION_GID), before.stream().distinct().toList(),
                        "sent before the receiver had an AH for A");
                String named = SourceOrigin.AHN + " " + a.address().gid() + " AHN " + toA.ahn();
                assertEquals(List.of(named, named), after, "sent after the receiver's AH for A and its last call");
            }
        }
    }

    /**
     * A only sends; the receiver's AH to A and one to B (who never sends) take turns at one AHN
     * while datagrams arrive and wait in the CQ: none may be credited to B, and some must be named
     * A by AHN. A datagram is named by AHN only when the AH it arrived under was made before the
     * receiver's call before it began and still lives when the handler asks, so B's turn lasts
     * 5 ms and A's lasts until a datagram has been named by AHN in it (at most 1 s). With a fixed
     * 5 ms turn, on one CPU beside busy JVMs (scripts/test's timing step beside two other builds),
     * none of 1,584 datagrams over 41 turns was named by AHN (812 by the completion's GID, 772
     * UNKNOWN): a receiver that does not run twice within a turn names none. The receiver that
     * parks 6 ms between calls is that case on any machine; it failed the same way with the fixed turn.
     */
    @ParameterizedTest(name = "receiver parks {0} ns between calls")
    @ValueSource(longs = {100_000, 6_000_000})
    void underChurnOfOneAhnBetweenTwoPeersNoDatagramIsCreditedToThePeerThatNeverSent(long receiverParkNanos)
            throws Exception {
        try (MockEndpoints f = new MockEndpoints(3)) {
            ProtectionDomain pdR = f.pd(0);
            // The slow receiver with 16 receives: a backlog it takes 2 calls to read, not 128.
            UdEndpoint.Options receiving = receiverParkNanos < 1_000_000 ? UdEndpoint.Options.defaults()
                    : UdEndpoint.Options.defaults().withDepths(64, 16);
            UdEndpoint receiver = f.endpoint(pdR, receiving);
            UdEndpoint a = f.endpoint(f.pd(1), UdEndpoint.Options.defaults());
            UdEndpoint b = f.endpoint(f.pd(2), UdEndpoint.Options.defaults());
            Gid gidA = a.address().gid();
            Gid gidB = b.address().gid();
            AtomicBoolean stop = new AtomicBoolean();
            AtomicInteger turns = new AtomicInteger();
            AtomicInteger namedByAhn = new AtomicInteger();
            Thread churn = new Thread(() -> {
                while (!stop.get()) {
                    for (UdEndpoint peer : List.of(a, b)) {
                        try (AddressHandle held = f.cache.acquire(pdR, to(peer))) {
                            int from = namedByAhn.get();
                            long bound = System.nanoTime() + TURN_BOUND_NANOS;
                            LockSupport.parkNanos(5_000_000); // A's datagrams land with this AHN meanwhile
                            while (peer == a && namedByAhn.get() == from && !stop.get()
                                    && System.nanoTime() - bound < 0) {
                                LockSupport.parkNanos(1_000_000);
                            }
                        }
                        f.cache.invalidate(pdR, peer.address().gid());
                    }
                    turns.incrementAndGet();
                }
            });
            Thread sender = new Thread(() -> {
                while (!stop.get()) {
                    a.send(receiver.address(), ByteBuffer.allocate(8));
                }
            });
            Map<SourceOrigin, Integer> origins = new EnumMap<>(SourceOrigin.class);
            int[] creditedToB = new int[1];
            long started = System.nanoTime();
            churn.start();
            sender.start();
            int received = 0;
            try {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                while ((received < 1000 || turns.get() < 40) && System.nanoTime() < deadline) {
                    int n = receiver.poll(v -> {
                        origins.merge(v.origin(), 1, Integer::sum);
                        if (v.origin() == SourceOrigin.AHN) {
                            namedByAhn.incrementAndGet();
                        }
                        if (gidB.equals(v.sourceGid())) {
                            creditedToB[0]++;
                        }
                    }, 8);
                    received += n;
                    LockSupport.parkNanos(receiverParkNanos); // datagrams wait in the CQ, also while the AHN changes hands
                }
            } finally {
                stop.set(true);
                churn.join();
                sender.join();
            }
            String seen = received + " datagrams over " + turns.get() + " turns in "
                    + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started) + " ms: " + origins + "; A is " + gidA;
            System.out.println("receiver parking " + receiverParkNanos + " ns: " + seen);
            assertTrue(received >= 1000 && turns.get() >= 40, seen);
            assertEquals(0, creditedToB[0], "credited to B (" + gidB + "), who sent nothing; " + seen);
            assertTrue(origins.getOrDefault(SourceOrigin.AHN, 0) > 0, "some named by AHN: " + seen);
        }
    }

    /**
     * Issue 33 section 3, of the kind "on EFA a datagram names its sender exactly or UNKNOWN,
     * whoever made the AHs of the receiver's PD": an AH made in that PD outside the endpoint's
     * cache, then destroyed, its AHN then given to the cache's AH for another peer. The cache
     * trusted its own first AH with that number for every mark, and credited the datagram to B.
     */
    @Test
    void aDatagramThatArrivedUnderAnAhMadeByCreateAhIsNotCreditedToTheCachesNextAhWithItsAhn() throws Exception {
        outsideAhThenCacheAh((pdR, peer) -> pdR.createAh(to(peer))::destroy);
    }

    @Test
    void aDatagramThatArrivedUnderASecondCachesAhIsNotCreditedToTheFirstCachesNextAhWithItsAhn() throws Exception {
        AddressHandleCache second = AddressHandleCache.builder().build();
        try {
            outsideAhThenCacheAh((pdR, peer) -> {
                AddressHandle held = second.acquire(pdR, to(peer));
                return () -> {
                    held.close();
                    second.invalidateAll();
                };
            });
        } finally {
            second.close();
        }
    }

    /**
     * Of the same kind, an AH the PD never saw: a create that made a hardware AH, had a datagram
     * arrive under it, then undid it and failed (as the native stub does when efadv_query_ah
     * fails, reporting it as ibv_create_ah's failure). The AHN it held goes to the cache's AH for
     * B, the first create in the PD to return it: not to be trusted after a failed create.
     */
    @Test
    void aDatagramThatArrivedUnderAnAhWhoseCreateFailedIsNotCreditedToTheNextAhWithItsAhn() throws Exception {
        Runnable[] duringFailedCreate = {null};
        class HalfCreates extends org.efaah.verbs.ForwardingVerbsProvider {
            HalfCreates(MockVerbsProvider mock) {
                super(mock);
            }

            @Override
            public CreatedAh createAh(long pd, AddressHandleAttributes attributes) {
                Runnable during = duringFailedCreate[0];
                duringFailedCreate[0] = null;
                CreatedAh created = super.createAh(pd, attributes);
                if (during == null) {
                    return created;
                }
                during.run();
                super.destroyAh(created.handle());
                throw new VerbsException("ibv_create_ah", Errno.EIO, "efadv_query_ah failed");
            }
        }
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().deviceCount(3).build());
        HalfCreates provider = new HalfCreates(mock);
        try (AddressHandleCache cache = AddressHandleCache.builder().build();
             Device d0 = Device.open(provider, "efa_0"); Device d1 = Device.open(provider, "efa_1");
             Device d2 = Device.open(provider, "efa_2");
             ProtectionDomain pdR = d0.allocatePd(); ProtectionDomain pdA = d1.allocatePd();
             ProtectionDomain pdB = d2.allocatePd()) {
            try (UdEndpoint receiver = UdEndpoint.open(pdR, cache, UdEndpoint.Options.defaults());
                 UdEndpoint a = UdEndpoint.open(pdA, cache, UdEndpoint.Options.defaults());
                 UdEndpoint b = UdEndpoint.open(pdB, cache, UdEndpoint.Options.defaults());
                 AddressHandle aToReceiver = cache.acquire(pdA, to(receiver))) {
                duringFailedCreate[0] = () -> a.send(aToReceiver, receiver.address(), ByteBuffer.allocate(8));
                assertThrows(VerbsException.class, () -> pdR.createAh(to(a)));
                assertTrue(a.flush(WAIT_SECONDS, TimeUnit.SECONDS));
                try (AddressHandle toB = cache.acquire(pdR, to(b))) {
                    Datagram d = receiver.receive(WAIT_SECONDS, TimeUnit.SECONDS);
                    assertEquals(toB.ahn(), d.sourceAhn(), "the mock gives the freed AHN again");
                    assertEquals(SourceOrigin.UNKNOWN, d.origin(), "sent by A (" + a.address().gid() + "), named "
                            + d.sourceGid() + "; B is " + b.address().gid());
                }
            }
        }
    }

    /**
     * The same sequence on RoCE, where an AHN names nothing: the sender is named by the GRH its
     * datagram carries, exactly, whoever made the receiver PD's AHs.
     */
    @Test
    void onRoceADatagramThatArrivedUnderAnAhMadeByCreateAhIsNamedByItsGrh() throws Exception {
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().deviceCount(3).efa(false).build());
        try (AddressHandleCache cache = AddressHandleCache.builder().build();
             Device d0 = Device.open(mock, "roce_0"); Device d1 = Device.open(mock, "roce_1");
             Device d2 = Device.open(mock, "roce_2");
             ProtectionDomain pdR = d0.allocatePd(); ProtectionDomain pdA = d1.allocatePd();
             ProtectionDomain pdB = d2.allocatePd()) {
            try (UdEndpoint receiver = UdEndpoint.open(pdR, cache, UdEndpoint.Options.defaults());
                 UdEndpoint a = UdEndpoint.open(pdA, cache, UdEndpoint.Options.defaults());
                 UdEndpoint b = UdEndpoint.open(pdB, cache, UdEndpoint.Options.defaults())) {
                org.efaah.verbs.HardwareAddressHandle outside = pdR.createAh(to(a));
                a.send(receiver.address(), ByteBuffer.allocate(8));
                assertTrue(a.flush(WAIT_SECONDS, TimeUnit.SECONDS));
                outside.destroy();
                try (AddressHandle toB = cache.acquire(pdR, to(b))) {
                    Datagram d = receiver.receive(WAIT_SECONDS, TimeUnit.SECONDS);
                    assertEquals(SourceOrigin.GRH, d.origin());
                    assertEquals(a.address().gid(), d.sourceGid());
                }
            }
        }
    }

    /** A sends one datagram under an AH {@code outside} made in the receiver's PD; that AH goes, the cache's AH to B takes its AHN. */
    private static void outsideAhThenCacheAh(BiFunction<ProtectionDomain, UdEndpoint, Runnable> outside) throws Exception {
        try (MockEndpoints f = new MockEndpoints(3)) {
            ProtectionDomain pdR = f.pd(0);
            UdEndpoint receiver = f.endpoint(pdR, UdEndpoint.Options.defaults());
            UdEndpoint a = f.endpoint(f.pd(1), UdEndpoint.Options.defaults());
            UdEndpoint b = f.endpoint(f.pd(2), UdEndpoint.Options.defaults());
            Runnable destroy = outside.apply(pdR, a);
            a.send(receiver.address(), ByteBuffer.allocate(8));
            a.flush(WAIT_SECONDS, TimeUnit.SECONDS);
            int[] liveBefore = f.mock.liveAhns(0);
            destroy.run();
            try (AddressHandle toB = f.cache.acquire(pdR, to(b))) {
                assertTrue(Arrays.stream(liveBefore).anyMatch(n -> n == toB.ahn()),
                        "the mock gives the freed AHN " + Arrays.toString(liveBefore) + " again: " + toB.ahn());
                Datagram d = receiver.receive(WAIT_SECONDS, TimeUnit.SECONDS);
                assertEquals(toB.ahn(), d.sourceAhn(), "the AHN the device wrote");
                assertEquals(SourceOrigin.UNKNOWN, d.origin(), "sent by A (" + a.address().gid() + "), named "
                        + d.sourceGid() + "; B is " + b.address().gid());
                assertNull(d.sourceGid());
            }
        }
    }

    private static AddressHandleAttributes to(UdEndpoint peer) {
        return AddressHandleAttributes.builder().dgid(peer.address().gid()).build();
    }
}
