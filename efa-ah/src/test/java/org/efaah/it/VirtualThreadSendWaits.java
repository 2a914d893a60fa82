package org.efaah.it;

import static org.efaah.it.ChildJvm.attributes;
import static org.efaah.it.ChildJvm.check;
import static org.efaah.it.VirtualThreadWaits.Child.startVirtual;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.fixture.Jdks;
import org.efaah.ud.UdEndpoint;
import org.efaah.verbs.Device;
import org.efaah.verbs.InterruptedOperationException;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.QueuePairType;
import org.efaah.verbs.VerbsProviders;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.efaah.verbs.spi.VerbsProvider;
import org.junit.jupiter.api.Assumptions;

/**
 * Issue 35 item 4, the waits of the send side, in a child JVM whose virtual-thread scheduler has two
 * carriers and no more (as {@link VirtualThreadWaits} runs {@code receive}): eight SRD senders of
 * send depth 1 each hold one send in flight to a receiver that posts no receive (its one receive
 * is taken by a datagram nobody reads), so each send is kept by RNR: the device's, {@code rnr_retry}
 * 7 ({@code device}), or the endpoint's resends after the device's finite retries
 * ({@code resends}). Then eight virtual threads wait in one of the send side's waits while a ticker
 * keeps a 10 ms tick:
 * <ul>
 * <li>{@code send}: a second send each, which waits for a send slot;
 * <li>{@code flush}: a flush each, which waits for the send in flight;
 * <li>{@code close}: a close each, which waits (its drain, at most 1 s) for the send in flight.
 * </ul>
 * The receiver then reads what came and every wait returns as it should. Then an interrupt and a
 * close each end one such wait (for {@code close}: an interrupt ends its drain at once, and a second
 * close, waiting for the first, parks and returns with it or at an interrupt). Waits that held their
 * carriers (a virtual thread in {@code poll(2)}) would leave the ticker none of its 2 s.
 */
final class VirtualThreadSendWaits {
    static final int SENDERS = 8;
    private static final long BOUND_SECONDS = 10;
    /*
     * A tenth of the ticks. Waits that held the carriers left the ticker none (0 of 200 with the
     * park replaced by poll(2)); waits that park leave it 180-199 on a loaded host, but a wait for
     * the endpoint's own resend parks 20 us at a time, and eight of them, on one CPU beside two
     * busy loops (scripts/check-timing's first phase), left it 90.
     */
    static final long MIN_TICKS = VirtualThreadWaits.TICKER_MILLIS / VirtualThreadWaits.TICK_MILLIS / 10;
    /** How long a close's drain waits for sends in flight (UdEndpoint's CLOSE_DRAIN_NANOS). */
    private static final long CLOSE_DRAIN_MILLIS = 1_000;

    private VirtualThreadSendWaits() {
    }

    /** Runs {@code kind} (send, flush or close) under {@code policy} (device or resends) on {@code provider}; skips without Java 21. */
    static void runInChild(String provider, Map<String, String> environment, String kind, String policy)
            throws IOException, InterruptedException {
        Path java = Jdks.withVirtualThreads();
        Assumptions.assumeTrue(java != null, "no Java 21 or later here (this JVM is "
                + Runtime.version().feature() + ", no JDK 25 found): virtual threads are not tested");
        String out = ChildJvm.run(java, List.of("-Djdk.virtualThreadScheduler.parallelism=2",
                "-Djdk.virtualThreadScheduler.maxPoolSize=2"), Child.class, environment, provider, kind, policy);
        System.out.print(out); // its FIGURE line
    }

    /** The case in the child; exits 1 on a failed check. */
    static final class Child {
        public static void main(String[] args) {
            ChildJvm.exit(() -> run(args[0], args[1], args[2]));
        }

