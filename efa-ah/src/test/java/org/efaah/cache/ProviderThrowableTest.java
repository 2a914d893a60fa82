package org.efaah.cache;

import static org.efaah.cache.MockFixture.peer;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.stream.Stream;
import org.efaah.fixture.LogCapture;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Issue 11 case 1 and its kind: whatever a provider call throws (an {@link Error} included), the
 * cache stays consistent and the same key works afterwards. One test per provider call site.
 */
@ExtendWith(LogCapture.Quiet.class)
@ExtendWith(CacheInvariants.class)
class ProviderThrowableTest {

    /** An unchecked exception the cache has no special case for. */
    static final class ProviderBug extends IllegalStateException {
        ProviderBug() {
            super("provider bug");
        }
    }

    static Stream<Throwable> throwables() {
        return Stream.of(new OutOfMemoryError("native memory (JavaCPP)"), new StackOverflowError(), new ProviderBug());
    }

    @ParameterizedTest
    @MethodSource("throwables")
    void createThrowingLeavesTheKeyUsable(Throwable t) {
        try (FaultyFixture f = new FaultyFixture()) {
            f.provider.failNextCreate(t);
            Throwable thrown = assertThrows(Throwable.class, () -> f.cache.acquire(f.pd, peer(1)));
            assertSame(t, thrown, "the caller gets the provider's own throwable");
            // Before the fix this acquire spun at 100% CPU: the entry stayed CREATING.
            assertTimeoutPreemptively(Duration.ofSeconds(5), () -> {
                try (AddressHandle h = f.cache.acquire(f.pd, peer(1))) {
                    assertEquals(0, h.ahn());
                }
            });
            assertEquals(1, f.cache.stats().createFailures());
            assertEquals(0, f.provider.mock.counters().liveAhs());
        }
    }

    @ParameterizedTest
    @MethodSource("throwables")
    void destroyAtLastCloseThrowingKeepsTheAhForReuseAndForClose(Throwable t) {
        try (FaultyFixture f = new FaultyFixture()) {
            AddressHandle h = f.cache.acquire(f.pd, peer(1));
            int ahn = h.ahn();
            f.provider.failNextDestroy(t);
            if (t instanceof Error) {
                assertSame(t, assertThrows(Throwable.class, h::close), "an Error reaches the closing caller");
            } else {
                h.close();
            }
            assertEquals(1, f.provider.mock.counters().liveAhs(), "the AH still exists");
            assertTimeoutPreemptively(Duration.ofSeconds(5), () -> {
                try (AddressHandle again = f.cache.acquire(f.pd, peer(1))) {
                    assertEquals(ahn, again.ahn(), "the kept AH is reused");
                }
            });
            assertEquals(0, f.provider.mock.counters().liveAhs(), "the next last close destroys it");
        }
    }

    @ParameterizedTest
    @MethodSource("throwables")
    void destroyAtCacheCloseThrowingDestroysTheOthersAndCloseCanBeRetried(Throwable t) {
        FaultyFixture f = new FaultyFixture();
        AddressHandle a = f.cache.acquire(f.pd, peer(1));
        AddressHandle b = f.cache.acquire(f.pd, peer(2));
        f.provider.failNextDestroy(t);
        Throwable thrown = assertThrows(Throwable.class, f.cache::close);
        assertSame(t, thrown, "the provider's throwable reaches the caller of close");
        assertEquals(1, f.provider.mock.counters().liveAhs(), "the other AH was destroyed all the same");
        assertEquals(0, f.cache.inspection().liveEntries(), "the AH left over is its device's, no longer the cache's");
        a.close();
        b.close();
        // The AH left over belongs to the device now, which destroys it at its own close.
        assertThrows(org.efaah.verbs.VerbsException.class, f.pd::close);
        f.device.close();
        assertEquals(0, f.provider.mock.counters().liveAhs());
    }

