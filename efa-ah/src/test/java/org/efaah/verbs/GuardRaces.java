package org.efaah.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

/** The close's contract, raced, for both guards (Guard, UseCountGuard): shared by their tests. */
final class GuardRaces {
    /** One guarded object: a use of user {@code user} enters (throwing once closed) and exits. */
    interface Guarded {
        boolean enter(int user);

        void exit(boolean entered);

        boolean close(Runnable release);
    }

    private GuardRaces() {
    }

    /**
     * Three users in loops, then a close: no use is in progress while the release runs, and none
     * starts after it; every user ends on the refusal. Fifty rounds.
     */
    static void noUseOverlapsTheReleaseAndNoneStartsAfterIt(Supplier<Guarded> make) throws InterruptedException {
        for (int round = 0; round < 50; round++) {
            Guarded g = make.get();
            AtomicInteger inUse = new AtomicInteger();
            AtomicInteger afterClose = new AtomicInteger();
            AtomicBoolean closed = new AtomicBoolean();
            AtomicReference<String> violation = new AtomicReference<>();
            CountDownLatch started = new CountDownLatch(3);
            Thread[] users = new Thread[3];
            for (int i = 0; i < users.length; i++) {
                int user = i;
                users[i] = new Thread(() -> {
                    started.countDown();
                    for (;;) {
                        boolean entered;
                        try {
                            entered = g.enter(user);
                        } catch (IllegalStateException e) {
                            return;
                        }
                        try {
                            inUse.incrementAndGet();
                            if (closed.get()) {
                                afterClose.incrementAndGet();
                            }
                            Thread.onSpinWait();
                            inUse.decrementAndGet();
                        } finally {
                            g.exit(entered);
                        }
                    }
                });
                users[i].start();
            }
            assertTrue(started.await(10, TimeUnit.SECONDS));
            assertTrue(g.close(() -> {
                if (inUse.get() != 0) {
                    violation.set(inUse.get() + " use(s) in progress during the release");
                }
                closed.set(true);
            }));
            for (Thread u : users) {
                u.join(10_000);
                assertFalse(u.isAlive());
            }
            assertNull(violation.get());
            assertEquals(0, afterClose.get());
        }
    }
}
