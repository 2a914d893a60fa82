package org.efaah.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.efaah.fixture.HeldAsyncChannel;
import org.efaah.fixture.LogCapture;
import org.efaah.health.HealthThresholds;
import org.efaah.internal.BackgroundReader;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 33 race 5.2, a context freed under its reader: no verbs object is freed while a child may
 * still be in use. ibv_close_device frees the context and closes its async_fd whoever is still
 * inside a call on them, so a Device's close may call it only once its event reader has returned
 * from freeing its channel; when the close cannot confirm that (interrupted, timed out, the stop
 * failed), the context is freed later by the reader, or leaked, never freed under it. The
 * decorating provider holds the reader inside the channel's free or inside a wait, with latches,
 * and records every ibv_close_device that comes while a reader is inside the channel.
 */
public class ContextFreedUnderReaderTest {

    private static HeldAsyncChannel provider(boolean efa) {
        return new HeldAsyncChannel(new MockVerbsProvider(MockConfig.builder().efa(efa).build()));
    }

    @ParameterizedTest(name = "efa={0}")
    @ValueSource(booleans = {true, false})
    void anInterruptedCloseLeavesTheContextToTheReaderStillFreeingItsChannel(boolean efa) throws Exception {
        anInterruptedCloseLeavesTheContextToTheReader(provider(efa));
    }

    @ParameterizedTest(name = "efa={0}")
    @ValueSource(booleans = {true, false})
    void aCloseWhoseReaderStopFailedLeavesTheContextToTheReader(boolean efa) throws Exception {
        aCloseWhoseStopFailedLeavesTheContextToTheReader(provider(efa));
    }

    /**
     * Before the fix the reader marked itself closed before it freed its channel, and the
     * interrupted close took that for freed: ibv_close_device ran on the closing thread while the
     * reader was still inside the channel's free.
     */
    /**
     * A close whose wait for the reader timed out (5 s) while the reader was still inside the
     * channel's free: before the fix it took the reader for stopped too, and freed the context.
     */
    @ParameterizedTest(name = "efa={0}")
    @ValueSource(booleans = {true, false})
    void aTimedOutCloseLeavesTheContextToTheReaderStillFreeingItsChannel(boolean efa) throws Exception {
        HeldAsyncChannel p = provider(efa);
        p.freeing = new CountDownLatch(1);
        p.letFree = new CountDownLatch(1);
        Device device = Device.openFirst(p);
        String readerName = "efa-ah-events-" + device.name();
        try (LogCapture log = LogCapture.of(Device.class, BackgroundReader.class)) {
            AtomicReference<Throwable> closeFailure = new AtomicReference<>();
            Thread closer = new Thread(() -> {
                try {
                    device.close();
                } catch (Throwable t) {
                    closeFailure.set(t);
                }
            }, "closer");
            closer.start();
            assertTrue(p.freeing.await(10, TimeUnit.SECONDS), "the reader is freeing its channel");
            closer.join(30_000); // the close's wait for the reader ends after 5 s
            assertFalse(closer.isAlive(), "the close returned after its wait timed out");
            assertNull(closeFailure.get());
            assertEquals(List.of(), p.violations);
            assertEquals(0, p.contextCloses.get(), "the context waits for the reader");

            p.letFree.countDown();
            awaitContextClosed(p);
            assertEquals(List.of(), p.violations);
            assertEquals(readerName, p.contextClosedBy.getName(), "freed by the reader, right after its channel");
            assertEquals(1, log.count(Level.WARN, "has not stopped within"), log.lines().toString());
            assertEquals(1, log.count(Level.WARN, "its event reader is not known to have stopped;"), log.lines().toString());
        }
    }

    /** Also run over the EFA double ({@code org.efaah.it.ContextFreedUnderReaderNativeTest}). */
    public static void anInterruptedCloseLeavesTheContextToTheReader(HeldAsyncChannel p) throws Exception {
        p.freeing = new CountDownLatch(1);
        p.letFree = new CountDownLatch(1);
        Device device = Device.openFirst(p);
        String readerName = "efa-ah-events-" + device.name();
        try (LogCapture log = LogCapture.of(Device.class, BackgroundReader.class)) {
            AtomicReference<Throwable> closeFailure = new AtomicReference<>();
            Thread closer = new Thread(() -> {
                try {
                    device.close();
                } catch (Throwable t) {
                    closeFailure.set(t);
                }
            }, "closer");
            closer.start();
            assertTrue(p.freeing.await(10, TimeUnit.SECONDS), "the reader is freeing its channel");
            closer.interrupt();
            closer.join(10_000);
            assertFalse(closer.isAlive(), "the interrupted close returned");
            assertNull(closeFailure.get());
            assertEquals(List.of(), p.violations);
            assertEquals(0, p.contextCloses.get(), "the context waits for the reader");
            assertTrue(device.isClosed());
            String health = device.health(HealthThresholds.DEFAULTS).checks().get(0).message();
            assertTrue(health.contains("context is not freed yet"), health);

            p.letFree.countDown();
            awaitContextClosed(p);
            assertEquals(List.of(), p.violations);
            assertEquals(readerName, p.contextClosedBy.getName(), "freed by the reader, right after its channel");
            assertEquals("device is closed", device.health(HealthThresholds.DEFAULTS).checks().get(0).message());
            assertEquals(1, log.count(Level.INFO, "closed by an interrupted thread before its event reader stopped"),
                    log.lines().toString());
            assertEquals(List.of(), log.messages(Level.WARN));
        }
    }

    /**
     * Before the fix a stop that threw (here the wake of the reader's wait) counted as stopped:
     * ibv_close_device ran while the reader was still inside its wait on the context's async_fd.
     */
    /** Also run over the EFA double. */
    public static void aCloseWhoseStopFailedLeavesTheContextToTheReader(HeldAsyncChannel p) throws Exception {
        p.waiting = new CountDownLatch(1);
        p.letWait = new CountDownLatch(1);
        CountDownLatch letWait = p.letWait;
        Device device = Device.openFirst(p);
        String readerName = "efa-ah-events-" + device.name();
        try (LogCapture log = LogCapture.of(Device.class, BackgroundReader.class)) {
            assertTrue(p.waiting.await(10, TimeUnit.SECONDS), "the reader waits on its channel");
            p.failWakes = true;
            VerbsException thrown = assertThrows(VerbsException.class, device::close, "the stop's failure is not lost");
            assertEquals(Errno.EIO, thrown.errno());
            assertEquals(List.of(), p.violations);
            assertEquals(0, p.contextCloses.get(), "the context waits for the reader");
            assertTrue(device.isClosed());

            letWait.countDown();
            awaitContextClosed(p);
            assertEquals(List.of(), p.violations);
            assertEquals(readerName, p.contextClosedBy.getName(), "freed by the reader, right after its channel");
            assertEquals(1, log.count(Level.WARN, "its event reader is not known to have stopped (its stop failed"),
                    log.lines().toString());
        }
    }

    private static void awaitContextClosed(HeldAsyncChannel p) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (p.contextCloses.get() == 0 && System.nanoTime() < deadline) {
            TimeUnit.MILLISECONDS.sleep(5);
        }
        assertEquals(1, p.contextCloses.get(), "ibv_close_device once");
    }
}
