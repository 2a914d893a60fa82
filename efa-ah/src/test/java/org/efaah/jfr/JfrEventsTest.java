package org.efaah.jfr;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.cache.RetentionPolicy;
import org.efaah.ud.UdEndpoint;
import org.efaah.ud.WorkCompletionException;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.DeviceEvent;
import org.efaah.verbs.Errno;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * Issue 18 item 4: a recording of a workload on the mock holds every efa-ah event kind, read back
 * with {@code jdk.jfr.consumer}: AH creates (with duration, and errno on failure), destroys with
 * their cause, an ENOMEM eviction, an invalidation, a device event and a QP recovery.
 */
class JfrEventsTest {
    @TempDir
    Path dir;

    @Test
    void aRecordingHoldsEveryEventKind() throws Exception {
        Path file = dir.resolve("efa-ah.jfr");
        Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        ch.qos.logback.core.Appender<ILoggingEvent> console = root.getAppender("STDERR");
        ListAppender<ILoggingEvent> logs = new ListAppender<>();
        logs.start();
        root.addAppender(logs);
        root.detachAppender(console);
        try (Recording recording = new Recording()) {
            for (String event : List.of("AhCreate", "AhDestroy", "AhEnomemEviction", "AhInvalidation", "DeviceEvent",
                    "QpRecovery")) {
                recording.enable("org.efaah." + event);
            }
            recording.start();
            workload();
            recording.stop();
            recording.dump(file);
        } finally {
            root.detachAppender(logs);
            if (console != null) {
                root.addAppender(console);
            }
        }
        List<RecordedEvent> events = RecordingFile.readAllEvents(file);
        Map<String, List<RecordedEvent>> byName = events.stream()
                .collect(Collectors.groupingBy(e -> e.getEventType().getName()));

        List<RecordedEvent> creates = byName.get("org.efaah.AhCreate");
        RecordedEvent ok = creates.stream().filter(e -> e.getString("errno") == null).findFirst().orElseThrow();
        assertTrue(ok.getDuration("createTime").toNanos() >= 1_000_000, "the 1 ms mock create: " + ok);
        assertEquals("efa_0", ok.getString("device"));
        assertTrue(ok.getInt("ahn") >= 0, ok::toString);
        RecordedEvent failed = creates.stream().filter(e -> "EIO".equals(e.getString("errno"))).findFirst().orElseThrow();
        assertEquals(-1, failed.getInt("ahn"));

        Map<String, Long> causes = byName.get("org.efaah.AhDestroy").stream()
                .collect(Collectors.groupingBy(e -> e.getString("cause"), Collectors.counting()));
        assertTrue(causes.keySet().containsAll(List.of("EVICTED_ENOMEM", "INVALIDATED", "CACHE_CLOSED")),
                causes::toString);
        RecordedEvent eviction = byName.get("org.efaah.AhEnomemEviction").get(0);
        assertEquals(1, eviction.getInt("evicted"));
        RecordedEvent invalidation = byName.get("org.efaah.AhInvalidation").stream()
                .filter(e -> e.getString("scope").startsWith("port 1 of efa_0")).findFirst().orElseThrow();
        assertTrue(invalidation.getInt("entries") >= 1, invalidation::toString);
        assertTrue(byName.get("org.efaah.DeviceEvent").stream().anyMatch(e -> e.getString("kind").equals("PORT_ERR")
                && e.getInt("portNum") == 1), () -> byName.get("org.efaah.DeviceEvent").toString());
        RecordedEvent recovery = byName.get("org.efaah.QpRecovery").get(0);
        assertEquals(1, recovery.getLong("recovery"));
        assertTrue(logs.list.stream().noneMatch(e -> e.getLevel().toInt() >= ch.qos.logback.classic.Level.ERROR_INT),
                () -> logs.list.toString());
    }

    /** Creates (one failing), an ENOMEM eviction, a port event that invalidates, a QP recovery, a close. */
    private static void workload() throws Exception {
        MockConfig config = MockConfig.builder().maxAh(2).createLatencyNanos(TimeUnit.MILLISECONDS.toNanos(1))
                .deviceCount(2).build();
        MockVerbsProvider mock = new MockVerbsProvider(config);
        try (Device d0 = Device.open(mock, "efa_0");
             Device d1 = Device.open(mock, "efa_1");
             ProtectionDomain pd0 = d0.allocatePd();
             ProtectionDomain pd1 = d1.allocatePd()) {
            AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED)
                    .retention(RetentionPolicy.idle(Duration.ofHours(1), 10)).build();
            AddressHandle held = cache.acquire(pd0, AddressHandleAttributes.forGid("fe80::1"));
            cache.acquire(pd0, AddressHandleAttributes.forGid("fe80::2")).close(); // retained
            cache.acquire(pd0, AddressHandleAttributes.forGid("fe80::3")).close(); // ENOMEM: evicts fe80::2
            mock.failNextCreates(1, Errno.EIO);
            assertThrows(VerbsException.class, () -> cache.acquire(pd0, AddressHandleAttributes.forGid("fe80::4")));
            mock.raiseEvent("efa_0", DeviceEvent.Kind.PORT_ERR, 1); // invalidates port 1 of efa_0
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (cache.stats().invalidated() == 0 && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            held.close(); // INVALIDATED destroy

            try (UdEndpoint small = UdEndpoint.open(pd0, cache, UdEndpoint.Options.defaults().withMaxMessageSize(512));
                 UdEndpoint big = UdEndpoint.open(pd1, cache, UdEndpoint.Options.defaults());
                 AddressHandle toSmall = cache.acquire(pd1, AddressHandleAttributes.builder()
                         .dgid(small.address().gid()).build())) {
                big.send(toSmall, small.address(), ByteBuffer.allocate(1024)); // too big: the receiver's QP errs
                assertThrows(WorkCompletionException.class, () -> small.receive(5, TimeUnit.SECONDS));
                assertEquals(1, small.counters().recoveries());
            }
            cache.close(); // CACHE_CLOSED destroys of the retained
        }
    }
}
