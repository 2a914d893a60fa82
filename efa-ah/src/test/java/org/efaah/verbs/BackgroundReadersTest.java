package org.efaah.verbs;

import org.efaah.internal.BackgroundReader;
import org.efaah.verbs.spi.AsyncEvent;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Predicate;
import org.efaah.health.HealthCheck;
import org.efaah.health.HealthStatus;
import org.efaah.health.HealthThresholds;
import org.efaah.fixture.LogCapture;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;

/**
 * Issue 28 case 6 (kind: readers outlive errors), the device's side: the async-event reader
 * outlives a failed read. The network reader, the other {@link BackgroundReader}, is checked in
 * {@code org.efaah.roce.NetworkReaderTest}.
 */
class BackgroundReadersTest {
    /** The mock, with reads of events that fail while told to. */
    static final class FailingReads extends ForwardingVerbsProvider {
        final MockVerbsProvider mock;
        final AtomicBoolean failEvents = new AtomicBoolean();

        FailingReads(MockVerbsProvider mock) {
            super(mock);
            this.mock = mock;
        }

        @Override
        public List<AsyncEvent> awaitAsyncEvents(long channel, int timeoutMillis) {
            if (failEvents.get()) {
                throw new VerbsException("ibv_get_async_event", Errno.EIO, "injected");
            }
            return super.awaitAsyncEvents(channel, timeoutMillis);
        }
    }

    private static HealthCheck await(Device device, String check, Predicate<HealthCheck> until) throws Exception {
        HealthCheck last = null;
        for (int i = 0; i < 1000; i++) {
            last = device.health(HealthThresholds.DEFAULTS).checks().stream()
                    .filter(c -> c.name().equals(check)).findFirst().orElse(null);
            if (last != null && until.test(last)) {
                return last;
            }
            TimeUnit.MILLISECONDS.sleep(10);
        }
        throw new AssertionError(check + " never became what was awaited; last " + last);
    }

    @Test
    void theEventReaderOutlivesAFailedReadSaysDegradedWithTheCauseAndRecovers() throws Exception {
        FailingReads provider = new FailingReads(new MockVerbsProvider());
        BlockingQueue<DeviceEvent> events = new LinkedBlockingQueue<>();
        try (LogCapture log = LogCapture.of(BackgroundReader.class);
             Device device = Device.openFirst(provider)) {
            device.addEventListener(events::add);
            assertEquals(HealthStatus.UP, await(device, "event_reader", c -> true).status());
            provider.failEvents.set(true);
            HealthCheck degraded = await(device, "event_reader", c -> c.status() == HealthStatus.DEGRADED);
            assertTrue(degraded.message().contains("EIO"), degraded.message());
            assertEquals(HealthStatus.DEGRADED, device.health(HealthThresholds.DEFAULTS).status());
            provider.failEvents.set(false);
            provider.mock.raiseEvent(device.name(), DeviceEvent.Kind.PORT_ACTIVE, 1);
            DeviceEvent e = events.poll(10, TimeUnit.SECONDS);
            assertNotNull(e, "an event after the failed reads is delivered");
            assertEquals(DeviceEvent.Kind.PORT_ACTIVE, e.kind());
            await(device, "event_reader", c -> c.status() == HealthStatus.UP);
            assertEquals(1, log.messages(Level.WARN).size(), "one warning for the run of failures: "
                    + log.messages(Level.WARN));
        }
    }
}
