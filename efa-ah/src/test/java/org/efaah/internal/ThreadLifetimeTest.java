package org.efaah.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Function;
import org.efaah.fixture.LogCapture;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 34 item 2: no thread of the library outlives the last object that needs it, and none
 * keeps its caller's class loader. Before, the leak detector ran on a static {@code Cleaner}
 * thread, started with the first tracked handle, that lived as long as its class loader and
 * kept it (its context loader, its thread factory): a library loaded per deployment (an
 * application server, a plugin host) leaked one copy per redeploy, and {@code mvn exec:java}
 * waited 15 s for it at the end of the README's first example. The library's other threads
 * (event reader, reaper, network reader) took the caller's context loader and thread locals.
 * Found on the way, each keeping a loader too: a closed handle's acquire site (naming the
 * caller's classes) until the collector found it, and on JDK 17 a record's generated hashCode
 * (the RoCE network reader's neighbour key). Each case on the mock's EFA and RoCE devices, which
 * between them start every thread the library has.
 */
class ThreadLifetimeTest {
    private static final long BOUND_NANOS = TimeUnit.SECONDS.toNanos(20);
    private final AtomicInteger leakReports = new AtomicInteger();

    @ParameterizedTest(name = "efa={0}")
    @ValueSource(booleans = {true, false})
    void aLibraryInItsOwnLoaderLeavesNoThreadAndIsCollectedOnceEverythingIsClosed(boolean efa) throws Exception {
        Set<Thread> before = Thread.getAllStackTraces().keySet();
        IsolatedLibrary library = new IsolatedLibrary("isolated-efa-ah", Set.of("org.efaah."));
        WeakReference<ClassLoader> collected = new WeakReference<>(library);
        List<Thread> started;
        // The leaked handle's report, by logger name; not kept (an event keeps its stack trace).
        try (LogCapture log = LogCapture.of(org.efaah.cache.AddressHandleCache.class)) {
            log.onEvent = e -> leakReports.incrementAndGet();
            log.discard = true;
            started = runIn(library, efa, before);
        }
        assertTrue(leakReports.get() > 0, "the scenario's leaked handle was reported at its cache's close");
        library = null;
        List<String> alive = awaitEnded(started);
        started = null; // a thread, even ended, keeps its context class loader
        assertEquals(List.of(), alive, "library threads alive after everything was closed");
        assertTrue(awaitCollected(collected), "the library's class loader is still reachable after close");
    }

    @ParameterizedTest(name = "efa={0}")
    @ValueSource(booleans = {true, false})
    void aThreadTheLibraryStartsKeepsNoneOfItsCallersClassLoader(boolean efa) throws Exception {
        Set<Thread> before = Thread.getAllStackTraces().keySet();
        IsolatedLibrary caller = new IsolatedLibrary("isolated-caller", Set.of(IsolatedCaller.class.getName()));
        WeakReference<ClassLoader> collected = new WeakReference<>(caller);
        List<AutoCloseable> open = openFrom(caller, efa);
        try {
            List<Thread> started = efaAhThreads(before);
            assertTrue(!started.isEmpty(), "the device and cache run no thread: nothing is tested");
            for (Thread t : started) {
                assertNotSame(caller, t.getContextClassLoader(), t.getName() + "'s context class loader");
            }
            caller = null;
            assertTrue(awaitCollected(collected), "a library thread keeps its caller's class loader: "
                    + efaAhThreads(before));
        } finally {
            for (AutoCloseable c : open) {
                c.close();
            }
        }
        assertEquals(List.of(), awaitEnded(efaAhThreads(before)), "library threads alive after close");
    }

    /** Runs {@link IsolatedScenario} loaded by {@code loader}, that loader the thread's context loader; the threads it started. */
    @SuppressWarnings("unchecked")
    private static List<Thread> runIn(ClassLoader loader, boolean efa, Set<Thread> before) throws Exception {
        Thread self = Thread.currentThread();
        ClassLoader was = self.getContextClassLoader();
        self.setContextClassLoader(loader);
        try {
            Class<?> c = Class.forName(IsolatedScenario.class.getName(), true, loader);
            assertNotSame(IsolatedScenario.class, c, "the scenario must come from its own loader");
            ((Consumer<Boolean>) c.getDeclaredConstructor().newInstance()).accept(efa);
        } finally {
            self.setContextClassLoader(was);
        }
        List<Thread> started = new ArrayList<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (!before.contains(t) && t.getContextClassLoader() == loader) {
                started.add(t);
            }
        }
        return started;
    }

    @SuppressWarnings("unchecked")
    private static List<AutoCloseable> openFrom(ClassLoader loader, boolean efa) throws Exception {
        Thread self = Thread.currentThread();
        ClassLoader was = self.getContextClassLoader();
        self.setContextClassLoader(loader);
        try {
            Class<?> c = Class.forName(IsolatedCaller.class.getName(), true, loader);
            assertNotSame(IsolatedCaller.class, c, "the caller must come from its own loader");
            return ((Function<Boolean, List<AutoCloseable>>) c.getDeclaredConstructor().newInstance()).apply(efa);
        } finally {
            self.setContextClassLoader(was);
        }
    }

    /** The library's threads started since {@code before}, by name: every one is named efa-ah-*. */
    private static List<Thread> efaAhThreads(Set<Thread> before) {
        List<Thread> out = new ArrayList<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (!before.contains(t) && t.getName().startsWith("efa-ah")) {
                out.add(t);
            }
        }
        return out;
    }

    /** Waits a bounded time for {@code threads} to end; the names of those still alive. */
    private static List<String> awaitEnded(List<Thread> threads) throws InterruptedException {
        long deadline = System.nanoTime() + BOUND_NANOS;
        List<String> alive = new ArrayList<>();
        for (Thread t : threads) {
            t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
            if (t.isAlive()) {
                alive.add(t.getName());
            }
        }
        return alive;
    }

    /** Collects until {@code ref} is cleared, a bounded time. */
    private static boolean awaitCollected(WeakReference<?> ref) throws InterruptedException {
        long deadline = System.nanoTime() + BOUND_NANOS;
        while (ref.get() != null && System.nanoTime() < deadline) {
            System.gc();
            Thread.sleep(50);
        }
        return ref.get() == null;
    }
}
