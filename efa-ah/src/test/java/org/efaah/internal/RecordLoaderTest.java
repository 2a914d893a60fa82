package org.efaah.internal;

import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.ref.WeakReference;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Issue 34: a value of the library that a caller compares, hashes, prints or keys a map with keeps
 * no class loader once everything is closed and dropped. On JDK 17 a record's generated equals,
 * hashCode and toString link through java.lang.runtime.ObjectMethods, whose static method handles
 * cache their last asType: a type of the library there keeps the library's loader (JDK-8078641
 * and its kin: method handle caches keeping classes reachable). Each kind in a loader of its own,
 * on Java 17 and 25, as {@link ThreadLifetimeTest} loads the library. The library's records write
 * theirs out ({@link NoObjectMethodsTest} holds every class to that); the cache's keys are classes.
 */
class RecordLoaderTest {
    private static final long BOUND_NANOS = TimeUnit.SECONDS.toNanos(20);

    static Stream<String> kinds() {
        return IsolatedRecordUse.KINDS.stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("kinds")
    void aValueComparedHashedAndPrintedByACallerKeepsNoLoader(String kind) throws Exception {
        IsolatedLibrary library = new IsolatedLibrary("isolated-efa-ah-" + kind, Set.of("org.efaah."));
        WeakReference<ClassLoader> collected = new WeakReference<>(library);
        runIn(library, kind);
        library = null;
        assertTrue(awaitCollected(collected), "the library's class loader is still reachable after a caller used its "
                + kind + " (" + System.getProperty("java.version") + ")");
    }

    @SuppressWarnings("unchecked")
    private static void runIn(ClassLoader loader, String kind) throws Exception {
        Thread self = Thread.currentThread();
        ClassLoader was = self.getContextClassLoader();
        self.setContextClassLoader(loader);
        try {
            Class<?> c = Class.forName(IsolatedRecordUse.class.getName(), true, loader);
            assertNotSame(IsolatedRecordUse.class, c, "the use must come from its own loader");
            ((Consumer<String>) c.getDeclaredConstructor().newInstance()).accept(kind);
        } finally {
            self.setContextClassLoader(was);
        }
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
