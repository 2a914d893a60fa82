package org.efaah.ud;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.ref.WeakReference;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * Issue 35 item 4, the poller thread as one of the library's threads: it starts with the first
 * wait that parks, keeps none of the class loader of the caller whose wait started it (its context
 * loader, the access control context and the thread locals it inherits), and ends once no waiter
 * needs it. The caller is {@link PollerCaller} in a loader of its own, as an application server
 * loads a deployment; the epoll is {@link ChannelPollerFailureTest.FakeEpoll}'s.
 */
class ChannelPollerLifetimeTest {
    private static final long BOUND_NANOS = TimeUnit.SECONDS.toNanos(20);
    private final ChannelPollerFailureTest.FakeEpoll epoll = new ChannelPollerFailureTest.FakeEpoll();

    @Test
    void thePollerStartsWhenFirstNeededKeepsNoneOfItsCallersLoaderAndEndsWhenNoneNeedsIt() throws Exception {
        assertNull(ChannelPoller.thread(epoll), "a poller thread before any wait parked");
        ClassLoader caller = new CallerLoader();
        WeakReference<ClassLoader> collected = new WeakReference<>(caller);
        runIn(caller, () -> ChannelPoller.park(epoll, 7, TimeUnit.MILLISECONDS.toNanos(1)));
        Thread poller = ChannelPoller.thread(epoll);
        assertNotNull(poller, "the caller's parked wait started no poller thread");
        assertNotSame(caller, poller.getContextClassLoader(), "the poller thread's context class loader");
        caller = null;
        // A waiter of the test's own keeps the poller needed while the caller's loader is collected.
        AtomicBoolean needed = new AtomicBoolean(true);
        Thread keeper = new Thread(() -> {
            while (needed.get()) {
                ChannelPoller.park(epoll, 5, TimeUnit.MILLISECONDS.toNanos(50));
            }
        }, "keeper");
        keeper.start();
        try {
            assertTrue(awaitCollected(collected), "the poller thread keeps the class loader of the caller that started it");
            assertTrue(poller.isAlive(), "the poller thread ended while a waiter needed it");
        } finally {
            needed.set(false);
            keeper.join(TimeUnit.NANOSECONDS.toMillis(BOUND_NANOS));
        }
        assertFalse(keeper.isAlive(), "the keeper's park did not return");
        poller.join(TimeUnit.NANOSECONDS.toMillis(BOUND_NANOS));
        assertFalse(poller.isAlive(), "the poller thread outlived its last waiter");
        assertNull(ChannelPoller.thread(epoll), "a poller that ended stays registered");
    }

    @SuppressWarnings("unchecked")
    private static void runIn(ClassLoader loader, Runnable wait) throws Exception {
        Class<?> c = Class.forName(PollerCaller.class.getName(), true, loader);
        assertNotSame(PollerCaller.class, c, "the caller must come from its own loader");
        ((Consumer<Runnable>) c.getDeclaredConstructor().newInstance()).accept(wait);
    }

    /** Collects until {@code ref} is cleared, a bounded time. */
    private static boolean awaitCollected(WeakReference<?> ref) throws InterruptedException {
        long deadline = System.nanoTime() + BOUND_NANOS;
        while (ref.get() != null && System.nanoTime() - deadline < 0) {
            System.gc();
            Thread.sleep(50);
        }
        return ref.get() == null;
    }

    /** Loads {@link PollerCaller} itself, from the test classes; everything else from the test's loader. */
    private static final class CallerLoader extends URLClassLoader {
        CallerLoader() {
            super("isolated-poller-caller", new URL[] {PollerCaller.class.getProtectionDomain().getCodeSource().getLocation()},
                    ChannelPollerLifetimeTest.class.getClassLoader());
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            if (!name.startsWith(PollerCaller.class.getName())) {
                return super.loadClass(name, resolve);
            }
            synchronized (getClassLoadingLock(name)) {
                Class<?> c = findLoadedClass(name);
                if (c == null) {
                    c = findClass(name);
                }
                if (resolve) {
                    resolveClass(c);
                }
                return c;
            }
        }
    }
}
