package org.efaah.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.efaah.fixture.LogCapture;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;

/**
 * Issue 17 case 6: "efa-ah-events-efa_0 did not stop within 5000 ms" ended every test run. A
 * device closed by a thread whose interrupt status is set (a command or a test interrupted in a
 * receive, whose exception keeps the status, then closing its device in try-with-resources) saw
 * the join of its event reader throw at once, logged that error without having waited, and left
 * the channel allocated. The stop must wait for the reader, free the channel, and keep the
 * interrupt status for the caller.
 */
class DeviceEventReaderStopTest {

    @Test
    void aCloseFromAnInterruptedThreadWaitsForTheReaderAndFreesItsChannel() throws Exception {
        MockVerbsProvider mock = new MockVerbsProvider();
        Device device = Device.openFirst(mock);
        CountDownLatch inListener = new CountDownLatch(1);
        // The reader is busy with an event (a listener taking its time) when the close comes.
        device.addEventListener(e -> {
            inListener.countDown();
            try {
                Thread.sleep(300);
            } catch (InterruptedException ignored) {
                Thread.currentThread().interrupt();
            }
        });
        mock.raiseEvent(device.name(), DeviceEvent.Kind.PORT_ACTIVE, 1);
        assertTrue(inListener.await(10, TimeUnit.SECONDS));
        boolean stillInterrupted;
        try (LogCapture log = LogCapture.of(DeviceEventReader.class)) {
            Thread.currentThread().interrupt();
            try {
                device.close();
            } finally {
                stillInterrupted = Thread.interrupted();
            }
            assertEquals(List.of(), log.messages(Level.ERROR));
        }
        assertTrue(stillInterrupted, "the caller's interrupt status is kept");
        assertFalse(readerAlive("efa-ah-events-" + device.name()), "the event reader ended");
    }

    private static boolean readerAlive(String name) throws InterruptedException {
        for (int i = 0; i < 100; i++) {
            if (Thread.getAllStackTraces().keySet().stream().noneMatch(t -> t.getName().equals(name) && t.isAlive())) {
                return false;
            }
            Thread.sleep(20);
        }
        return true;
    }
}