        private static void run(String providerName, String kind, String policy) throws Exception {
            boolean mock = providerName.equals("mock");
            UdEndpoint.Options srd = UdEndpoint.Options.defaults().withTransport(QueuePairType.SRD)
                    .withSpin(0, TimeUnit.NANOSECONDS);
            UdEndpoint.Options senderOptions = srd.withDepths(1, 1).withRnrResendBudget(60, TimeUnit.SECONDS);
            if (policy.equals("device")) {
                senderOptions = senderOptions.withRnrRetry(7);
            }
            try (VerbsProvider provider = mock ? new MockVerbsProvider(MockConfig.builder().build())
                    : VerbsProviders.factory("native").create();
                 Device device = Device.openFirst(provider);
                 ProtectionDomain pd = device.allocatePd();
                 AddressHandleCache cache = AddressHandleCache.create();
                 UdEndpoint receiver = UdEndpoint.open(pd, cache, srd.withDepths(64, 1));
                 UdEndpoint filler = UdEndpoint.open(pd, cache, srd);
                 AddressHandle ah = cache.acquire(pd, attributes(receiver))) {
                // The receiver's one receive taken: from here on every send to it meets RNR until it reads.
                filler.send(ah, receiver.address(), ByteBuffer.wrap(bytes("filler")));
                check(filler.flush(BOUND_SECONDS, TimeUnit.SECONDS), "the filler's send did not complete");
                List<UdEndpoint> senders = new ArrayList<>();
                try {
                    for (int i = 0; i < SENDERS; i++) {
                        UdEndpoint s = UdEndpoint.open(pd, cache, senderOptions);
                        senders.add(s);
                        s.send(ah, receiver.address(), ByteBuffer.wrap(bytes("first " + i)));
                    }
                    waitersAndTicker(kind, senders, receiver, ah, device.name(), policy);
                    if (kind.equals("close")) {
                        interruptEndsACloseDrain(pd, cache, senderOptions, receiver, ah);
                        aSecondCloseParksAndReturns(pd, cache, senderOptions, receiver, ah, false);
                        aSecondCloseParksAndReturns(pd, cache, senderOptions, receiver, ah, true);
                    } else {
                        interruptEndsAWait(kind, senders.get(0), receiver, ah);
                        closeEndsAWait(kind, senders.get(1), receiver, ah);
                    }
                } finally {
                    for (UdEndpoint s : senders) {
                        s.close();
                    }
                }
            }
        }

        private static byte[] bytes(String s) {
            return s.getBytes(StandardCharsets.US_ASCII);
        }

        /** What {@code kind}'s wait on {@code s} returns: null for a send, the flush's boolean, null for a close. */
        private static Object waitOnce(String kind, UdEndpoint s, UdEndpoint receiver, AddressHandle ah, String payload) {
            switch (kind) {
                case "send":
                    s.send(ah, receiver.address(), ByteBuffer.wrap(bytes(payload)));
                    return "sent";
                case "flush":
                    return s.flush(30, TimeUnit.SECONDS);
                case "close":
                    s.close();
                    return "closed";
                default:
                    throw new IllegalArgumentException("kind: " + kind + "; valid send, flush, close");
            }
        }

