package org.efaah.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.efaah.fixture.LogCapture;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 33 race 5.4, the device's side: a listener added while the device closes. Each add is
 * decided with the close's taking of its listeners, so that an accepted listener is called by
 * the close exactly once and a refused one (IllegalStateException) never, and is not kept.
 * Before the fix an add made while the close was calling its listeners was accepted and never
 * called, so its adder had to look at isClosed afterwards and could not tell which it was.
 */
class CloseListenerRegistrationTest {

    /** The mock, whose free of the asynchronous-event channel (the close's first step) can be held. */
    static final class HeldReaderStop extends ForwardingVerbsProvider {
        volatile CountDownLatch freeing;
        volatile CountDownLatch letFree;

        HeldReaderStop(MockVerbsProvider mock) {
            super(mock);
        }

        @Override
        public void closeAsyncEvents(long channel) {
            CountDownLatch f = freeing;
            if (f != null) {
                f.countDown();
                await(letFree);
            }
            super.closeAsyncEvents(channel);
        }
    }

    @ParameterizedTest(name = "efa={0}")
    @ValueSource(booleans = {true, false})
    void aListenerAddedOnceTheCloseCallsItsListenersIsRefusedNotLost(boolean efa) throws Exception {
        Device device = Device.openFirst(new MockVerbsProvider(MockConfig.builder().efa(efa).build()));
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try (LogCapture log = LogCapture.of(Device.class)) {
            CountDownLatch calling = new CountDownLatch(1);
            CountDownLatch letGo = new CountDownLatch(1);
            device.addCloseListener(d -> {
                calling.countDown();
                await(letGo);
            });
            Future<?> close = pool.submit(device::close);
            assertTrue(calling.await(10, TimeUnit.SECONDS), "the close calls its listeners");
            AtomicInteger lateCalls = new AtomicInteger();
            AtomicInteger lateEvents = new AtomicInteger();
            IllegalStateException refused = assertThrows(IllegalStateException.class,
                    () -> device.addCloseListener(d -> lateCalls.incrementAndGet()),
                    "accepted, though the close had begun calling its listeners");
            assertTrue(refused.getMessage().contains("is closed"), refused.getMessage());
            assertThrows(IllegalStateException.class, () -> device.addEventListener(e -> lateEvents.incrementAndGet()));
            letGo.countDown();
            close.get(10, TimeUnit.SECONDS);
            assertEquals(0, lateCalls.get());
            assertEquals(List.of(), log.messages(Level.ERROR));
        } finally {
            pool.shutdownNow();
        }
    }

    /** The other half: a listener added after the close began, before it calls its listeners, is called once. */
    @ParameterizedTest(name = "efa={0}")
    @ValueSource(booleans = {true, false})
    void aListenerAddedWhileTheCloseStopsItsReaderIsCalledOnce(boolean efa) throws Exception {
        HeldReaderStop p = new HeldReaderStop(new MockVerbsProvider(MockConfig.builder().efa(efa).build()));
        p.freeing = new CountDownLatch(1);
        p.letFree = new CountDownLatch(1);
        Device device = Device.openFirst(p);
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            Future<?> close = pool.submit(device::close);
            assertTrue(p.freeing.await(10, TimeUnit.SECONDS), "the close is stopping the event reader");
            AtomicInteger calls = new AtomicInteger();
            device.addCloseListener(d -> calls.incrementAndGet());
            p.letFree.countDown();
            close.get(10, TimeUnit.SECONDS);
            assertEquals(1, calls.get(), "called by the close it was added during, once");
            assertThrows(IllegalStateException.class, () -> device.addCloseListener(d -> calls.incrementAndGet()));
            assertEquals(1, calls.get());
        } finally {
            pool.shutdownNow();
        }
    }

    private static void await(CountDownLatch latch) {
        try {
            assertTrue(latch.await(10, TimeUnit.SECONDS));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
