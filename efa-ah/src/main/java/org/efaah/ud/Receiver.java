package org.efaah.ud;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;

/*
 * The receive side's waits, on arguments the endpoint has checked: a loop of steps (the slots lend
 * what the CQ holds; a recovery step when nothing came) with the waits between them on the receive
 * CQ's waiter, which holds no lock while it waits. Beneath it: the slots, the recovery and the
 * waiter, all three handed to it by the endpoint.
 */
final class Receiver {
    /** Beyond the flush bound, the time a recovery's last step (destroy and remake) may take. */
    private static final long RECOVERY_MARGIN_NANOS = TimeUnit.SECONDS.toNanos(1);

    private final ReceiveSlots slots;
    private final QpRecovery recovery;
    private final CompletionWaiter waiter;
    private final long recoveryFlushNanos;
    /** A step object per wait, reused: a receive that has to wait allocates nothing either. */
    private final AtomicReference<Step> spare = new AtomicReference<>(new Step());
    private final BooleanSupplier recoveryStep;

    Receiver(ReceiveSlots slots, QpRecovery recovery, CompletionWaiter waiter, long recoveryFlushNanos) {
        this.slots = slots;
        this.recovery = recovery;
        this.waiter = waiter;
        this.recoveryFlushNanos = recoveryFlushNanos;
        this.recoveryStep = () -> {
            recovery.recoverIfNeeded();
            return !recovery.needsRecovery();
        };
    }

    /**
     * Lent datagrams, up to {@code limit}, once at least one came; null at the deadline. An error
     * completion is thrown once the recovery it began is over (see {@link #finishRecovery}).
     */
    DatagramView await(int limit, long deadline) {
        try {
            return awaitLent(limit, deadline);
        } catch (WorkCompletionException e) {
            finishRecovery(e);
            throw e;
        }
    }

    /** One poll for datagrams, without waiting; a recovery step when none came. */
    DatagramView poll(int limit) {
        DatagramView v;
        try {
            v = slots.lend(limit);
        } catch (WorkCompletionException e) {
            try {
                recovery.recoverIfNeeded();
            } catch (RuntimeException stopped) {
                e.addSuppressed(stopped); // a remake that failed: the error it follows is not lost
            }
            throw e;
        }
        if (v == null) {
            recovery.recoverIfNeeded();
        }
        return v;
    }

    /*
     * The receive's Javadoc promises the QP recovered when its error is thrown, so that address()
     * then names the QP that receives (a new QPN after a remake). One recovery step drains a QP
     * whose ERR flushes; where ERR flushes nothing (EFA as documented) the QP is remade only past
     * the flush bound, so the steps go on here, parked between them, until then. What stops the
     * wait (an interrupt, a close, a remake that failed) rides on the error as suppressed; a later
     * call takes the recovery on, except after a failed remake, which ends the endpoint (QpRecovery).
     */
    private void finishRecovery(WorkCompletionException e) {
        // An endpoint a failed remake ended has nothing to finish: that failure already rides on e.
        if (!recovery.needsRecovery() || recovery.ended() != null) {
            return;
        }
        try {
            waiter.await(recoveryStep, System.nanoTime() + recoveryFlushNanos + RECOVERY_MARGIN_NANOS, "receive");
        } catch (RuntimeException stopped) {
            e.addSuppressed(stopped);
        }
    }

    private DatagramView awaitLent(int limit, long deadline) {
        DatagramView v = poll(limit);
        if (v != null) {
            return v;
        }
        Step step = spare.getAndSet(null);
        if (step == null) {
            step = new Step(); // another thread waits with the spare one
        }
        try {
            step.limit = limit;
            waiter.await(step, deadline, "receive");
            return step.got;
        } finally {
            step.got = null;
            spare.set(step);
        }
    }

    private final class Step implements BooleanSupplier {
        int limit;
        DatagramView got;

        @Override
        public boolean getAsBoolean() {
            got = poll(limit);
            return got != null;
        }
    }
}