        private static void waitersAndTicker(String kind, List<UdEndpoint> senders, UdEndpoint receiver, AddressHandle ah,
                                             String deviceName, String policy) throws InterruptedException {
            List<AtomicReference<Object>> got = new ArrayList<>();
            List<Thread> waiters = new ArrayList<>();
            AtomicLongArray waited = new AtomicLongArray(senders.size());
            for (int i = 0; i < senders.size(); i++) {
                UdEndpoint s = senders.get(i);
                AtomicReference<Object> slot = new AtomicReference<>();
                got.add(slot);
                String payload = "second " + i;
                int index = i;
                waiters.add(startVirtual(() -> {
                    long begun = System.nanoTime();
                    try {
                        slot.set(waitOnce(kind, s, receiver, ah, payload));
                    } catch (RuntimeException e) {
                        slot.set(e);
                    }
                    waited.set(index, System.nanoTime() - begun);
                }));
            }
            if (!kind.equals("close")) {
                Thread.sleep(300); // the waiters go to their waits (a wait that held a carrier would hold it from here)
            }
            AtomicInteger ticks = new AtomicInteger();
            AtomicLong worstGap = new AtomicLong();
            long start = System.nanoTime();
            Thread ticker = startVirtual(() -> {
                long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(VirtualThreadWaits.TICKER_MILLIS);
                long last = System.nanoTime();
                while (System.nanoTime() - end < 0) {
                    try {
                        Thread.sleep(VirtualThreadWaits.TICK_MILLIS);
                    } catch (InterruptedException e) {
                        return;
                    }
                    long now = System.nanoTime();
                    worstGap.set(Math.max(worstGap.get(), now - last));
                    last = now;
                    ticks.incrementAndGet();
                }
            });
            ticker.join(TimeUnit.SECONDS.toMillis(BOUND_SECONDS));
            long tickerMillis = (System.nanoTime() - start) / 1_000_000;
            int made = ticks.get();
            ticker.interrupt();
            check(made >= MIN_TICKS, "the ticker made " + made + " of "
                    + VirtualThreadWaits.TICKER_MILLIS / VirtualThreadWaits.TICK_MILLIS + " ticks (worst gap "
                    + worstGap.get() / 1_000_000 + " ms) while " + SENDERS + " virtual threads waited in " + kind
                    + " on 2 carriers (at least " + MIN_TICKS + " expected): the waits held the carriers");
            int stillWaiting = 0;
            for (Thread t : waiters) {
                stillWaiting += t.isAlive() ? 1 : 0;
            }
            if (!kind.equals("close")) {
                check(stillWaiting == SENDERS, stillWaiting + " of " + SENDERS + " " + kind + "s still wait after the "
                        + "ticker, before the receiver read: the RNR did not hold the sends (" + got + ")");
            }
            // The receiver reads: each read posts a receive, which lets one held send land.
            int expected = kind.equals("close") ? 0 : SENDERS + 1 + (kind.equals("send") ? SENDERS : 0);
            AtomicInteger read = new AtomicInteger();
            Thread reader = new Thread(() -> {
                while (read.get() < expected && receiver.receive(BOUND_SECONDS, TimeUnit.SECONDS) != null) {
                    read.incrementAndGet();
                }
            });
            reader.start();
            for (Thread t : waiters) {
                t.join(TimeUnit.SECONDS.toMillis(BOUND_SECONDS));
                check(!t.isAlive(), "a " + kind + " still waits " + BOUND_SECONDS + " s after its send could complete");
            }
            if (kind.equals("send")) {
                // The second sends were posted as the first completed; an endpoint's own RNR resends
                // are driven by its callers' polls: a flush each sees them land.
                for (UdEndpoint s : senders) {
                    check(s.flush(BOUND_SECONDS, TimeUnit.SECONDS), "a sender's second send did not complete");
                }
            }
            reader.join(TimeUnit.SECONDS.toMillis(2 * BOUND_SECONDS));
            Object expectedResult = kind.equals("send") ? "sent" : kind.equals("flush") ? Boolean.TRUE : "closed";
            for (int i = 0; i < SENDERS; i++) {
                Object r = got.get(i).get();
                check(expectedResult.equals(r), kind + " " + i + " returned " + r);
            }
            if (kind.equals("close")) {
                // Each close waited for its send in flight: its drain ran to its bound (a load only lengthens it).
                for (int i = 0; i < SENDERS; i++) {
                    long millis = waited.get(i) / 1_000_000;
                    check(millis >= CLOSE_DRAIN_MILLIS * 9 / 10, "close " + i + " returned after " + millis
                            + " ms: it did not wait for its send in flight (its drain's bound: " + CLOSE_DRAIN_MILLIS + " ms)");
                }
            }
            check(read.get() == expected, "the receiver read " + read + " of " + expected + " datagrams");
            System.out.printf("FIGURE %s, %d virtual threads in %s (RNR: %s) on 2 carriers: the ticker made %d ticks "
                    + "in %d ms, worst gap %d ms%n", deviceName, SENDERS, kind, policy, made, tickerMillis,
                    worstGap.get() / 1_000_000);
        }

