package org.efaah.verbs;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Supplier;

/**
 * The guarded state of one provider object: operations run under the read lock, or a datapath's
 * step in the slot beside it, and only while open; the close runs once, under the write lock and
 * holding the slot, after every operation in progress. That is what keeps a freed handle from
 * ever reaching the provider.
 */
final class Guard {
    /*
     * The slot: beside the read lock, one operation at a time may run holding the slot instead,
     * for the paths a datapath repeats (a CQ's poll, a QP's post). Taking it is one compare-and-set
     * and leaving it one release store, where the read lock makes two atomic updates (on this
     * project's hosts about 8 ns each, and an empty poll repeats it for every spin); operations that
     * find it taken take the read lock, as before. The close takes the write lock, then the slot:
     * it waits for the one operation holding it, which waits for nothing but other objects'
     * guards (a post's MR and AH: at most their own close), as a reader of the lock would, and
     * keeps it when the release succeeds, so the slot can be taken only while open. closing
     * turns new operations to the read lock meanwhile, so a thread polling in a loop cannot keep
     * the close from the slot.
     */
    private static final int FREE = 0;
    private static final int OPERATION = 1;
    private static final int CLOSER = 2;
    private static final VarHandle SLOT;

    static {
        try {
            SLOT = MethodHandles.lookup().findVarHandle(Guard.class, "slot", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @SuppressWarnings("unused") // accessed through SLOT
    private volatile int slot;
    private volatile boolean closing;
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    /** The refusal once closed; a supplier so that an owner can say why it was closed. */
    private final Supplier<String> closedMessage;
    private boolean closed;

    Guard(String what) {
        this(() -> what + " is closed");
    }

    Guard(Supplier<String> closedMessage) {
        this.closedMessage = closedMessage;
    }

    /**
     * Starts an operation without a lambda, for paths polled in a loop: pair with {@link #exit()}
     * in a finally block.
     *
     * @throws IllegalStateException if closed
     */
    void enter() {
        lock.readLock().lock();
        if (closed) {
            lock.readLock().unlock();
            throw new IllegalStateException(closedMessage.get());
        }
    }

    /**
     * {@link #enter()} that never waits, for callers that must not block (a thread's interrupt):
     * false when closed, or being closed right now.
     */
    boolean tryEnter() {
        if (!lock.readLock().tryLock()) {
            return false;
        }
        if (closed) {
            lock.readLock().unlock();
            return false;
        }
        return true;
    }

    void exit() {
        lock.readLock().unlock();
    }

    /**
     * {@link #enter()} for a step a datapath repeats, one that waits for nothing while it holds
     * the guard but other objects' guards: pass what it returns to {@link #exit(boolean)} in a
     * finally block.
     *
     * @throws IllegalStateException if closed
     */
    boolean enterStep() {
        if (!closing && SLOT.compareAndSet(this, FREE, OPERATION)) {
            return true; // never closed while the slot is free: a close that succeeds keeps it
        }
        enter();
        return false;
    }

    /** Ends a step {@link #enterStep()} began; {@code slot} is what it returned. */
    void exit(boolean slot) {
        if (slot) {
            SLOT.setRelease(this, FREE);
        } else {
            lock.readLock().unlock();
        }
    }

    <T> T get(Supplier<T> operation) {
        enter();
        try {
            return operation.get();
        } finally {
            exit();
        }
    }

    void run(Runnable operation) {
        enter();
        try {
            operation.run();
        } finally {
            exit();
        }
    }

    /**
     * Runs {@code release} once, when still open; the object is closed only if it succeeds.
     * Returns whether this call closed it.
     */
    boolean close(Runnable release) {
        lock.writeLock().lock();
        try {
            if (closed) {
                return false;
            }
            closing = true;
            for (int spins = 0; !SLOT.compareAndSet(this, FREE, CLOSER); spins++) {
                UseCountGuard.pause(spins); // one step: a poll or a post
            }
            try {
                release.run();
                closed = true;
                return true;
            } finally {
                if (!closed) {
                    SLOT.setRelease(this, FREE); // still open: steps may take the slot again
                }
                closing = false;
            }
        } finally {
            lock.writeLock().unlock();
        }
    }

    boolean isClosed() {
        lock.readLock().lock();
        try {
            return closed;
        } finally {
            lock.readLock().unlock();
        }
    }
}
