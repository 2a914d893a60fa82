package org.efaah.ud;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.InterruptedOperationException;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 11 case 3: no endpoint call waits while holding a lock, and every blocking call returns
 * promptly on interrupt and on close. Bounds are generous (1 s where the old code took 2-6 s).
 */
@org.junit.jupiter.api.Tag("timing") // scripts/test runs it under load: see TimingRounds
class UdEndpointWaitingTest {
    private static final long PROMPT_NANOS = TimeUnit.SECONDS.toNanos(1);

    private final MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().deviceCount(2).build());
    private final AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.PARANOID).build();
    private final Device d0 = Device.open(mock, "efa_0");
    private final Device d1 = Device.open(mock, "efa_1");
    private final ProtectionDomain pd0 = d0.allocatePd();
    private final ProtectionDomain pd1 = d1.allocatePd();
    private final UdEndpoint server = UdEndpoint.open(pd0, cache, UdEndpoint.Options.defaults());
    private final UdEndpoint client = UdEndpoint.open(pd1, cache, UdEndpoint.Options.defaults());

    @AfterEach
    void closeAll() {
        server.close();
        client.close();
        cache.close();
        pd0.close();
        pd1.close();
        d0.close();
        d1.close();
    }

    @Test
    void aReplyIsNotHeldUpByALoopOfReceivesInAnotherThread() throws Exception {
        try (AddressHandle toServer = cache.acquire(pd1, AddressHandleAttributes.forGid(server.address().gid()))) {
            client.send(toServer, server.address(), ByteBuffer.wrap(new byte[] {1}));
            Datagram d = server.receive(5, TimeUnit.SECONDS);
            assertNotNull(d);
            AtomicBoolean stop = new AtomicBoolean();
            CountDownLatch looping = new CountDownLatch(1);
            CompletableFuture<Void> receiver = CompletableFuture.runAsync(() -> {
                looping.countDown();
                while (!stop.get()) {
                    server.receive(2, TimeUnit.SECONDS);
                }
            });
            looping.await();
            Thread.sleep(100);
            long t0 = System.nanoTime();
            server.reply(d, ByteBuffer.wrap(new byte[] {2}));
            long took = System.nanoTime() - t0;
            stop.set(true);
            receiver.get(10, TimeUnit.SECONDS);
            assertTrue(took < PROMPT_NANOS, "reply waited " + took / 1_000_000 + " ms behind receive(2 s)");
            assertNotNull(client.receive(5, TimeUnit.SECONDS));
            assertTrue(server.flush(5, TimeUnit.SECONDS));
        }
    }

    @Test
    void closeIsNotHeldUpByAReceiveAndTheReceiveEndsPromptly() throws Exception {
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        AtomicReference<Long> endedAt = new AtomicReference<>();
        CountDownLatch started = new CountDownLatch(1);
        Thread receiver = new Thread(() -> {
            started.countDown();
            try {
                server.receive(6, TimeUnit.SECONDS);
            } catch (Throwable t) {
                thrown.set(t);
            }
            endedAt.set(System.nanoTime());
        });
        receiver.start();
        started.await();
        Thread.sleep(100);
        long t0 = System.nanoTime();
        server.close();
        long closeTook = System.nanoTime() - t0;
        receiver.join(TimeUnit.SECONDS.toMillis(10));
        assertTrue(closeTook < PROMPT_NANOS, "close waited " + closeTook / 1_000_000 + " ms behind receive(6 s)");
        assertTrue(endedAt.get() - t0 < PROMPT_NANOS, "the receive went on " + (endedAt.get() - t0) / 1_000_000
                + " ms after close");
        assertInstanceOf(IllegalStateException.class, thrown.get());
    }

    @Test
    void anInterruptedReceiveThrowsPromptlyAndKeepsTheInterrupt() throws Exception {
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        AtomicBoolean flagKept = new AtomicBoolean();
        AtomicReference<Long> endedAt = new AtomicReference<>();
        CountDownLatch started = new CountDownLatch(1);
        Thread receiver = new Thread(() -> {
            started.countDown();
            try {
                server.receive(6, TimeUnit.SECONDS);
            } catch (Throwable t) {
                thrown.set(t);
                flagKept.set(Thread.currentThread().isInterrupted());
            }
            endedAt.set(System.nanoTime());
        });
        receiver.start();
        started.await();
        Thread.sleep(100);
        long t0 = System.nanoTime();
        receiver.interrupt();
        receiver.join(TimeUnit.SECONDS.toMillis(10));
        assertTrue(endedAt.get() - t0 < PROMPT_NANOS, "the interrupted receive went on "
                + (endedAt.get() - t0) / 1_000_000 + " ms");
        assertInstanceOf(InterruptedOperationException.class, thrown.get());
        assertEquals("receive interrupted", thrown.get().getMessage(), "names the operation");
        assertTrue(flagKept.get(), "the interrupt flag is set again");
        // The endpoint still works.
        try (AddressHandle toServer = cache.acquire(pd1, AddressHandleAttributes.forGid(server.address().gid()))) {
            client.send(toServer, server.address(), ByteBuffer.wrap(new byte[] {3}));
            assertEquals(1, server.receive(5, TimeUnit.SECONDS).payload().length);
            assertTrue(client.flush(5, TimeUnit.SECONDS));
        }
    }

    /** A send waiting for a free slot (send depth 1, completions held back) in another thread. */
    private Thread blockedSend(UdEndpoint sender, AddressHandle ah, AtomicReference<Throwable> thrown,
                               AtomicReference<Long> endedAt) throws InterruptedException {
        CountDownLatch started = new CountDownLatch(1);
        Thread t = new Thread(() -> {
            started.countDown();
            try {
                sender.send(ah, server.address(), ByteBuffer.wrap(new byte[] {2}));
            } catch (Throwable x) {
                thrown.set(x);
            }
            endedAt.set(System.nanoTime());
        });
        t.start();
        started.await();
        Thread.sleep(100);
        return t;
    }

    @Test
    void aSendWaitingForASlotEndsPromptlyOnInterruptAndOnClose() throws Exception {
        UdEndpoint sender = UdEndpoint.open(pd1, cache, UdEndpoint.Options.defaults().withDepths(1, 4));
        try (AddressHandle toServer = cache.acquire(pd1, AddressHandleAttributes.forGid(server.address().gid()))) {
            mock.holdSendCompletions(true);
            sender.send(toServer, server.address(), ByteBuffer.wrap(new byte[] {1})); // takes the one slot
            AtomicReference<Throwable> thrown = new AtomicReference<>();
            AtomicReference<Long> endedAt = new AtomicReference<>();
            Thread t = blockedSend(sender, toServer, thrown, endedAt);
            long t0 = System.nanoTime();
            t.interrupt();
            t.join(10_000);
            assertTrue(endedAt.get() - t0 < PROMPT_NANOS, "interrupted send went on " + (endedAt.get() - t0) / 1_000_000 + " ms");
            assertInstanceOf(InterruptedOperationException.class, thrown.get());
            assertEquals("send interrupted", thrown.get().getMessage(), "names the operation");

            Thread f = new Thread(() -> {
                try {
                    sender.flush(6, TimeUnit.SECONDS);
                } catch (Throwable x) {
                    thrown.set(x);
                }
                endedAt.set(System.nanoTime());
            });
            thrown.set(null);
            t = blockedSend(sender, toServer, thrown, endedAt);
            f.start();
            Thread.sleep(100);
            t0 = System.nanoTime();
            sender.close();
            long closeNanos = System.nanoTime() - t0;
            t.join(10_000);
            f.join(10_000);
            // close waits up to 1 s for the held send, then destroys the QP; the waiters end then.
            assertTrue(closeNanos < 2 * PROMPT_NANOS, "close took " + closeNanos / 1_000_000 + " ms");
            assertTrue(endedAt.get() - t0 < 2 * PROMPT_NANOS);
            assertInstanceOf(IllegalStateException.class, thrown.get());
        } finally {
            mock.holdSendCompletions(false);
            sender.close();
        }
    }
}
