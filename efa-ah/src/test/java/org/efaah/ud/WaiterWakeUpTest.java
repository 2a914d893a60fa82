package org.efaah.ud;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.Errno;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.WorkCompletion;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.efaah.verbs.spi.EfaVerbs;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 33 items 5.1 and the suspected ud races: a wait that sleeps on a CQ's channel must not
 * sleep through what its own last step, or another thread's, left without an event (a resend
 * queued, a recovery begun); a send waiting for the turn must not wait out a sleeping flush once
 * slots freed; no completion taken off a CQ, and no datagram lent, is lost when a call fails partway.
 * Each race is forced by a decorating provider (hooks at the arm, injected failures), not by sleeps.
 * On the mock's EFA model and, where the path differs, its RoCE model.
 */
@org.junit.jupiter.api.Tag("timing") // scripts/test runs it under load: see TimingRounds
class WaiterWakeUpTest {
    /** A bound that a step taking milliseconds meets on a loaded machine; the defects took 4 s or 10 s. */
    private static final long PROMPT_NANOS = TimeUnit.SECONDS.toNanos(2);

    /** The mock behind hooks: one run just before the next arm, sleeps counted, injected failures. */
    static final class Hooks extends ArmHookProvider {
        volatile boolean failQpQuery;
        /** The next poll taking 2 or more completions reads the first as failed (a local length error). */
        volatile boolean failFirstOfNextBatch;
        /** The next poll taking a completion reads the first as failed (a local length error). */
        volatile boolean failFirstOfNextPoll;
        /** Once a poll has returned completions, the next poll fails. */
        volatile boolean failPollAfterOneWithCompletions;
        private volatile boolean sawCompletions;
        private final EfaVerbs efa;

        Hooks(MockVerbsProvider mock) {
            super(mock);
            EfaVerbs real = mock.config().efa() ? mock.efa() : null;
            this.efa = real == null ? null : (EfaVerbs) Proxy.newProxyInstance(EfaVerbs.class.getClassLoader(),
                    new Class<?>[] {EfaVerbs.class}, (proxy, method, args) -> {
                        boolean poll = method.getName().equals("pollCqWithSourceGid");
                        if (poll) {
                            beforePoll();
                        }
                        try {
                            Object r = method.invoke(real, args);
                            if (poll) {
                                afterPoll((Integer) r, (WorkCompletion[]) args[1]);
                            }
                            return r;
                        } catch (InvocationTargetException e) {
                            throw e.getCause();
                        }
                    });
        }

        @Override
        public EfaVerbs efa() {
            return efa == null ? super.efa() : efa;
        }

        @Override
        public int queryQpState(long qp) {
            if (failQpQuery) {
                throw new VerbsException("ibv_query_qp", Errno.EIO, "injected");
            }
            return super.queryQpState(qp);
        }

        @Override
        public int pollCq(long cq, WorkCompletion[] into) {
            beforePoll();
            int n = super.pollCq(cq, into);
            afterPoll(n, into);
            return n;
        }

        private void beforePoll() {
            if (failPollAfterOneWithCompletions && sawCompletions) {
                failPollAfterOneWithCompletions = false;
                throw new VerbsException("ibv_poll_cq", Errno.EIO, "injected");
            }
        }

        private void afterPoll(int n, WorkCompletion[] into) {
            if (failPollAfterOneWithCompletions && n > 0) {
                sawCompletions = true;
            }
            if (failFirstOfNextPoll && n >= 1) {
                failFirstOfNextPoll = false;
                into[0].status = WorkCompletion.LOC_LEN_ERR;
            }
            if (failFirstOfNextBatch && n >= 2) {
                failFirstOfNextBatch = false;
                into[0].status = WorkCompletion.LOC_LEN_ERR;
            }
        }
    }

    /** Devices {@code efa_0..2} (or {@code roce_0..2}) of one mock behind {@link Hooks}, one cache; closed children first. */
    static final class Fabric implements AutoCloseable {
        final MockVerbsProvider mock;
        final Hooks hooks;
        final AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.PARANOID).build();
        final List<ProtectionDomain> pds = new ArrayList<>();
        private final List<Device> devices = new ArrayList<>();
        private final List<AutoCloseable> closeFirst = new ArrayList<>();

        Fabric(MockConfig config) {
            mock = new MockVerbsProvider(config.toBuilder().deviceCount(3).build());
            hooks = new Hooks(mock);
            for (int i = 0; i < 3; i++) {
                Device d = Device.open(hooks, (config.efa() ? "efa_" : "roce_") + i);
                devices.add(d);
                pds.add(d.allocatePd());
            }
        }

