package org.efaah.roce;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.efaah.verbs.Device;
import org.efaah.verbs.DeviceEvent;
import org.efaah.verbs.ForwardingVerbsProvider;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;

/**
 * Attack round, item 1: a subscription's first read of its GID netdevs, on the subscriber's
 * thread, racing the re-read a GID_CHANGE starts on the device's event thread. The older read
 * must not overwrite the newer one's answer.
 */
class NetdevRereadRaceTest {
    private static final int MOVED_TO = 4242;

    /** The mock, whose GID now belongs to netdev {@link #MOVED_TO} once moved, and whose first read on one thread stalls. */
    static final class MovingGid extends ForwardingVerbsProvider {
        volatile boolean moved;
        volatile Thread stallOn;
        final CountDownLatch stalled = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);

        MovingGid(MockVerbsProvider mock) {
            super(mock);
        }

        @Override
        public int queryGidNetdev(long context, int portNum, int index) {
            int ifindex = moved ? MOVED_TO : super.queryGidNetdev(context, portNum, index);
            if (Thread.currentThread() == stallOn) {
                stallOn = null;
                stalled.countDown();
                try {
                    release.await(10, TimeUnit.SECONDS); // read, not yet written: the GID moves meanwhile
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return ifindex;
        }
    }

    @Test
    void theFirstReadOfGidNetdevsDoesNotUndoAGidChangesRereadThatFinishedBeforeIt() throws Exception {
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().efa(false).deviceCount(1).build());
        MovingGid provider = new MovingGid(mock);
        AtomicReference<RoceNetwork.Subscription> made = new AtomicReference<>();
        try (Device device = Device.openFirst(provider)) {
            Thread subscriber = new Thread(() -> made.set(RoceNetwork.subscribe(device, e -> { })), "subscriber");
            provider.stallOn = subscriber;
            subscriber.start();
            assertTrue(provider.stalled.await(10, TimeUnit.SECONDS));
            provider.moved = true;
            CountDownLatch reread = new CountDownLatch(1);
            device.addEventListener(e -> reread.countDown()); // after the subscription's: its re-read is done
            mock.raiseEvent(device.name(), DeviceEvent.Kind.GID_CHANGE, 1);
            assertTrue(reread.await(10, TimeUnit.SECONDS));
            provider.release.countDown();
            subscriber.join(10_000);
            try (RoceNetwork.Subscription s = made.get()) {
                assertEquals(Set.of(MOVED_TO), s.netdevs().keySet(), "the GID's netdev after the GID_CHANGE");
            }
        }
    }
}
