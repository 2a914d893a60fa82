package org.efaah.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.efaah.verbs.spi.AsyncEvent;
import org.efaah.verbs.spi.AsyncEventVerbs;
import org.efaah.verbs.spi.CompletionChannelVerbs;
import org.efaah.verbs.spi.EventChannel;
import org.junit.jupiter.api.Test;

/**
 * The SPI's one channel shape ({@link EventChannel}): a provider that implements a facet's own
 * methods, and nothing of the shape, offers the facet and has its channels in the shape; a wait
 * returns what is pending, on a wake, and on a stop where the channel has one; on the mock a wait
 * on an event channel returns when its context closes.
 */
class EventChannelTest {

    /** The core over the mock, plus the four async-event methods; no facet accessor overridden. */
    static final class EventsByOwnMethods extends CoreOnlyProviderTest.CoreOnly implements AsyncEventVerbs {
        @Override public long openAsyncEvents(long context) { return mock.openAsyncEvents(context); }
        @Override public List<AsyncEvent> awaitAsyncEvents(long channel, int timeoutMillis) {
            return mock.awaitAsyncEvents(channel, timeoutMillis);
        }
        @Override public void wakeAsyncEvents(long channel) { mock.wakeAsyncEvents(channel); }
        @Override public void closeAsyncEvents(long channel) { mock.closeAsyncEvents(channel); }
    }

    @Test
    void aProviderImplementingAFacetsMethodsOffersItsChannelsInTheOneShape() {
        EventsByOwnMethods p = new EventsByOwnMethods();
        assertSame(p, p.asyncEvents());
        String device = p.deviceNames().get(0);
        long context = p.openDevice(device);
        try (EventChannel<List<AsyncEvent>> channel = p.asyncEvents().asyncEventChannel(p.openAsyncEvents(context))) {
            p.mock.raiseEvent(device, DeviceEvent.Kind.PORT_ERR, 1);
            List<AsyncEvent> events = channel.await(10_000);
            assertEquals(1, events.size());
            assertEquals(DeviceEvent.Kind.PORT_ERR.value(), events.get(0).eventType());
            channel.wake();
            assertEquals(List.of(), channel.await(60_000));
            VerbsException e = assertThrows(VerbsException.class, channel::stop);
            assertEquals(Errno.EOPNOTSUPP, e.errno());
        } finally {
            p.closeDevice(context);
        }
    }

    @Test
    void aStoppedCompletionChannelAnswersChannelStoppedToEveryWait() {
        MockVerbsProvider p = new MockVerbsProvider();
        long context = p.openDevice(p.deviceNames().get(0));
        try {
            EventChannel<Integer> channel = p.completionChannels().completionChannel(p.createCompletionChannel(context));
            channel.wake();
            assertEquals(0, channel.await(60_000));
            channel.stop();
            assertEquals(CompletionChannelVerbs.CHANNEL_STOPPED, channel.await(60_000));
            assertEquals(CompletionChannelVerbs.CHANNEL_STOPPED, channel.await(60_000));
            channel.close();
        } finally {
            p.closeDevice(context);
        }
    }

    @Test
    void aWaitOnTheMocksEventChannelReturnsWhenItsContextCloses() throws Exception {
        MockVerbsProvider p = new MockVerbsProvider();
        long context = p.openDevice(p.deviceNames().get(0));
        long channel = p.openAsyncEvents(context);
        CompletableFuture<List<AsyncEvent>> wait =
                CompletableFuture.supplyAsync(() -> p.awaitAsyncEvents(channel, 600_000));
        long giveUp = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!wait.isDone() && !waiting() && System.nanoTime() < giveUp) {
            Thread.sleep(1);
        }
        p.closeDevice(context);
        assertEquals(List.of(), wait.get(60, TimeUnit.SECONDS));
        assertFalse(wait.isCompletedExceptionally());
    }

    /** Whether some thread of the common pool is waiting (in the mock's channel). */
    private static boolean waiting() {
        return Thread.getAllStackTraces().keySet().stream()
                .anyMatch(t -> t.getState() == Thread.State.TIMED_WAITING
                        && java.util.Arrays.stream(t.getStackTrace()).anyMatch(f -> f.getClassName().endsWith("MockChannel")));
    }
}