        UdEndpoint endpoint(int device, UdEndpoint.Options options) {
            UdEndpoint e = UdEndpoint.open(pds.get(device), cache, options);
            closeFirst.add(e);
            return e;
        }

        AddressHandle ah(int fromDevice, UdEndpoint to) {
            AddressHandle ah = cache.acquire(pds.get(fromDevice), AddressHandleAttributes.forGid(to.address().gid()));
            closeFirst.add(0, ah);
            return ah;
        }

        @Override
        public void close() throws Exception {
            mock.holdSendCompletions(false);
            for (AutoCloseable c : closeFirst) {
                c.close();
            }
            cache.close();
            for (ProtectionDomain pd : pds) {
                pd.close();
            }
            for (Device d : devices) {
                d.close();
            }
            assertEquals(0, mock.counters().liveAhs());
        }
    }

    private static UdEndpoint.Options noSpin() {
        return UdEndpoint.Options.defaults().withSpin(0, TimeUnit.NANOSECONDS);
    }

    private static ByteBuffer bytes(int size, int first) {
        return ByteBuffer.allocate(size).put(0, (byte) first);
    }

    private static long millisSince(long start) {
        return (System.nanoTime() - start) / 1_000_000;
    }

    /**
     * 5.1, the resend: the flush's step after its arm takes an RNR completion (queued just before
     * the arm, so it raises no event) and queues the send for a resend. The flush slept on the
     * channel until its 4 s deadline instead of resending through its 200 ms budget and reporting it.
     */
    @Test
    void aResendQueuedByTheStepAfterTheArmIsResentWithinItsBudget() throws Exception {
        try (Fabric f = new Fabric(MockConfig.defaults())) {
            UdEndpoint a = f.endpoint(0, noSpin().withTransport(org.efaah.verbs.QueuePairType.SRD)
                    .withRnrResendBudget(200, TimeUnit.MILLISECONDS));
            UdEndpoint b = f.endpoint(1, MockEndpoints.srd().withDepths(64, 1));
            AddressHandle toB = f.ah(0, b);
            f.mock.holdSendCompletions(true);
            a.send(toB, b.address(), bytes(8, 1)); // takes b's one receive
            a.send(toB, b.address(), bytes(8, 2)); // meets RNR; its completion held
            f.hooks.beforeArm.set(() -> f.mock.holdSendCompletions(false));
            long start = System.nanoTime();
            WorkCompletionException e = assertThrows(WorkCompletionException.class, () -> a.flush(4, TimeUnit.SECONDS));
            long took = System.nanoTime() - start;
            assertTrue(took < PROMPT_NANOS, "the flush slept through a resend it queued after its arm: "
                    + took / 1_000_000 + " ms (budget 200 ms)");
            assertEquals(WorkCompletion.RNR_RETRY_EXC_ERR, e.status(), e.getMessage());
            assertTrue(a.counters().rnrResends() >= 1, "resent: " + a.counters());
            assertEquals(1, b.receive(5, TimeUnit.SECONDS).payload()[0]);
        }
    }

    /**
     * 5.1, the recovery: just before a flush arms, a receive error puts the QP in error and a poll
     * begins the recovery; the flush's step after the arm takes a recovery step, and then the flush
     * slept until its 4 s deadline, though the recovery (its send never flushed: ERR flushes
     * nothing on EFA; its flush held here on RoCE) had to be driven to its 200 ms bound. Meanwhile
     * the QP stayed in error and dropped what peers sent. On EFA (ERR flushes nothing) and RoCE.
     */
    @ParameterizedTest(name = "efa={0}")
    @ValueSource(booleans = {true, false})
    void aRecoveryBegunByTheStepAfterTheArmIsDrivenToItsBound(boolean efa) throws Exception {
        try (Fabric f = new Fabric(MockConfig.builder().efa(efa).flushOnError(!efa).build())) {
            UdEndpoint small = f.endpoint(0, noSpin().withMaxMessageSize(512)
                    .withRecoveryFlushBound(200, TimeUnit.MILLISECONDS));
            UdEndpoint big = f.endpoint(1, UdEndpoint.Options.defaults());
            AddressHandle toBig = f.ah(0, big);
            AddressHandle toSmall = f.ah(1, small);
            f.mock.holdSendCompletions(true);
            small.send(toBig, big.address(), bytes(16, 1)); // in flight; its completion held
            f.hooks.beforeArm.set(() -> {
                big.send(toSmall, small.address(), bytes(1024, 0)); // too large: small's QP goes to error
                assertThrows(WorkCompletionException.class, () -> small.poll(d -> { }, 1)); // begins the recovery
            });
            long start = System.nanoTime();
            WorkCompletionException e = assertThrows(WorkCompletionException.class,
                    () -> small.flush(4, TimeUnit.SECONDS));
            long took = System.nanoTime() - start;
            assertTrue(took < PROMPT_NANOS, "the flush slept through the recovery its step began: "
                    + took / 1_000_000 + " ms (bound 200 ms)");
            assertEquals(WorkCompletion.WR_FLUSH_ERR, e.status(), "the send the remake gave up: " + e.getMessage());
            assertEquals(1, small.counters().recoveries());
            assertEquals(1, small.counters().qpsRemade());
            f.mock.holdSendCompletions(false);
            big.send(toSmall, small.address(), bytes(16, 9));
            assertEquals(9, small.receive(5, TimeUnit.SECONDS).payload()[0], "received on the new QP");
        }
    }

    /**
     * Suspected 5.a: a flush sleeps on the send CQ holding the turn; a send finds no slot and waits
     * for the turn. A completion wakes the flush and frees a slot, and the flush, not done, slept
     * again: the send waited out its 10 s and only then posted, into a slot free all along. One
     * send never completes (SRD {@code rnr_retry} 7 to a receiver with no receive posted). EFA
     * only: the turn is the same on every device, and SRD is how the mock keeps one send in flight.
     */
    @Test
    void aSendWaitingForTheTurnTakesTheSlotASleepingFlushsWakeUpFreed() throws Exception {
        try (Fabric f = new Fabric(MockConfig.defaults())) {
            UdEndpoint a = f.endpoint(0, noSpin().withTransport(org.efaah.verbs.QueuePairType.SRD)
                    .withDepths(2, 16).withRnrRetry(7));
            UdEndpoint b = f.endpoint(1, MockEndpoints.srd().withDepths(64, 1));
            UdEndpoint c = f.endpoint(2, MockEndpoints.srd());
            AddressHandle toB = f.ah(0, b);
            AddressHandle toC = f.ah(0, c);
            f.mock.holdSendCompletions(true);
            a.send(toB, b.address(), bytes(8, 1)); // lands in b's one receive; its completion held
            a.send(toB, b.address(), bytes(8, 2)); // b has none left: in flight for good
            AtomicReference<Throwable> flushEnded = new AtomicReference<>();
            Thread flush = new Thread(() -> {
                try {
                    a.flush(20, TimeUnit.SECONDS);
                } catch (Throwable t) {
                    flushEnded.set(t);
                }
            }, "flush");
            flush.start();
            awaitUntil(() -> f.hooks.sleeps.get() >= 1, "the flush sleeps on the send CQ");
            AtomicReference<Throwable> sendFailed = new AtomicReference<>();
            Thread send = new Thread(() -> {
                try {
                    a.send(toC, c.address(), bytes(8, 3));
                } catch (Throwable t) {
                    sendFailed.set(t);
                }
            }, "send");
            send.start();
            awaitUntil(() -> send.getState() == Thread.State.TIMED_WAITING, "the send waits for the turn");
            long released = System.nanoTime();
            f.mock.holdSendCompletions(false); // the first send completes: the flush wakes, a slot frees
            send.join(TimeUnit.NANOSECONDS.toMillis(PROMPT_NANOS));
            assertFalse(send.isAlive(), "the send still waits behind the sleeping flush "
                    + millisSince(released) + " ms after a slot freed");
            assertEquals(null, sendFailed.get());
            assertEquals(3, c.receive(5, TimeUnit.SECONDS).payload()[0]);
            assertTrue(flush.isAlive(), "the flush waits for the send that never completes");
            a.close(); // ends the flush
            flush.join(10_000);
            assertInstanceOf(IllegalStateException.class, flushEnded.get());
        }
    }

    /**
     * Suspected 5.b: the first of a batch of send completions failed and {@code ibv_query_qp}, asked
     * whether the QP is in error, failed too: the completions after it in the batch, already off
     * the CQ, were dropped with their slots and AH references, and every later flush timed out.
     * RoCE only: on EFA a failed send's status tells, without a query.
     */
    @Test
    void aFailedQpQueryInTheMiddleOfABatchLosesNoSendCompletion() throws Exception {
        try (Fabric f = new Fabric(MockConfig.builder().efa(false).build())) {
            UdEndpoint client = f.endpoint(0, UdEndpoint.Options.defaults().withDepths(4, 16));
            UdEndpoint server = f.endpoint(1, UdEndpoint.Options.defaults());
            AddressHandle toServer = f.ah(0, server);
            f.mock.holdSendCompletions(true);
            for (int i = 0; i < 3; i++) {
                client.send(toServer, server.address(), bytes(8, i));
            }
            f.hooks.failQpQuery = true;
            f.hooks.failFirstOfNextBatch = true;
            f.mock.holdSendCompletions(false);
            VerbsException q = assertThrows(VerbsException.class, () -> client.flush(2, TimeUnit.SECONDS));
            assertTrue(q.getMessage().contains("ibv_query_qp"), q.getMessage());
            f.hooks.failQpQuery = false;
            WorkCompletionException w = assertThrows(WorkCompletionException.class,
                    () -> client.flush(2, TimeUnit.SECONDS), "the failed send is reported, the others complete");
            assertEquals(1, w.failures().size(), w.getMessage());
            assertEquals(WorkCompletion.LOC_LEN_ERR, w.status());
            assertTrue(client.flush(2, TimeUnit.SECONDS));
            assertEquals(0, client.sendsInFlight());
        }
    }

    /**
     * Suspected 5.b, the receive side: a receive completed with an error and {@code ibv_query_qp}
     * failed: the query's failure was thrown instead of the receive error, the error went uncounted
     * and its slot was never reposted (a ring of 1 received nothing more). On EFA and RoCE.
     */
    @ParameterizedTest(name = "efa={0}")
    @ValueSource(booleans = {true, false})
    void aFailedQpQueryAfterAReceiveErrorLosesNeitherTheErrorNorTheSlot(boolean efa) throws Exception {
        try (Fabric f = new Fabric(MockConfig.builder().efa(efa).build())) {
            UdEndpoint client = f.endpoint(0, UdEndpoint.Options.defaults());
            UdEndpoint server = f.endpoint(1, UdEndpoint.Options.defaults().withDepths(64, 1));
            AddressHandle toServer = f.ah(0, server);
            client.send(toServer, server.address(), bytes(8, 0));
            assertTrue(client.flush(5, TimeUnit.SECONDS));
            f.hooks.failQpQuery = true;
            f.hooks.failFirstOfNextPoll = true;
            WorkCompletionException e = assertThrows(WorkCompletionException.class,
                    () -> server.receive(5, TimeUnit.SECONDS));
            f.hooks.failQpQuery = false;
            assertEquals(WorkCompletion.LOC_LEN_ERR, e.status(), e.getMessage());
            assertEquals(1, e.getSuppressed().length, "why the state is unknown rides on the error");
            assertTrue(e.getSuppressed()[0].getMessage().contains("ibv_query_qp"), e.getSuppressed()[0].getMessage());
            assertEquals(1, server.counters().receiveErrors());
            client.send(toServer, server.address(), bytes(8, 1));
            Datagram d = server.receive(5, TimeUnit.SECONDS);
            assertTrue(d != null && d.payload()[0] == 1, "the one receive slot was reposted: " + d);
        }
    }

    /**
     * Suspected 5.c: {@code poll(handler, 10)} lent three datagrams, then its next CQ poll failed:
     * the three were lost (their slots lent for good, never handed to a handler). Now the failure
     * is thrown and the next call hands them out. On EFA and RoCE (the EFA receive poll differs).
     */
    @ParameterizedTest(name = "efa={0}")
    @ValueSource(booleans = {true, false})
    void aPollFailingAfterDatagramsWereLentKeepsThemForTheNextCall(boolean efa) throws Exception {
        try (Fabric f = new Fabric(MockConfig.builder().efa(efa).build())) {
            UdEndpoint client = f.endpoint(0, UdEndpoint.Options.defaults());
            UdEndpoint server = f.endpoint(1, UdEndpoint.Options.defaults());
            AddressHandle toServer = f.ah(0, server);
            for (int i = 0; i < 3; i++) {
                client.send(toServer, server.address(), bytes(8, i));
            }
            assertTrue(client.flush(5, TimeUnit.SECONDS));
            List<Byte> got = new ArrayList<>();
            f.hooks.failPollAfterOneWithCompletions = true;
            VerbsException e = assertThrows(VerbsException.class,
                    () -> server.poll(d -> got.add(d.payload().get(0)), 10));
            assertTrue(e.getMessage().contains("injected"), e.getMessage());
            assertEquals(List.of(), got);
            assertEquals(3, server.poll(d -> got.add(d.payload().get(0)), 10), "the datagrams lent before the failure");
            assertArrayEquals(new Byte[] {0, 1, 2}, got.toArray(new Byte[0]));
            for (int i = 0; i < 300; i++) {
                // More than the 256 receives: every slot is back in the ring.
                client.send(toServer, server.address(), bytes(8, i));
                assertEquals((byte) i, server.receive(5, TimeUnit.SECONDS).payload()[0], "datagram " + i);
            }
        }
    }

    private static void awaitUntil(java.util.function.BooleanSupplier condition, String what) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            assertTrue(System.nanoTime() - end < 0, "not within 10 s: " + what);
            Thread.sleep(1);
        }
    }
}
