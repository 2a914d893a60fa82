package org.efaah.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The AH's guard: what the read-write lock gave (no use overlaps the release, close once), in an int. */
class UseCountGuardTest {
    private static final class Guarded extends UseCountGuard {
        @Override
        String describe() {
            return "thing";
        }
    }

    @Test
    void theCloseWaitsForTheUseInProgressAndThenRefusesUse() throws Exception {
        Guarded g = new Guarded();
        g.enter();
        AtomicBoolean released = new AtomicBoolean();
        Thread closer = new Thread(() -> g.closeAfterUses(() -> released.set(true)));
        closer.start();
        closer.join(200);
        assertTrue(closer.isAlive(), "the close must wait for the use in progress");
        assertFalse(released.get());
        g.exit();
        closer.join(10_000);
        assertFalse(closer.isAlive());
        assertTrue(released.get());
        assertTrue(g.isClosed());
        IllegalStateException e = assertThrows(IllegalStateException.class, g::enter);
        assertEquals("thing is closed", e.getMessage());
    }

    @Test
    void closeRunsTheReleaseOnceAndIsIdempotent() {
        Guarded g = new Guarded();
        AtomicInteger releases = new AtomicInteger();
        assertTrue(g.closeAfterUses(releases::incrementAndGet));
        assertFalse(g.closeAfterUses(releases::incrementAndGet));
        assertEquals(1, releases.get());
    }

    @Test
    void aFailedReleaseLeavesItOpenAndAUseThatArrivedMeanwhileGoesAhead() throws Exception {
        Guarded g = new Guarded();
        CountDownLatch releasing = new CountDownLatch(1);
        CountDownLatch fail = new CountDownLatch(1);
        AtomicReference<Throwable> closeOutcome = new AtomicReference<>();
        Thread closer = new Thread(() -> {
            try {
                g.closeAfterUses(() -> {
                    releasing.countDown();
                    try {
                        fail.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    throw new VerbsException("ibv_destroy_ah", Errno.EBUSY, "injected");
                });
            } catch (Throwable t) {
                closeOutcome.set(t);
            }
        });
        closer.start();
        assertTrue(releasing.await(10, TimeUnit.SECONDS));
        AtomicBoolean used = new AtomicBoolean();
        Thread user = new Thread(() -> {
            g.enter();
            used.set(true);
            g.exit();
        });
        user.start();
        user.join(200);
        assertTrue(user.isAlive(), "a use must wait while the close decides");
        fail.countDown();
        user.join(10_000);
        closer.join(10_000);
        assertTrue(used.get(), "the close failed, so the use goes ahead");
        assertTrue(closeOutcome.get() instanceof VerbsException);
        assertFalse(g.isClosed());
        assertTrue(g.closeAfterUses(() -> { }), "a later close succeeds");
    }

    @Test
    void noUseOverlapsTheReleaseAndNoneStartsAfterIt() throws Exception {
        GuardRaces.noUseOverlapsTheReleaseAndNoneStartsAfterIt(() -> new GuardRaces.Guarded() {
            final Guarded g = new Guarded();

            @Override
            public boolean enter(int user) {
                g.enter();
                return true;
            }

            @Override
            public void exit(boolean entered) {
                g.exit();
            }

            @Override
            public boolean close(Runnable release) {
                return g.closeAfterUses(release);
            }
        });
    }
}
