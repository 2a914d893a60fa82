package org.efaah.roce;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.efaah.fixture.LogCapture;
import org.efaah.internal.BackgroundReader;
import org.efaah.verbs.Device;
import org.efaah.verbs.DeviceEvent;
import org.efaah.verbs.ForwardingVerbsProvider;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;

/**
 * Attack round, item 1: a device closed while its event thread re-reads a subscription's GID
 * netdevs (a GID_CHANGE). The close must not wait on its own event thread for the 5 s stop bound.
 */
@org.junit.jupiter.api.Tag("timing") // scripts/test runs it under load: see TimingRounds
class CloseDuringGidRereadTest {

    /** The mock, whose first GID netdev query on the device's event thread is slow while armed. */
    static final class SlowReread extends ForwardingVerbsProvider {
        final AtomicBoolean armed = new AtomicBoolean();
        final CountDownLatch rereading = new CountDownLatch(1);

        SlowReread(MockVerbsProvider mock) {
            super(mock);
        }

        @Override
        public int queryGidNetdev(long context, int portNum, int index) {
            if (Thread.currentThread().getName().startsWith("efa-ah-events") && armed.compareAndSet(true, false)) {
                rereading.countDown();
                try {
                    TimeUnit.MILLISECONDS.sleep(300); // the close begins meanwhile
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return super.queryGidNetdev(context, portNum, index);
        }
    }

    @Test
    void aDeviceClosedWhileItsEventThreadRereadsGidNetdevsClosesPromptly() throws Exception {
        MockVerbsProvider mock = new MockVerbsProvider(
                MockConfig.builder().efa(false).deviceCount(1).gidTableLength(4).build());
        SlowReread provider = new SlowReread(mock);
        try (LogCapture log = LogCapture.of(BackgroundReader.class)) {
            Device device = Device.openFirst(provider);
            RoceNetwork.subscribe(device, e -> { });
            provider.armed.set(true);
            mock.raiseEvent(device.name(), DeviceEvent.Kind.GID_CHANGE, 1);
            assertTrue(provider.rereading.await(10, TimeUnit.SECONDS), "the event thread re-reads the GID netdevs");
            long start = System.nanoTime();
            device.close();
            long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertTrue(millis < 2_000, "device.close() took " + millis + " ms");
            assertEquals(List.of(), log.messages(Level.WARN));
        }
    }
}