        /** A send or flush waiting for a send kept by RNR ends at an interrupt, the flag kept. */
        private static void interruptEndsAWait(String kind, UdEndpoint s, UdEndpoint receiver, AddressHandle ah)
                throws InterruptedException {
            // The receiver read everything and posted its receive again: take it, then one send is kept by RNR.
            s.send(ah, receiver.address(), ByteBuffer.wrap(bytes("filler again")));
            s.send(ah, receiver.address(), ByteBuffer.wrap(bytes("held for the interrupt")));
            AtomicReference<Object> result = new AtomicReference<>();
            AtomicReference<Boolean> flag = new AtomicReference<>();
            Thread t = startVirtual(() -> {
                try {
                    result.set(waitOnce(kind, s, receiver, ah, "interrupted"));
                } catch (RuntimeException e) {
                    result.set(e);
                }
                flag.set(Thread.currentThread().isInterrupted());
            });
            awaitParked(t, "an interrupted " + kind);
            t.interrupt();
            t.join(TimeUnit.SECONDS.toMillis(BOUND_SECONDS));
            check(!t.isAlive(), "an interrupt left a " + kind + " waiting");
            check(result.get() instanceof InterruptedOperationException, "an interrupted " + kind + " returned " + result.get());
            check(Boolean.TRUE.equals(flag.get()), "an interrupted " + kind + " cleared the interrupt flag");
        }

        /** A send or flush waiting for a send kept by RNR ends at its endpoint's close. */
        private static void closeEndsAWait(String kind, UdEndpoint s, UdEndpoint receiver, AddressHandle ah)
                throws InterruptedException {
            s.send(ah, receiver.address(), ByteBuffer.wrap(bytes("held for the close"))); // kept by RNR
            AtomicReference<Object> result = new AtomicReference<>();
            Thread t = startVirtual(() -> {
                try {
                    result.set(waitOnce(kind, s, receiver, ah, "closed under"));
                } catch (RuntimeException e) {
                    result.set(e);
                }
            });
            awaitParked(t, "a " + kind + " ended by its endpoint's close");
            s.close();
            t.join(TimeUnit.SECONDS.toMillis(BOUND_SECONDS));
            check(!t.isAlive(), "the endpoint's close left a " + kind + " waiting");
            check(result.get() instanceof IllegalStateException, "a " + kind + " on a closed endpoint returned " + result.get());
        }

        /** A close draining a send kept by RNR stops draining at an interrupt and frees the endpoint, the flag kept. */
        private static void interruptEndsACloseDrain(ProtectionDomain pd, AddressHandleCache cache, UdEndpoint.Options o,
                                                     UdEndpoint receiver, AddressHandle ah) throws InterruptedException {
            UdEndpoint s = UdEndpoint.open(pd, cache, o);
            s.send(ah, receiver.address(), ByteBuffer.wrap(bytes("held for an interrupted close")));
            AtomicReference<Object> result = new AtomicReference<>();
            AtomicReference<Boolean> flag = new AtomicReference<>();
            AtomicLong ended = new AtomicLong();
            Thread t = startVirtual(() -> {
                try {
                    s.close();
                    result.set("closed");
                } catch (RuntimeException e) {
                    result.set(e);
                }
                ended.set(System.nanoTime());
                flag.set(Thread.currentThread().isInterrupted());
            });
            Thread.sleep(100); // into the drain
            long interrupted = System.nanoTime();
            t.interrupt();
            t.join(TimeUnit.SECONDS.toMillis(BOUND_SECONDS));
            check(!t.isAlive(), "an interrupt left a close draining");
            check("closed".equals(result.get()), "an interrupted close returned " + result.get());
            check(Boolean.TRUE.equals(flag.get()), "an interrupted close cleared the interrupt flag");
            long millis = (ended.get() - interrupted) / 1_000_000;
            check(millis < CLOSE_DRAIN_MILLIS, "an interrupted close drained on for " + millis + " ms (its drain's bound: "
                    + CLOSE_DRAIN_MILLIS + " ms)");
            check(isClosed(s, receiver, ah), "an interrupted close left the endpoint open");
        }

