package org.efaah.verbs;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.locks.LockSupport;

/**
 * What {@link Guard} does, in one int of the guarded object itself, for objects that exist by
 * the million and are used far more often than closed (AHs): uses in progress counted in the low
 * bits, a CLOSING and a CLOSED bit above. A use enters with one compare-and-set and leaves with
 * one atomic add; the close marks CLOSING (so no new use starts), waits for the uses in progress
 * to leave, holding no lock while it waits, releases the provider object, and marks CLOSED.
 *
 * <p>Same contract as {@link Guard}: no operation reaches the provider after the close, the close
 * runs once to success, and a release that throws leaves the object open (uses that arrived
 * meanwhile waited, and then go ahead). Unlike a read-write lock's writer, the closing thread
 * may not use the object from inside {@code release} (it would wait for itself); an AH's release,
 * {@code ibv_destroy_ah}, never does.
 */
abstract class UseCountGuard {
    private static final int CLOSED = 1 << 30;
    private static final int CLOSING = 1 << 29;
    private static final int USES = CLOSING - 1;
    private static final VarHandle STATE;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(UseCountGuard.class, "state", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @SuppressWarnings("unused") // accessed through STATE
    private volatile int state;

    /** Names the object in the exception of a refused use: "AH[ahn=3, dgid=...] is closed". */
    abstract String describe();

    /**
     * Starts a use: pair with {@link #exit()} in a finally block. Waits while a close is deciding.
     *
     * @throws IllegalStateException if closed
     */
    final void enter() {
        for (int spins = 0; ; spins++) {
            int s = state;
            if ((s & CLOSED) != 0) {
                throw new IllegalStateException(describe() + " is closed");
            }
            if ((s & CLOSING) != 0) {
                pause(spins);
                continue;
            }
            if ((s & USES) == USES) {
                throw new IllegalStateException(describe() + ": too many uses at once");
            }
            if (STATE.compareAndSet(this, s, s + 1)) {
                return;
            }
        }
    }

    final void exit() {
        STATE.getAndAdd(this, -1);
    }

    /**
     * Runs {@code release} once, when still open, after every use in progress; the object is
     * closed only if it succeeds. Returns whether this call closed it.
     */
    final boolean closeAfterUses(Runnable release) {
        for (int spins = 0; ; spins++) {
            int s = state;
            if ((s & CLOSED) != 0) {
                return false;
            }
            if ((s & CLOSING) != 0) {
                pause(spins); // another close is deciding; it may fail, and then this one tries
                continue;
            }
            if (STATE.compareAndSet(this, s, s | CLOSING)) {
                break;
            }
        }
        boolean closed = false;
        try {
            for (int spins = 0; ((int) STATE.getVolatile(this) & USES) != 0; spins++) {
                pause(spins);
            }
            release.run();
            closed = true;
            return true;
        } finally {
            if (closed) {
                STATE.getAndBitwiseOr(this, CLOSED);
            }
            STATE.getAndBitwiseAnd(this, ~CLOSING);
        }
    }

    /** Whether a close has succeeded. */
    final boolean isClosed() {
        return (state & CLOSED) != 0;
    }

    /**
     * Waits a little, longer the more often it has: uses and closes last microseconds (a post, a
     * destroy), so a short spin usually suffices, and the park keeps a long one from burning a core.
     * An interrupt does not end the wait (the operation waited for will end) but is kept.
     */
    static void pause(int spins) {
        if (spins < 64) {
            Thread.onSpinWait();
        } else if (spins < 128) {
            Thread.yield();
        } else {
            boolean interrupted = Thread.interrupted();
            LockSupport.parkNanos(Math.min(1_000_000L, 1_000L << Math.min(10, (spins - 128) / 16)));
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
