package org.efaah.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;

/** Issue 10 item 3, device half: the per-device event reader on the mock, and DEVICE_FATAL. */
class DeviceEventsTest {
    private final MockVerbsProvider mock = new MockVerbsProvider();

    private static DeviceEvent next(BlockingQueue<DeviceEvent> events) throws InterruptedException {
        DeviceEvent e = events.poll(10, TimeUnit.SECONDS);
        assertNotNull(e, "no event within 10 s");
        return e;
    }

    private static boolean readerRunning(String device) {
        return Thread.getAllStackTraces().keySet().stream()
                .anyMatch(t -> t.getName().equals("efa-ah-events-" + device) && t.isAlive());
    }

    @Test
    void everyOpenContextHearsEachEventInOrderAndTheReaderStopsAtClose() throws Exception {
        BlockingQueue<DeviceEvent> first = new LinkedBlockingQueue<>();
        BlockingQueue<DeviceEvent> second = new LinkedBlockingQueue<>();
        Device a = Device.openFirst(mock);
        Device b = Device.openFirst(mock);
        a.addEventListener(first::add);
        b.addEventListener(second::add);
        assertTrue(readerRunning("efa_0"));
        mock.raiseEvent("efa_0", DeviceEvent.Kind.GID_CHANGE, 1);
        mock.raiseEvent("efa_0", DeviceEvent.Kind.PORT_ERR, 1);
        mock.raiseEvent("efa_0", DeviceEvent.Kind.PORT_ACTIVE, 1);
        for (BlockingQueue<DeviceEvent> q : List.of(first, second)) {
            DeviceEvent gid = next(q);
            assertEquals(DeviceEvent.Kind.GID_CHANGE, gid.kind());
            assertEquals(1, gid.portNum());
            assertEquals(DeviceEvent.Kind.PORT_ERR, next(q).kind());
            assertEquals(DeviceEvent.Kind.PORT_ACTIVE, next(q).kind());
        }
        assertTrue(first.stream().allMatch(e -> e.device() == a));
        // A reader blocked in its wait is woken by the close: no hang, the thread ends.
        assertTimeoutPreemptively(Duration.ofSeconds(5), () -> {
            a.close();
            b.close();
        });
        for (int i = 0; i < 100 && readerRunning("efa_0"); i++) {
            TimeUnit.MILLISECONDS.sleep(10);
        }
        assertFalse(readerRunning("efa_0"), "the event thread ended with the device");
    }

    @Test
    void afterDeviceFatalNewWorkIsRefusedAndCloseStillFreesEverything() throws Exception {
        BlockingQueue<DeviceEvent> events = new LinkedBlockingQueue<>();
        Device device = Device.openFirst(mock);
        device.addEventListener(events::add);
        ProtectionDomain pd = device.allocatePd();
        HardwareAddressHandle ah = pd.createAh(AddressHandleAttributes.forGid("fe80::1"));
        CompletionQueue cq = device.createCq(4);
        MemoryRegion mr = pd.registerMemory(ByteBuffer.allocateDirect(64));
        mock.raiseEvent("efa_0", DeviceEvent.Kind.DEVICE_FATAL, 0);
        DeviceEvent fatal = next(events);
        assertEquals(DeviceEvent.Kind.DEVICE_FATAL, fatal.kind());
        assertEquals(0, fatal.portNum());
        assertTrue(device.isFatal());
        for (Runnable op : List.<Runnable>of(device::allocatePd, () -> device.createCq(4),
                () -> pd.createAh(AddressHandleAttributes.forGid("fe80::2")),
                () -> pd.registerMemory(ByteBuffer.allocateDirect(8)))) {
            IllegalStateException e = assertThrows(IllegalStateException.class, op::run);
            assertTrue(e.getMessage().contains("efa_0") && e.getMessage().contains("DEVICE_FATAL"), e.getMessage());
        }
        device.close();
        assertTrue(ah.isDestroyed() && cq.isClosed() && mr.isClosed() && pd.isClosed());
        assertEquals(0, mock.counters().liveAhs());
    }

    @Test
    void closeOnFatalClosesTheDeviceAfterTheListenersHaveSeenTheEvent() throws Exception {
        Device device = Device.openFirst(mock);
        device.setCloseOnFatal(true);
        ProtectionDomain pd = device.allocatePd();
        pd.createAh(AddressHandleAttributes.forGid("fe80::1"));
        BlockingQueue<Boolean> closedWhenHeard = new LinkedBlockingQueue<>();
        device.addEventListener(e -> closedWhenHeard.add(device.isClosed()));
        mock.raiseEvent("efa_0", DeviceEvent.Kind.DEVICE_FATAL, 0);
        assertEquals(Boolean.FALSE, closedWhenHeard.poll(10, TimeUnit.SECONDS));
        for (int i = 0; i < 500 && !device.isClosed(); i++) {
            TimeUnit.MILLISECONDS.sleep(10);
        }
        assertTrue(device.isClosed() && pd.isClosed());
        assertEquals(0, mock.counters().liveAhs());
        device.close(); // still idempotent
    }

    /**
     * Found on rxe (CacheInvalidationNativeTest): after close-on-fatal, an acquire whose sgid_index
     * the RoCE device must resolve from its GID table met the closed device and was told only
     * "device ... is closed". Every refusal of a device closed after DEVICE_FATAL names the event.
     */
    @Test
    void aDeviceClosedOnFatalSaysWhyInEveryRefusal() throws Exception {
        MockVerbsProvider roce = new MockVerbsProvider(org.efaah.verbs.mock.MockConfig.builder().efa(false).build());
        Device device = Device.openFirst(roce);
        device.setCloseOnFatal(true);
        ProtectionDomain pd = device.allocatePd();
        roce.raiseEvent(device.name(), DeviceEvent.Kind.DEVICE_FATAL, 0);
        for (int i = 0; i < 500 && !device.isClosed(); i++) {
            TimeUnit.MILLISECONDS.sleep(10);
        }
        assertTrue(device.isClosed());
        for (Runnable op : List.<Runnable>of(() -> device.resolve(AddressHandleAttributes.forGid("::ffff:10.0.0.2")),
                () -> device.port(1), () -> device.gid(1, 0), device::allocatePd, () -> device.createCq(4),
                () -> pd.createAh(AddressHandleAttributes.forGid("::ffff:10.0.0.2").withSgidIndex(0)))) {
            IllegalStateException e = assertThrows(IllegalStateException.class, op::run);
            assertTrue(e.getMessage().contains(device.name()) && e.getMessage().contains("DEVICE_FATAL"), e.getMessage());
        }
    }

    @Test
    void raisingOnAnUnknownDeviceIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> mock.raiseEvent("efa_9", DeviceEvent.Kind.PORT_ERR, 1));
    }
}