        /**
         * A close while another thread's close drains waits for it parked, and returns when it ends
         * ({@code interrupt} false) or at an interrupt, the flag kept ({@code interrupt} true).
         */
        private static void aSecondCloseParksAndReturns(ProtectionDomain pd, AddressHandleCache cache, UdEndpoint.Options o,
                                                        UdEndpoint receiver, AddressHandle ah, boolean interrupt)
                throws InterruptedException {
            UdEndpoint s = UdEndpoint.open(pd, cache, o);
            s.send(ah, receiver.address(), ByteBuffer.wrap(bytes("held for two closes")));
            Thread first = startVirtual(s::close);
            Thread.sleep(50); // the first close into its drain
            AtomicReference<Object> result = new AtomicReference<>();
            AtomicReference<Boolean> flag = new AtomicReference<>();
            Thread second = startVirtual(() -> {
                try {
                    s.close();
                    result.set("closed");
                } catch (RuntimeException e) {
                    result.set(e);
                }
                flag.set(Thread.currentThread().isInterrupted());
            });
            String what = "a close waiting for another thread's close";
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(BOUND_SECONDS);
            Thread.State state = second.getState(); // one read per look, as awaitParked
            while (state != Thread.State.TIMED_WAITING && second.isAlive() && first.isAlive()
                    && System.nanoTime() - end < 0) {
                Thread.sleep(1);
                state = second.getState();
            }
            check(!first.isAlive() || state == Thread.State.TIMED_WAITING || !second.isAlive(),
                    what + " is " + state + ", not parked");
            if (interrupt && first.isAlive()) {
                second.interrupt();
                second.join(TimeUnit.SECONDS.toMillis(BOUND_SECONDS));
                check(!second.isAlive(), "an interrupt left " + what + " waiting");
                check(Boolean.TRUE.equals(flag.get()), "an interrupted " + what + " cleared the interrupt flag");
            }
            first.join(TimeUnit.SECONDS.toMillis(BOUND_SECONDS));
            second.join(TimeUnit.SECONDS.toMillis(BOUND_SECONDS));
            check(!first.isAlive() && !second.isAlive(), what + " still waits " + BOUND_SECONDS + " s on");
            check("closed".equals(result.get()), what + " returned " + result.get());
            check(isClosed(s, receiver, ah), "two closes left the endpoint open");
        }

        private static boolean isClosed(UdEndpoint s, UdEndpoint receiver, AddressHandle ah) {
            try {
                s.send(ah, receiver.address(), ByteBuffer.wrap(bytes("after close")));
                return false;
            } catch (IllegalStateException e) {
                return true;
            }
        }

        /**
         * Until {@code t} is seen parked in its wait (a virtual thread in poll(2) stays RUNNABLE; one
         * waiting for the endpoint's resend parks in short steps, so is seen parked between them).
         */
        private static void awaitParked(Thread t, String what) throws InterruptedException {
            Thread.sleep(100); // past the arm, into the sleep itself
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(BOUND_SECONDS);
            // One read of the state per look: a wait that parks in 20 us steps is RUNNABLE between
            // them, so a second read after the loop saw it parked may not (seen on a quiet machine).
            Thread.State state = t.getState();
            while (state != Thread.State.TIMED_WAITING && t.isAlive() && System.nanoTime() - end < 0) {
                Thread.sleep(1);
                state = t.getState();
            }
            check(t.isAlive(), what + " ended before it was interrupted or closed");
            check(state == Thread.State.TIMED_WAITING, what + " is " + state + ", never parked, in its wait");
        }
    }
}
