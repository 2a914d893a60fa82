package org.efaah.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import ch.qos.logback.classic.Level;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.LongSupplier;
import org.efaah.fixture.LogCapture;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.efaah.verbs.spi.VerbsProvider;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 33 race 5.3, a dead AH handed out: a create that finishes while its device is being
 * closed. The create is held with its entry's lock taken, the AH made (a cache listener's
 * {@code created}, which runs under that lock), while the device's forced close runs to its end:
 * the close's listener cannot lock the entry and leaves it to the creator, and the device frees
 * the AH. Before the fix the creator then counted the entry live (live entries 1, device AHs 0)
 * and handed out a handle refusing every use. The acquire must fail with the device's closing
 * named and count nothing live.
 */
public class CreateDuringDeviceCloseTest {

    @ParameterizedTest(name = "efa={0}")
    @ValueSource(booleans = {true, false})
    void aCreateFinishingDuringAForcedDeviceCloseFailsAndCountsNothingLive(boolean efa) throws Exception {
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().efa(efa).build());
        aCreateFinishingDuringAForcedDeviceCloseFailsAndCountsNothingLive(mock, d -> MockFixture.peer(1),
                () -> mock.counters().liveAhs());
    }

    /**
     * The case on {@code provider}'s first device, to the peer {@code peer} names on it;
     * {@code deviceAhs} counts the AHs the provider holds. Also run over the EFA double
     * ({@code org.efaah.it.CreateDuringDeviceCloseNativeTest}).
     */
    public static void aCreateFinishingDuringAForcedDeviceCloseFailsAndCountsNothingLive(VerbsProvider provider,
            Function<Device, AddressHandleAttributes> peer, LongSupplier deviceAhs) throws Exception {
        Device device = Device.openFirst(provider);
        ProtectionDomain pd = device.allocatePd();
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try (LogCapture log = LogCapture.of(AddressHandleCache.class, Device.class);
             AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED).build()) {
            CountDownLatch created = new CountDownLatch(1);
            CountDownLatch letGo = new CountDownLatch(1);
            cache.inspection().addListener(new AddressHandleCacheListener() {
                @Override
                public void created(long nanos) {
                    created.countDown();
                    try {
                        letGo.await(10, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            });
            Future<AddressHandle> acquire = pool.submit(() -> cache.acquire(pd, peer.apply(device)));
            if (!created.await(10, TimeUnit.SECONDS)) {
                fail("the AH was not made: " + (acquire.isDone() ? outcome(acquire) : "the acquire is still running"));
            }

            device.close(); // forced: the PD and its AH are still there
            assertEquals(1, log.count(Level.WARN, "closed with a PD still allocated"), "the forced close says so");
            assertEquals(0, deviceAhs.getAsLong(), "the device freed the AH");
            letGo.countDown();

            AddressHandle handed;
            try {
                handed = acquire.get(10, TimeUnit.SECONDS);
            } catch (ExecutionException refused) {
                assertTrue(refused.getCause() instanceof IllegalStateException, refused.getCause().toString());
                assertTrue(refused.getCause().getMessage().contains("was closed while this acquire created the AH to"),
                        refused.getCause().getMessage());
                assertEquals(0, cache.inspection().liveEntries(), "live entries");
                assertEquals(0, cache.inspection().liveHandles(), "live handles");
                CacheStats stats = cache.stats();
                assertEquals(stats.hardwareCreates(), stats.hardwareDestroys(), "every AH made is counted gone: " + stats);
                return;
            }
            String use;
            try {
                use = "nativeHandle " + handed.nativeHandle();
            } catch (RuntimeException e) {
                use = e.toString();
            }
            fail("a handle was handed out: live entries " + cache.inspection().liveEntries() + ", device AHs "
                    + deviceAhs.getAsLong() + ", its use: " + use);
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * The same window for a revival: an acquire takes back a retained AH under its entry's lock
     * and is held there (on the idle list's monitor, which its leaving of the list takes, held by
     * this test) while the device's forced close runs to its end on this thread. Before the fix
     * the revived handle was handed out dead and the entry counted live.
     */
    @ParameterizedTest(name = "efa={0}")
    @ValueSource(booleans = {true, false})
    void aRevivalDuringAForcedDeviceCloseFailsAndCountsNothingLive(boolean efa) throws Exception {
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().efa(efa).build());
        Device device = Device.openFirst(mock);
        ProtectionDomain pd = device.allocatePd();
        java.util.concurrent.atomic.AtomicLong now = new java.util.concurrent.atomic.AtomicLong(1);
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try (LogCapture log = LogCapture.of(AddressHandleCache.class, Device.class);
             AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED)
                     .ticker(now::get).retention(RetentionPolicy.idle(java.time.Duration.ofMinutes(5), 16)).build()) {
            cache.acquire(pd, MockFixture.peer(1)).close(); // retained
            Future<AddressHandle> acquire;
            synchronized (cache.idle) {
                Thread[] reviver = {null};
                acquire = pool.submit(() -> {
                    reviver[0] = Thread.currentThread();
                    return cache.acquire(pd, MockFixture.peer(1));
                });
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while ((reviver[0] == null || reviver[0].getState() != Thread.State.BLOCKED) && System.nanoTime() < deadline) {
                    Thread.onSpinWait();
                }
                assertEquals(Thread.State.BLOCKED, reviver[0].getState(), "the revival holds the entry's lock");
                device.close(); // forced: the PD and its AH are still there
                assertEquals(0, mock.counters().liveAhs(), "the device freed the AH");
            }
            AddressHandle handed;
            try {
                handed = acquire.get(10, TimeUnit.SECONDS);
            } catch (ExecutionException refused) {
                assertTrue(refused.getCause() instanceof IllegalStateException, refused.getCause().toString());
                assertTrue(refused.getCause().getMessage().contains("was closed while this acquire took the AH to"), refused.getCause().getMessage());
                assertEquals(0, cache.inspection().liveEntries(), "live entries");
                assertEquals(0, cache.inspection().liveHandles(), "live handles");
                assertEquals(1, log.count(Level.WARN, "closed with a PD still allocated"), "the forced close says so");
                return;
            }
            String use;
            try {
                use = "nativeHandle " + handed.nativeHandle();
            } catch (RuntimeException e) {
                use = e.toString();
            }
            fail("a revived handle was handed out: live entries " + cache.inspection().liveEntries() + ", device AHs "
                    + mock.counters().liveAhs() + ", its use: " + use);
        } finally {
            pool.shutdownNow();
        }
    }

    private static String outcome(Future<AddressHandle> acquire) {
        try {
            return "it returned " + acquire.get();
        } catch (ExecutionException e) {
            return "it threw " + e.getCause();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted";
        }
    }
}
