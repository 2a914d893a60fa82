package org.efaah.roce;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.efaah.fixture.LogCapture;
import org.efaah.verbs.Device;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;

/**
 * Issue 33, section 5 (suspected): two threads close the last subscription at once while its
 * reader is inside the listener. The first close stops the reader and waits for it; the second
 * must not return before the reader has stopped either (the device's close listener is such a
 * second close: the device then frees its context under a reader still delivering its events).
 * The listener is held by a latch, so the order is forced, not timed.
 */
class ConcurrentCloseTest {

    private static Thread readerThread() {
        return Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().equals("efa-ah-network"))
                .findFirst().orElse(null);
    }

    /**
     * Waits (bounded) until {@code t} has ended, or waits inside a subscription's end (the stop of
     * the network reader; not, say, the device's close stopping its event reader first).
     */
    private static void awaitBlockedOrDone(Thread t) throws InterruptedException {
        for (int i = 0; i < 2000; i++) {
            Thread.State s = t.getState();
            if (s == Thread.State.TERMINATED || (s == Thread.State.WAITING || s == Thread.State.TIMED_WAITING)
                    && java.util.Arrays.stream(t.getStackTrace()).anyMatch(f -> f.getClassName()
                            .equals(NetworkWatcher.class.getName()) && f.getMethodName().equals("unsubscribe"))) {
                return;
            }
            TimeUnit.MILLISECONDS.sleep(5);
        }
        throw new AssertionError(t.getName() + " neither waited in a subscription's end nor ended in 10 s: "
                + t.getState());
    }

    @Test
    void aSecondConcurrentCloseReturnsOnlyOnceTheReaderHasStopped() throws Exception {
        closeTwiceWhileTheListenerRuns(false);
    }

    /** The second close is the device's: its close listener ends the subscription, then it frees its context. */
    @Test
    void aDeviceClosedDuringTheSubscriptionsCloseReturnsOnlyOnceTheReaderHasStopped() throws Exception {
        closeTwiceWhileTheListenerRuns(true);
    }

    private static void closeTwiceWhileTheListenerRuns(boolean secondIsTheDevicesClose) throws Exception {
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().efa(false).deviceCount(1).build());
        CountDownLatch inListener = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicBoolean readerAliveWhenSecondReturned = new AtomicBoolean();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        try (LogCapture log = LogCapture.of(RoceNetwork.class);
             Device device = Device.openFirst(mock)) {
            RoceNetwork.Subscription s = RoceNetwork.subscribe(device, e -> {
                if (e.kind() == NetworkEvent.Kind.RESYNC) {
                    inListener.countDown();
                    try {
                        release.await(10, TimeUnit.SECONDS);
                    } catch (InterruptedException ie) {
                        Thread.currentThread().interrupt();
                    }
                }
            });
            NetworkWatchers.awaitTablesRead(mock, 10);
            Thread reader = readerThread();
            mock.network().loseNotifications(); // RESYNC: the reader enters the listener and stays
            assertTrue(inListener.await(10, TimeUnit.SECONDS), "the listener heard RESYNC");

            Thread first = new Thread(s::close, "first-close");
            first.start();
            awaitBlockedOrDone(first); // joining the reader, which the latch holds
            Thread second = new Thread(() -> {
                try {
                    if (secondIsTheDevicesClose) {
                        device.close();
                    } else {
                        s.close();
                    }
                    readerAliveWhenSecondReturned.set(reader.isAlive());
                } catch (Throwable t) {
                    failure.set(t);
                }
            }, "second-close");
            second.start();
            awaitBlockedOrDone(second); // waits for the stop (fixed) or has returned at once (before)
            release.countDown();
            first.join(10_000);
            second.join(10_000);
            assertFalse(first.isAlive() || second.isAlive(), "both closes returned");
            assertTrue(failure.get() == null, () -> "the second close threw " + failure.get());
            assertEquals(List.of("network notifications were lost (socket overflow): every RoCE port's AHs are"
                    + " invalidated and the link and neighbour tables read again"), log.messages(Level.WARN),
                    "the provoked loss, and no reader that failed to stop");
            assertFalse(readerAliveWhenSecondReturned.get(),
                    "the second close returned while the reader was still running the listener");
            assertFalse(reader.isAlive(), "the reader stopped");
        }
    }
}
