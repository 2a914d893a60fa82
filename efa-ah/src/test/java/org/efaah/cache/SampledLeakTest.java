package org.efaah.cache;

import static org.efaah.cache.MockFixture.peer;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.IThrowableProxy;
import ch.qos.logback.classic.spi.StackTraceElementProxy;
import java.util.concurrent.TimeUnit;
import org.efaah.fixture.LogCapture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Issue 19: at the default level, {@link LeakDetection#SAMPLED}, a tracked handle is watched
 * through a small object only it reaches, so the handle never escapes (and an untracked one used
 * in place needs no heap object). The guarantee stays: a sampled handle dropped without close is
 * reported with its acquire site, and a closed one never is.
 */
@ExtendWith(CacheInvariants.class)
class SampledLeakTest {
    /** Enough handles that missing every sampled one is a 1-in-e^16 event. */
    private static final int HANDLES = 16 * LeakDetection.SAMPLING_INTERVAL;

    @Test
    void aSampledHandleDroppedWithoutCloseIsReportedWithItsAcquireSite() throws Exception {
        try (LogCapture log = LogCapture.of(AddressHandleCache.class);
             MockFixture f = new MockFixture(MockFixture.strictDevice().build(), LeakDetection.SAMPLED)) {
            try (AddressHandle kept = f.cache.acquire(f.pd, peer(1))) {
                for (int i = 0; i < HANDLES; i++) {
                    acquireAndDrop(f);
                }
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                while (f.cache.stats().leaksReported() == 0 && System.nanoTime() < deadline) {
                    System.gc();
                    Thread.sleep(20);
                }
                long reported = f.cache.stats().leaksReported();
                System.out.println("FIGURE sampled leak: " + reported + " of " + HANDLES + " dropped handles reported");
                assertTrue(reported > 0, "no sampled handle reported among " + HANDLES);
                assertTrue(reported < HANDLES / 100, reported + " reported: that is not sampling");
                ILoggingEvent leak = log.events(Level.WARN).stream()
                        .filter(e -> e.getFormattedMessage().contains("garbage-collected")).findFirst().orElseThrow();
                assertTrue(names(leak.getThrowableProxy(), "acquireAndDrop"), "the acquire site is named: " + leak);
            }
            f.cache.invalidateAll(); // the leaked references keep the AH; the close counts them
        }
    }

    @Test
    void closedSampledHandlesAreNeverReported() throws Exception {
        try (LogCapture log = LogCapture.of(AddressHandleCache.class);
             MockFixture f = new MockFixture(MockFixture.strictDevice().build(), LeakDetection.SAMPLED)) {
            // Its own peer: the other test's dropped handles may still be reported meanwhile (the
            // Cleaner is the JVM's), into this test's log but not for this peer nor this cache.
            try (AddressHandle kept = f.cache.acquire(f.pd, peer(2))) {
                for (int i = 0; i < HANDLES; i++) {
                    f.cache.acquire(f.pd, peer(2)).close();
                }
                for (int i = 0; i < 5; i++) {
                    System.gc();
                    Thread.sleep(20);
                }
                assertEquals(0, f.cache.stats().leaksReported());
                assertEquals(0, log.count(Level.WARN, "LEAK: an AddressHandle for " + peer(2).dgid() + " "));
            }
        }
    }

    private static void acquireAndDrop(MockFixture f) {
        f.cache.acquire(f.pd, peer(1));
    }

    private static boolean names(IThrowableProxy site, String method) {
        if (site == null) {
            return false;
        }
        for (StackTraceElementProxy frame : site.getStackTraceElementProxyArray()) {
            if (frame.getStackTraceElement().getMethodName().equals(method)) {
                return true;
            }
        }
        return false;
    }
}
