package org.efaah.cache;

import static org.efaah.cache.MockFixture.peer;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.spi.ILoggingEvent;
import java.lang.management.ManagementFactory;
import java.lang.ref.Reference;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import javax.management.openmbean.CompositeData;
import org.efaah.cache.HealthTest.FakeTicker;
import org.efaah.fixture.LogCapture;
import org.efaah.health.HealthCheck;
import org.efaah.health.HealthReport;
import org.efaah.health.HealthStatus;
import org.efaah.health.HealthThresholds;
import org.efaah.verbs.Device;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 34 item 3: leak reports an operator can act on. Before, one leaked handle kept health
 * DEGRADED for the life of the process (a probe failing on DEGRADED failed for good); 200 handles
 * leaked from one line of code gave 200 warnings, each with the same stack trace; the reports
 * named no GID or PD, the close's report did not say how to get acquire sites, and nothing in
 * {@code entries} told a leaked AH from another.
 */
class LeakReportTest {
    private static final long MINUTE = TimeUnit.MINUTES.toNanos(1);

    private final FakeTicker ticker = new FakeTicker();
    private MockVerbsProvider mock;
    private Device device;
    private ProtectionDomain pd;

    @BeforeEach
    void open() {
        mock = new MockVerbsProvider(MockFixture.strictDevice().build());
        device = Device.openFirst(mock);
        pd = device.allocatePd();
    }

    @AfterEach
    void close() {
        pd.close();
        device.close();
    }

    private AddressHandleCache cache(LeakDetection level) {
        return AddressHandleCache.builder().leakDetection(level).ticker(ticker).build();
    }

    @Test
    void oneLeakedHandleIsDegradedForTheLeakWindowThenUp() throws Exception {
        try (LogCapture log = LogCapture.of(AddressHandleCache.class);
             AddressHandleCache cache = cache(LeakDetection.PARANOID)) {
            leak(cache, 1, 1);
            awaitReported(cache, 1);
            HealthCheck leaks = check(cache.inspection().health(), "leaked_handles");
            assertEquals(HealthStatus.DEGRADED, leaks.status(), leaks::toString);
            assertEquals(1, leaks.value());
            ticker.advance(MINUTE + 1);
            HealthReport later = cache.inspection().health();
            assertEquals(HealthStatus.UP, later.status(), "a minute after the leak, by default: " + later);
            leaks = check(later, "leaked_handles");
            assertEquals(0, leaks.value());
            assertTrue(leaks.message().contains("(1 since the cache was made"), leaks.message());
            HealthCheck longer = check(cache.inspection().health(new HealthThresholds(0.9, 0.9, Duration.ofMinutes(1),
                    Duration.ofMinutes(5))), "leaked_handles");
            assertEquals(HealthStatus.DEGRADED, longer.status(), "a window of its own: " + longer);
            assertEquals(1, cache.stats().leaksReported(), "the count stays");
            assertEquals(1, log.count(Level.WARN, "garbage-collected without close()"), log.lines()::toString);
        }
    }

    @Test
    void twoHundredHandlesLeakedFromOneLineAreOneWarningWithTheirCount() throws Exception {
        try (LogCapture log = LogCapture.of(AddressHandleCache.class);
             AddressHandleCache cache = cache(LeakDetection.PARANOID)) {
            long[] wanted = {200, 210};
            for (int round = 0; round < 2; round++) {
                leak(cache, round == 0 ? 200 : 10, 20); // one line of code, both rounds
                awaitReported(cache, wanted[round]);
                if (round == 0) {
                    List<ILoggingEvent> warnings = leakWarnings(log);
                    assertEquals(1, warnings.size(), "one warning for one site: " + log.lines().size() + " lines");
                    String m = warnings.get(0).getFormattedMessage();
                    assertTrue(m.matches("LEAK: \\d+ AddressHandle\\(s\\) for GID fe80::\\p{XDigit}+ .*"), m);
                    assertTrue(warnings.get(0).getThrowableProxy() != null, "the first has its acquire site");
                    ticker.advance(MINUTE); // repeats from a site are told once a minute
                }
            }
            List<ILoggingEvent> warnings = leakWarnings(log);
            assertEquals(2, warnings.size(), log.lines()::toString);
            String repeat = warnings.get(1).getFormattedMessage();
            assertTrue(repeat.contains("more AddressHandle(s)") && repeat.endsWith("; 210 from it so far"), repeat);
            assertTrue(repeat.contains("LeakReportTest.acquireAndDrop(LeakReportTest.java:"), "names the line: " + repeat);
            assertNull(warnings.get(1).getThrowableProxy(), "one line, no second stack trace");
            assertEquals(210, cache.stats().leaksReported());
        }
    }

