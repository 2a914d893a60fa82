package org.efaah.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.util.ArrayList;
import java.util.List;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/** What {@link Device#addCloseListener} promises: once, before any child is freed, whatever another listener does. */
class DeviceCloseListenerTest {

    @Test
    void closeListenersRunOnceBeforeAnyChildIsFreedEvenWhenOneThrows() {
        Logger log = (Logger) LoggerFactory.getLogger(Device.class);
        ListAppender<ILoggingEvent> events = new ListAppender<>();
        events.start();
        log.addAppender(events);
        log.setAdditive(false);
        try {
            Device device = Device.openFirst(new MockVerbsProvider());
            ProtectionDomain pd = device.allocatePd();
            HardwareAddressHandle ah = pd.createAh(AddressHandleAttributes.forGid("fe80::1"));
            List<String> seen = new ArrayList<>();
            device.addCloseListener(d -> {
                throw new IllegalStateException("a broken listener");
            });
            device.addCloseListener(d -> seen.add("first: pd closed " + pd.isClosed() + ", AH destroyed " + ah.isDestroyed()
                    + ", same device " + (d == device)));
            java.util.function.Consumer<Device> removed = d -> seen.add("removed one");
            device.addCloseListener(removed);
            device.removeCloseListener(removed);
            device.close();
            device.close();
            assertEquals(List.of("first: pd closed false, AH destroyed false, same device true"), seen);
            assertTrue(pd.isClosed() && ah.isDestroyed() && device.isClosed());
            assertTrue(events.list.stream().anyMatch(e -> e.getLevel() == Level.ERROR
                    && e.getFormattedMessage().contains("close listener failed")), "the broken listener is logged");
            assertFalse(events.list.stream().anyMatch(e -> e.getLevel() == Level.ERROR
                    && !e.getFormattedMessage().contains("close listener failed")));
        } finally {
            log.detachAppender(events);
            log.setAdditive(true);
        }
    }
}
