package org.efaah.ud;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.locks.LockSupport;

/*
 * The send and receive slots' lock: reentrant mutual exclusion, as ReentrantLock.lock/unlock, whose
 * release is a release store. ReentrantLock's release is a volatile write, which on x86 is a fence,
 * and a waiting thread repeats its step (a poll, a post) under this lock: the fence was 5 to 7 ns of
 * an empty poll's 61 (docs/benchmarks.md, "Own code by profile").
 *
 * Without a fence between the release and its look at the waiters, that look may come before the
 * release is seen, and miss a waiter that counted itself in and looked at the lock just then: that
 * waiter would sleep with the lock free. So a waiter never sleeps for long: it parks for at most
 * PARK_NANOS and looks again, and the release unparks the longest waiter when it sees any. A missed
 * wake-up costs the waiter one park, never the lock.
 *
 * The lock is held for one step (a poll, a post, a recovery's step, a close's destroys) and never
 * across a wait for a completion: a thread that finds it held spins briefly, then parks. An
 * interrupt does not end the wait (as ReentrantLock.lock) and is kept for the caller.
 */
final class SlotsLock {
    private static final VarHandle STATE;
    private static final VarHandle WAITING;
    private static final int SPINS = 64;
    /** The longest a waiter sleeps before it looks again (a wake-up the release missed costs this). */
    static final long PARK_NANOS = 50_000;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            STATE = l.findVarHandle(SlotsLock.class, "state", int.class);
            WAITING = l.findVarHandle(SlotsLock.class, "waiting", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** 1 while held; taken by compare-and-set, given back by a release store. */
    @SuppressWarnings("unused")
    private volatile int state;
    /** Waiters counted in before they park. */
    @SuppressWarnings("unused")
    private volatile int waiting;
    private final ConcurrentLinkedQueue<Thread> parked = new ConcurrentLinkedQueue<>();
    /** The holder, written by it after its compare-and-set; a thread sees itself here only if it holds the lock. */
    private Thread owner;
    /** The holder's count of its holds; read and written by the holder alone. */
    private int holds;

    void lock() {
        Thread self = Thread.currentThread();
        if (owner == self) {
            holds++;
            return;
        }
        if (!STATE.compareAndSet(this, 0, 1)) {
            waitFor(self);
        }
        owner = self;
        holds = 1;
    }

    void unlock() {
        if (owner != Thread.currentThread()) {
            throw new IllegalMonitorStateException("the slots' lock is not held by this thread");
        }
        if (--holds > 0) {
            return;
        }
        owner = null;
        STATE.setRelease(this, 0);
        if ((int) WAITING.getOpaque(this) != 0) {
            Thread next = parked.peek();
            if (next != null) {
                LockSupport.unpark(next);
            }
        }
    }

    /** {@return whether the calling thread holds the lock} */
    boolean isHeldByCurrentThread() {
        return owner == Thread.currentThread();
    }

    private boolean tryTake() {
        return (int) STATE.getOpaque(this) == 0 && STATE.compareAndSet(this, 0, 1);
    }

    private void waitFor(Thread self) {
        boolean interrupted = false;
        for (;;) {
            for (int i = 0; i < SPINS; i++) {
                if (tryTake()) {
                    if (interrupted) {
                        self.interrupt();
                    }
                    return;
                }
                Thread.onSpinWait();
            }
            parked.add(self);
            WAITING.getAndAdd(this, 1); // a full fence: the look below follows the count's store
            try {
                if (tryTake()) {
                    if (interrupted) {
                        self.interrupt();
                    }
                    return;
                }
                LockSupport.parkNanos(this, PARK_NANOS);
                interrupted |= Thread.interrupted(); // else a set flag would end every park at once
            } finally {
                WAITING.getAndAdd(this, -1);
                parked.remove(self);
            }
        }
    }
}