    @Test
    void aCollectedLeakNamesItsGidAndPd() throws Exception {
        try (LogCapture log = LogCapture.of(AddressHandleCache.class);
             AddressHandleCache cache = cache(LeakDetection.PARANOID)) {
            leak(cache, 1, 1);
            awaitReported(cache, 1);
            String m = leakWarnings(log).get(0).getFormattedMessage();
            assertTrue(m.contains("GID " + peer(1).dgid() + " (port_num 1, sgid_index 0) in PD "
                    + AddressHandleEntry.pdId(pd) + " of " + device.name()), m);
        }
    }

    @Test
    void theCloseReportNamesTheOpenAhsAndHowToGetAcquireSites() {
        try (LogCapture log = LogCapture.of(AddressHandleCache.class)) {
            AddressHandleCache cache = cache(LeakDetection.DISABLED);
            AddressHandle open = cache.acquire(pd, peer(3));
            cache.close();
            Reference.reachabilityFence(open);
            List<String> warnings = log.messages(Level.WARN);
            assertEquals(1, warnings.size(), warnings::toString);
            String m = warnings.get(0);
            assertTrue(m.contains("1 for GID " + peer(3).dgid() + " (port_num 1, sgid_index 0) in PD "
                    + AddressHandleEntry.pdId(pd) + " of " + device.name()), m);
            assertTrue(m.contains("-D" + LeakDetection.PROPERTY + "=paranoid"), m);
        }
    }

    @Test
    void atParanoidTheCloseReportGivesEachOpenHandlesAcquireSite() {
        try (LogCapture log = LogCapture.of(AddressHandleCache.class)) {
            AddressHandleCache cache = cache(LeakDetection.PARANOID);
            AddressHandle[] open = new AddressHandle[3];
            for (int i = 0; i < 2; i++) {
                open[i] = cache.acquire(pd, peer(4)); // one site, a miss then a hit
            }
            open[2] = cache.acquire(pd, peer(4)); // another
            cache.close();
            List<ILoggingEvent> warnings = log.events(Level.WARN);
            assertEquals(3, warnings.size(), log.lines()::toString); // the summary, then one per site
            assertTrue(warnings.get(0).getFormattedMessage().contains("3 for GID " + peer(4).dgid()),
                    warnings.get(0).getFormattedMessage());
            assertFalse(warnings.get(0).getFormattedMessage().contains("=paranoid"), "every handle was tracked");
            assertEquals(List.of("LEAK: 2 of", "LEAK: 1 of"), warnings.subList(1, 3).stream()
                    .map(e -> e.getFormattedMessage().substring(0, 10)).sorted(Comparator.reverseOrder()).toList());
            assertTrue(warnings.get(1).getThrowableProxy() != null, "the acquire site");
            Reference.reachabilityFence(open);
        }
    }

    @Test
    void aLeakedAhStandsOutInEntriesAndTheMXBean() throws Exception {
        try (LogCapture log = LogCapture.of(AddressHandleCache.class);
             AddressHandleCache cache = cache(LeakDetection.PARANOID)) {
            try (AddressHandle clean = cache.acquire(pd, peer(9))) {
                leak(cache, 2, 1);
                awaitReported(cache, 2);
                List<AddressHandleEntry> rows = cache.inspection().entries(e -> true, 10);
                assertEquals(2, rows.size(), rows::toString);
                for (AddressHandleEntry r : rows) {
                    assertEquals(r.dgid().equals(peer(1).dgid()) ? 2 : 0, r.leaks(), r::toString);
                }
                ObjectName name = cache.inspection().registerMXBean("org.efaah:type=AddressHandleCache,name=LeakReportTest");
                MBeanServer server = ManagementFactory.getPlatformMBeanServer();
                CompositeData[] viaJmx = (CompositeData[]) server.invoke(name, "entries",
                        new Object[] {10, "", "", peer(1).dgid().toString()},
                        new String[] {"int", String.class.getName(), String.class.getName(), String.class.getName()});
                assertEquals(1, viaJmx.length);
                assertEquals(2, viaJmx[0].get("leaks"));
            }
        }
    }

    /** Leaks {@code n} handles to peers 1..{@code peers}, from this one line. */
    private void leak(AddressHandleCache cache, int n, int peers) {
        for (int i = 0; i < n; i++) {
            acquireAndDrop(cache, 1 + i % peers);
        }
    }

    private void acquireAndDrop(AddressHandleCache cache, int peer) {
        assertFalse(cache.acquire(pd, peer(peer)).isClosed());
    }

    /** Collects until {@code n} leaks are reported, a bounded time. */
    private static void awaitReported(AddressHandleCache cache, long n) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (cache.stats().leaksReported() < n && System.nanoTime() < deadline) {
            System.gc();
            Thread.sleep(20);
        }
        assertEquals(n, cache.stats().leaksReported(), "leaks reported");
    }

    private static List<ILoggingEvent> leakWarnings(LogCapture log) {
        return log.events(Level.WARN).stream().filter(e -> e.getFormattedMessage().contains("garbage-collected without"))
                .toList();
    }

    private static HealthCheck check(HealthReport r, String name) {
        return r.checks().stream().filter(c -> c.name().equals(name)).findFirst().orElseThrow(() -> new AssertionError(r));
    }
}
