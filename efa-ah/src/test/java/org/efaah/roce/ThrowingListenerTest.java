package org.efaah.roce;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.efaah.fixture.LogCapture;
import org.efaah.verbs.Device;
import org.efaah.verbs.Gid;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;

/** Attack round, item 1: RoceNetwork.subscribe's claim that a listener that throws is logged and does not stop the others. */
class ThrowingListenerTest {
    private static final Gid PEER = Gid.parse("::ffff:10.9.1.250");

    @Test
    void aListenerThatThrowsIsLoggedAndTheOthersStillHear() throws Exception {
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().efa(false).deviceCount(1).build());
        mock.network().setNeighbour(0, PEER, "02:00:0a:09:01:fa");
        AtomicInteger thrown = new AtomicInteger();
        BlockingQueue<NetworkEvent> heard = new LinkedBlockingQueue<>();
        try (LogCapture log = LogCapture.of(RoceNetwork.class);
             Device device = Device.openFirst(mock);
             RoceNetwork.Subscription failing = RoceNetwork.subscribe(device, e -> {
                 thrown.incrementAndGet();
                 throw new IllegalStateException("listener bug");
             });
             RoceNetwork.Subscription other = RoceNetwork.subscribe(device, heard::add)) {
            NetworkWatchers.awaitTablesRead(mock, 10);
            mock.network().setNeighbour(0, PEER, "02:00:0a:09:ff:fa");
            NetworkEvent first = heard.poll(10, TimeUnit.SECONDS);
            assertNotNull(first, "the second listener hears the change after the first threw");
            assertEquals(NetworkEvent.Kind.NEIGHBOUR_CHANGED, first.kind());
            mock.network().setNeighbour(0, PEER, "02:00:0a:09:01:fa");
            assertNotNull(heard.poll(10, TimeUnit.SECONDS), "and the next one: the reader goes on");
            assertEquals(2, thrown.get());
            List<String> errors = log.messages(Level.ERROR);
            assertEquals(2, errors.size(), errors.toString());
            assertTrue(errors.get(0).contains(device.name()) && errors.get(0).contains("network listener failed"),
                    errors.get(0));
        }
    }
}
