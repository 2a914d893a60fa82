package org.efaah.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.atomic.AtomicBoolean;
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
        // Two users take steps (the slot, or the read lock when the other has it), one the read lock alone.
        GuardRaces.noUseOverlapsTheReleaseAndNoneStartsAfterIt(() -> new GuardRaces.Guarded() {
            final Guard g = new Guard("thing");

            @Override
            public boolean enter(int user) {
                if (user < 2) {
                    return g.enterStep();
                }
                g.enter();
                return false;
            }

            @Override
            public void exit(boolean slot) {
                g.exit(slot);
            }

            @Override
            public boolean close(Runnable release) {
                return g.close(release);
            }
        });
    }
}
