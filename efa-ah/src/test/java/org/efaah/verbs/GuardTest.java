package org.efaah.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The provider objects' guard with its slot for datapath steps: a step holding the slot is an
 * operation as one under the read lock is (the release never overlaps it, none starts after a
 * close), a failed release frees the slot again, and steps in a loop never keep the close out.
 */
class GuardTest {
    @Test
    void theCloseWaitsForAStepHoldingTheSlotAndThenRefusesSteps() throws Exception {
        Guard g = new Guard("thing");
        boolean slot = g.enterStep();
        assertTrue(slot, "the first step takes the slot");
        assertFalse(g.enterStep(), "a second step at once takes the read lock");
        g.exit(false);
        AtomicBoolean released = new AtomicBoolean();
        Thread closer = new Thread(() -> g.close(() -> released.set(true)));
        closer.start();
        closer.join(200);
        assertTrue(closer.isAlive(), "the close must wait for the step in progress");
        assertFalse(released.get());
        g.exit(slot);
        closer.join(10_000);
        assertFalse(closer.isAlive());
        assertTrue(released.get());
        assertTrue(g.isClosed());
        IllegalStateException e = assertThrows(IllegalStateException.class, g::enterStep);
        assertEquals("thing is closed", e.getMessage());
        assertFalse(g.close(() -> { throw new AssertionError("released twice"); }), "a second close does nothing");
    }

    @Test
    void aFailedReleaseFreesTheSlotAgain() {
        Guard g = new Guard("thing");
        RuntimeException refused = new VerbsException("ibv_destroy_cq", Errno.EBUSY, "injected");
        assertThrows(VerbsException.class, () -> g.close(() -> { throw refused; }));
        assertFalse(g.isClosed());
        boolean slot = g.enterStep();
        assertTrue(slot, "still open: a step takes the slot again");
        g.exit(slot);
        assertTrue(g.close(() -> { }), "a later close succeeds");
    }

    @Test
    void aStepTakenWhileTheCloseWaitsGoesToTheReadLockNotTheSlot() throws Exception {
        Guard g = new Guard("thing");
        boolean slot = g.enterStep();
        assertTrue(slot);
        Thread closer = new Thread(() -> g.close(() -> { }));
        closer.start();
        // The close holds the write lock and waits for the slot, parked between its tries.
        while (closer.getState() != Thread.State.TIMED_WAITING) {
            assertTrue(closer.isAlive(), "the close ended while a step held the slot");
            Thread.onSpinWait();
        }
        // A thread stepping in a loop, at once again: were it to take the slot it freed, a close
        // could wait behind it for ever. It waits for the close instead, which then refuses it.
        g.exit(slot);
        IllegalStateException e = assertThrows(IllegalStateException.class, g::enterStep);
        assertEquals("thing is closed", e.getMessage());
        closer.join(10_000);
        assertFalse(closer.isAlive());
        assertTrue(g.isClosed());
    }

    @Test
    void noStepOrOperationOverlapsTheReleaseAndNoneStartsAfterIt() throws Exception {
        for (int round = 0; round < 50; round++) {
            Guard g = new Guard("thing");
            AtomicInteger inUse = new AtomicInteger();
            AtomicInteger afterClose = new AtomicInteger();
            AtomicBoolean closed = new AtomicBoolean();
            AtomicReference<String> violation = new AtomicReference<>();
            CountDownLatch started = new CountDownLatch(3);
            Thread[] users = new Thread[3];
            for (int i = 0; i < users.length; i++) {
                boolean steps = i < 2; // two take steps (the slot or the read lock), one the read lock alone
                users[i] = new Thread(() -> {
                    started.countDown();
                    for (;;) {
                        boolean slot;
                        try {
                            if (steps) {
                                slot = g.enterStep();
                            } else {
                                g.enter();
                                slot = false;
                            }
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
                            g.exit(slot);
                        }
                    }
                });
                users[i].start();
            }
            assertTrue(started.await(10, TimeUnit.SECONDS));
            assertTrue(g.close(() -> {
                if (inUse.get() != 0) {
                    violation.set(inUse.get() + " operation(s) in progress during the release");
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
