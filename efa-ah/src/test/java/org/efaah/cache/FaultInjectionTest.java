package org.efaah.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.efaah.verbs.Errno;
import org.junit.jupiter.api.Test;

/**
 * Creates failing at random with ENOMEM, EINVAL, ETIME, ENODEV or EAGAIN and destroys failing at
 * random, across threads, with the invariants of {@link RandomWorkload} checked.
 */
class FaultInjectionTest {

    @Test
    void randomCreateAndDestroyFaultsAcrossEightThreads() throws Exception {
        RandomWorkload.Report r = new RandomWorkload(new RandomWorkload.Settings(8, 400_000, 6, 24, 0, 0, 0.2, 0.15,
                20260601L, TimeUnit.SECONDS.toNanos(60))).run();
        // The run must actually have exercised what it claims to check.
        Set<Errno> seen = r.errnosSeen().entrySet().stream().filter(e -> e.getValue() > 0)
                .map(java.util.Map.Entry::getKey).collect(java.util.stream.Collectors.toSet());
        assertEquals(Set.copyOf(RandomWorkload.CREATE_ERRNOS), seen, "every injected errno reached a caller");
        assertTrue(r.injectedDestroyFailures() > 10, "destroys failed: " + r.injectedDestroyFailures());
        assertTrue(r.cache().hits() > r.cache().misses(), "hits were exercised: " + r.cache());
    }

    @Test
    void slowCreatesAndDestroysWhileOthersCloseAndReacquireTheSameKeys() throws Exception {
        // Two churned keys (and two pinned) over six threads: a create takes 1 ms, long enough for
        // the other threads to pile up on it, close their handles and come back.
        RandomWorkload.Report r = new RandomWorkload(new RandomWorkload.Settings(6, 6_000, 2, 1,
                TimeUnit.MICROSECONDS.toNanos(1000), TimeUnit.MICROSECONDS.toNanos(300), 0.25, 0.2,
                20260602L, TimeUnit.SECONDS.toNanos(60))).run();
        assertTrue(r.injectedCreateFailures() > 10, "creates failed: " + r.injectedCreateFailures());
        assertTrue(r.failedAcquires() > r.injectedCreateFailures(),
                "waiters on a failing slow create got its errno too: " + r.failedAcquires() + " failed acquires for "
                        + r.injectedCreateFailures() + " failed creates");
        assertTrue(r.injectedDestroyFailures() > 10, "destroys failed: " + r.injectedDestroyFailures());
    }
}
