package org.efaah.verbs;

import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Supplier;

/**
 * The guarded state of one provider object: operations run under the read lock and only while
 * open; the close runs once, under the write lock, after every operation in progress. That is
 * what keeps a freed handle from ever reaching the provider.
 */
final class Guard {
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
            release.run();
            closed = true;
            return true;
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
