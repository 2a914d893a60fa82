package org.efaah.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.efaah.fixture.FaultyProvider;
import org.efaah.verbs.Device;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 33 race 5.4, the cache's side: {@link CacheInspection#addListener} promises that a
 * listener added to a closed cache is never called. The cache's close is held inside its
 * teardown (the destroy of a retained AH), after it marked itself closed and before it tells its
 * listeners; a listener added then was added, then the closed flag looked at, and taken back:
 * the close, let run to its end while the adder was between its add and the take-back (held in
 * the listener's equals, which the take-back calls), called it (closed() once) before the fix.
 */
class ListenerDuringCloseTest {

    @ParameterizedTest(name = "efa={0}")
    @ValueSource(booleans = {true, false})
    void aListenerAddedToACacheWhoseCloseIsRunningIsNeverCalled(boolean efa) throws Exception {
        FaultyProvider provider = new FaultyProvider(new MockVerbsProvider(MockConfig.builder().efa(efa).build()));
        Device device = Device.openFirst(provider);
        ProtectionDomain pd = device.allocatePd();
        AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED)
                .retention(RetentionPolicy.idle(Duration.ofMinutes(5), 16)).build();
        ExecutorService pool = Executors.newSingleThreadExecutor();
        ExecutorService adder = Executors.newSingleThreadExecutor();
        try {
            cache.acquire(pd, MockFixture.peer(1)).close(); // retained: the close destroys it
            CountDownLatch destroying = new CountDownLatch(1);
            CountDownLatch letGo = new CountDownLatch(1);
            provider.onDestroy = ah -> {
                destroying.countDown();
                try {
                    letGo.await(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            };
            AtomicInteger early = new AtomicInteger();
            cache.inspection().addListener(new AddressHandleCacheListener() {
                @Override
                public void closed() {
                    early.incrementAndGet();
                }
            });
            Future<?> close = pool.submit(cache::close);
            assertTrue(destroying.await(10, TimeUnit.SECONDS), "the close is destroying the retained AH");
            assertTrue(cache.isClosed());
            // The late listener holds its adder between its add and whatever follows (a take-back
            // compares listeners with equals) until the close has run to its end.
            AtomicInteger late = new AtomicInteger();
            CountDownLatch comparing = new CountDownLatch(1);
            CountDownLatch letCompare = new CountDownLatch(1);
            AddressHandleCacheListener lateListener = new AddressHandleCacheListener() {
                @Override
                public void closed() {
                    late.incrementAndGet();
                }

                @Override
                public boolean equals(Object other) {
                    comparing.countDown();
                    try {
                        letCompare.await(10, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    return this == other;
                }

                @Override
                public int hashCode() {
                    return System.identityHashCode(this);
                }
            };
            Future<?> adding = adder.submit(() -> cache.inspection().addListener(lateListener));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (comparing.getCount() > 0 && !adding.isDone() && System.nanoTime() < deadline) {
                TimeUnit.MILLISECONDS.sleep(1);
            }
            assertTrue(comparing.getCount() == 0 || adding.isDone(), "the add returned or is held");
            letGo.countDown();
            close.get(10, TimeUnit.SECONDS);
            letCompare.countDown();
            adding.get(10, TimeUnit.SECONDS);
            assertEquals(1, early.get(), "a listener added before the close is told of it, once");
            assertEquals(0, late.get(), "a listener added to the closed cache was called by its close");
        } finally {
            provider.onDestroy = null;
            pool.shutdownNow();
            adder.shutdownNow();
            pd.close();
            device.close();
        }
    }
}
