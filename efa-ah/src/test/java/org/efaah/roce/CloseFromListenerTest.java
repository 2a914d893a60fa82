package org.efaah.roce;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.efaah.fixture.LogCapture;
import org.efaah.verbs.Device;
import org.efaah.verbs.ForwardingVerbsProvider;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;

/**
 * Attack round, item 1: the last subscription closed from its own listener while the reader is
 * still in the middle of the change it was delivering. The close frees the channel at once (on the
 * reader's thread); the reader must not use the channel after that. The mock refuses a freed handle
 * with EINVAL, which the stopping reader swallows; the native channel is a freed pointer, so this
 * provider records every call on a handle already closed.
 */
class CloseFromListenerTest {

    /** The mock, recording uses of network channels after their close. */
    static final class ClosedChannelUses extends ForwardingVerbsProvider {
        final Set<Long> closed = ConcurrentHashMap.newKeySet();
        final List<String> usesAfterClose = new CopyOnWriteArrayList<>();

        ClosedChannelUses(MockVerbsProvider mock) {
            super(mock);
        }

        @Override
        public void requestNetworkDump(long channel, boolean links) {
            if (closed.contains(channel)) {
                usesAfterClose.add((links ? "RTM_GETLINK" : "RTM_GETNEIGH") + " dump on closed channel " + channel);
            }
            super.requestNetworkDump(channel, links);
        }

        @Override
        public void closeNetworkChanges(long channel) {
            closed.add(channel);
            super.closeNetworkChanges(channel);
        }
    }

    private static boolean readerThreadAlive() {
        return Thread.getAllStackTraces().keySet().stream().anyMatch(t -> t.getName().equals("efa-ah-network") && t.isAlive());
    }

    @Test
    void aListenerClosingTheLastSubscriptionOnLostNotificationsLeavesTheChannelAlone() throws Exception {
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().efa(false).deviceCount(1).build());
        ClosedChannelUses provider = new ClosedChannelUses(mock);
        AtomicReference<RoceNetwork.Subscription> self = new AtomicReference<>();
        CountDownLatch closedByListener = new CountDownLatch(1);
        try (LogCapture log = LogCapture.of(RoceNetwork.class);
             Device device = Device.openFirst(provider)) {
            self.set(RoceNetwork.subscribe(device, e -> {
                if (e.kind() == NetworkEvent.Kind.RESYNC) {
                    self.get().close(); // the last one: the reader stops, its channel is freed now
                    closedByListener.countDown();
                }
            }));
            NetworkWatchers.awaitTablesRead(provider, 10);
            mock.network().loseNotifications(); // RESYNC, then the reader asks for the tables again
            assertTrue(closedByListener.await(10, TimeUnit.SECONDS), "the listener heard RESYNC");
            for (int i = 0; i < 500 && readerThreadAlive(); i++) {
                TimeUnit.MILLISECONDS.sleep(10);
            }
            assertFalse(readerThreadAlive(), "the reader ended");
            assertEquals(1, provider.closed.size(), "the channel was freed");
            assertEquals(List.of(), provider.usesAfterClose);
            assertEquals(1, log.count(Level.WARN, "network notifications were lost"), log.lines().toString());
        }
    }
}