    @ParameterizedTest
    @MethodSource("throwables")
    void destroyByTheReaperThrowingKeepsTheAhAndTheReaperRetries(Throwable t) {
        try (FaultyFixture f = FaultyFixture.withRetention(60, 100)) {
            f.cache.acquire(f.pd, peer(1)).close();
            f.advanceSeconds(61);
            f.provider.failNextDestroy(t);
            assertEquals(0, f.cache.cleanUp(), "the destroy threw; cleanUp itself does not");
            assertEquals(1, f.provider.mock.counters().liveAhs(), "kept");
            try (AddressHandle again = f.cache.acquire(f.pd, peer(1))) {
                assertEquals(0, again.ahn(), "the kept AH is reused");
            }
            f.advanceSeconds(61);
            assertEquals(1, f.cache.cleanUp(), "and reaped once it is idle again");
            assertEquals(0, f.provider.mock.counters().liveAhs());
        }
    }

    @ParameterizedTest
    @MethodSource("throwables")
    void destroyForTheBoundThrowingKeepsTheAh(Throwable t) {
        try (FaultyFixture f = FaultyFixture.withRetention(3600, 1)) {
            f.cache.acquire(f.pd, peer(1)).close();
            AddressHandle second = f.cache.acquire(f.pd, peer(2));
            f.provider.failNextDestroy(t);
            if (t instanceof Error) {
                assertSame(t, assertThrows(Throwable.class, second::close), "an Error reaches the closing caller");
            } else {
                second.close();
            }
            // Peer 1's destroy failed: it is kept (at the tail of the idle list). After an Error the
            // trim stops there; after an exception it goes on and takes peer 2 to keep the bound.
            assertEquals(t instanceof Error ? 2 : 1, f.provider.mock.counters().liveAhs());
            f.cache.acquire(f.pd, peer(1)).close();
            f.cache.acquire(f.pd, peer(2)).close();
            assertEquals(1, f.cache.inspection().retainedEntries(), "the bound holds again");
        }
    }

    @ParameterizedTest
    @MethodSource("throwables")
    void destroyForAnEnomemEvictionThrowingFailsThatAcquireOnly(Throwable t) {
        try (FaultyFixture f = FaultyFixture.withRetention(MockFixture.strictDevice().maxAh(1).build(), 3600, 100)) {
            f.cache.acquire(f.pd, peer(1)).close();
            f.provider.failNextDestroy(t);
            Throwable thrown = assertThrows(Throwable.class, () -> f.cache.acquire(f.pd, peer(2)));
            if (t instanceof Error) {
                assertSame(t, thrown, "an Error from the eviction reaches the acquiring caller");
            } else {
                assertEquals(org.efaah.verbs.Errno.ENOMEM, ((org.efaah.verbs.VerbsException) thrown).errno(),
                        "nothing could be evicted: the device's ENOMEM");
            }
            assertTimeoutPreemptively(Duration.ofSeconds(5), () -> {
                f.cache.acquire(f.pd, peer(2)).close(); // evicts peer 1 this time
                f.cache.acquire(f.pd, peer(1)).close();
            });
            assertEquals(1, f.provider.mock.counters().liveAhs());
        }
    }

    @ParameterizedTest
    @MethodSource("throwables")
    void destroyForAnInvalidationThrowingKeepsTheAhOutOfReachAndRetriesIt(Throwable t) {
        try (FaultyFixture f = FaultyFixture.withRetention(3600, 100)) {
            AddressHandle h = f.cache.acquire(f.pd, peer(1));
            long stale = h.nativeHandle();
            h.close();
            f.provider.failNextDestroy(t);
            if (t instanceof Error) {
                assertSame(t, assertThrows(Throwable.class, f.cache::invalidateAll));
            } else {
                assertEquals(1, f.cache.invalidateAll());
            }
            assertEquals(1, f.provider.mock.counters().liveAhs(), "kept");
            assertEquals(1, f.cache.cleanUp(), "the reaper retries the invalidated AH");
            try (AddressHandle fresh = f.cache.acquire(f.pd, peer(1))) {
                assertTrue(fresh.nativeHandle() != stale, "never handed out again");
            }
        }
    }
}
