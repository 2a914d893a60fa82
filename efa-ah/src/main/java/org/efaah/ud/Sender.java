package org.efaah.ud;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.efaah.cache.AddressHandle;
import org.efaah.verbs.Errno;
import org.efaah.verbs.VerbsException;

/*
 * The send side's waits, on arguments the endpoint has checked: a send, a batch, a flush and the
 * close's drain. Each is a loop of steps (a recovery step, then one of the slots' steps under their
 * lock) with the waits between them on the send CQ's waiter, which holds no lock while it waits.
 * Beneath it: the slots, the recovery and the waiter, all three handed to it by the endpoint.
 */
final class Sender {
    /** A send waits this long for a free slot before it fails with ETIMEDOUT, naming a send in flight. */
    private static final long SLOT_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(10);
    /** The close's drain waits this long at most for the sends in flight. */
    private static final long DRAIN_NANOS = TimeUnit.SECONDS.toNanos(1);
    private static final long PARK_NANOS = 20_000;
    private static final int SPINS = 10_000;

    private final SendSlots slots;
    private final QpRecovery recovery;
    private final CompletionWaiter waiter;
    /** A step object per wait, reused: a send that waits for a slot allocates nothing either. */
    private final AtomicReference<Step> spare = new AtomicReference<>(new Step());
    private final BooleanSupplier flushStep;

    Sender(SendSlots slots, QpRecovery recovery, CompletionWaiter waiter) {
        this.slots = slots;
        this.recovery = recovery;
        this.waiter = waiter;
        this.flushStep = () -> {
            recovery.recoverIfNeeded();
            return slots.flushStep();
        };
    }

    /** Posts one payload of {@code length} bytes, waiting for a slot when none is free. */
    void send(AddressHandle ah, int remoteQpn, long remoteQkey, ByteBuffer payload, int length) {
        recovery.recoverIfNeeded();
        if (slots.tryPost(ah, remoteQpn, remoteQkey, payload, length)) {
            return;
        }
        Step step = takeStep();
        boolean posted;
        try {
            step.set(ah, remoteQpn, remoteQkey, payload, length);
            posted = waiter.await(step, System.nanoTime() + SLOT_TIMEOUT_NANOS, "send");
        } finally {
            giveBack(step);
        }
        if (!posted) {
            throw stalled();
        }
    }

    /** Posts {@code count} payloads from {@code offset}, as many per post as slots are free. */
    void sendBatch(AddressHandle ah, int remoteQpn, long remoteQkey, ByteBuffer[] payloads, int offset, int count) {
        int done = 0;
        while (done < count) {
            recovery.recoverIfNeeded();
            int n = slots.tryPostBatch(ah, remoteQpn, remoteQkey, payloads, offset + done, count - done);
            if (n > 0) {
                done += n;
                continue;
            }
            // No slot free: wait for one as a send does, then post the rest in the next round.
            Step step = takeStep();
            boolean posted;
            try {
                step.set(ah, remoteQpn, remoteQkey, payloads, offset + done, count - done);
                posted = waiter.await(step, System.nanoTime() + SLOT_TIMEOUT_NANOS, "send");
                done += step.posted;
            } finally {
                giveBack(step);
            }
            if (!posted) {
                throw stalled();
            }
        }
    }

    /** Until every send posted so far has completed: true, or false at the deadline. */
    boolean flush(long deadline) {
        return waiter.await(flushStep, deadline, "flush");
    }

    /**
     * The close's wait for the sends in flight, at most {@link #DRAIN_NANOS}, holding no lock, and
     * none while a recovery is due (it would give them up anyway) or once the thread is interrupted.
     */
    void drain() {
        long deadline = System.nanoTime() + DRAIN_NANOS;
        for (int idle = 0; System.nanoTime() - deadline < 0 && !Thread.currentThread().isInterrupted(); idle++) {
            if (recovery.needsRecovery() || slots.drainStep()) {
                return;
            }
            if (idle < SPINS) {
                Thread.onSpinWait();
            } else {
                LockSupport.parkNanos(PARK_NANOS);
            }
        }
    }

    private Step takeStep() {
        Step step = spare.getAndSet(null);
        return step != null ? step : new Step(); // another thread waits with the spare one
    }

    private void giveBack(Step step) {
        step.set(null, 0, 0, null, 0, 0);
        spare.set(step);
    }

    private VerbsException stalled() {
        return new VerbsException("ibv_poll_cq", Errno.ETIMEDOUT, slots.stalledSendDetail());
    }

    /** One try of a send waiting for a slot: of one payload, or of a batch ({@link #batch} not null). */
    private final class Step implements BooleanSupplier {
        private AddressHandle ah;
        private int remoteQpn;
        private long remoteQkey;
        private ByteBuffer payload;
        private int length;
        private ByteBuffer[] batch;
        private int from;
        private int count;
        /** A batch's payloads posted by the try that succeeded. */
        int posted;

        void set(AddressHandle ah, int remoteQpn, long remoteQkey, ByteBuffer payload, int length) {
            this.ah = ah;
            this.remoteQpn = remoteQpn;
            this.remoteQkey = remoteQkey;
            this.payload = payload;
            this.length = length;
            this.batch = null;
        }

        void set(AddressHandle ah, int remoteQpn, long remoteQkey, ByteBuffer[] batch, int from, int count) {
            set(ah, remoteQpn, remoteQkey, null, 0);
            this.batch = batch;
            this.from = from;
            this.count = count;
            this.posted = 0;
        }

        @Override
        public boolean getAsBoolean() {
            recovery.recoverIfNeeded();
            if (batch == null) {
                return slots.tryPost(ah, remoteQpn, remoteQkey, payload, length);
            }
            posted = slots.tryPostBatch(ah, remoteQpn, remoteQkey, batch, from, count);
            return posted > 0;
        }
    }
}
