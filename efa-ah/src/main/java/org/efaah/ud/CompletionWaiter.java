package org.efaah.ud;

import org.efaah.verbs.InterruptedOperationException;
import org.efaah.verbs.spi.CompletionChannelVerbs;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.spi.AbstractSelectableChannel;
import java.nio.channels.spi.AbstractSelector;
import java.nio.channels.spi.SelectorProvider;
import java.util.Set;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.efaah.verbs.CompletionQueue;
import org.efaah.verbs.spi.VerbsProvider;

/**
 * How an endpoint's callers wait for a CQ's next completion between steps (a poll, a post): spin for
 * the endpoint's spin time, then, on a CQ with a completion channel, arm it, take one more step
 * (completions queued before the arm give no event), and sleep on the channel until an event, the
 * endpoint's close ({@link #stop()}), an interrupt of the waiting thread, or its deadline. Without a
 * channel (a provider without them, or an EFA device without CQ notifications) it parks in short
 * steps instead.
 *
 * <p>One caller at a time waits on a CQ: the channel gives one event per arm, so a second sleeper
 * could miss the completion the first took. The others wait for their turn (interruptibly, up to
 * their deadline); the turn guards no state and no other operation, so sends, polls and posts never
 * wait behind it. The turn passes at each wake-up: a holder that woke (an event, a park) and finds
 * others queued lets them go first ({@link Semaphore} fair), so each of them takes its step after
 * every completion event, and a send whose slot a flush's wake-up freed does not wait out the flush.
 *
 * <p>Whether a waiter may sleep is decided in one place, {@code mayIdle} (the endpoint's, answered
 * by its parts: no recovery in progress, no resend waiting, nothing taken off the CQ and not yet
 * handed out), and it
 * is asked AFTER the arm and the step that follows it, as {@code java.util.concurrent} parks: look,
 * publish the intent to wait, look again, park. A step after the arm that queues an RNR resend or
 * begins a recovery leaves state that no completion event will announce: asked before the arm
 * alone, the waiter slept through it until its deadline. A part that leaves such state from
 * another thread while one sleeps ends that sleep ({@link #wakeSleeper()}). A wait in {@code poll(2)} does not notice {@link Thread#interrupt()} by itself: the
 * interrupt reaches it as {@link AbstractSelector} lets an interrupt reach a selector's wait
 * ({@code begin()} and {@code end()} around it; the interrupt calls {@code wakeup()}, here
 * {@link CompletionQueue#wake()}). A sleep lasts at most {@value #SLICE_MILLIS} ms before the
 * caller's checks run again.
 *
 * <p>A virtual thread (Java 21 and later) never sleeps in {@code poll(2)}, which would keep its
 * carrier: on a channel with an fd it takes what is pending without waiting, then parks while the
 * library's poller thread ({@link ChannelPoller}) waits for the fd, and an event, {@link #stop()},
 * {@link #wakeSleeper()} or an interrupt unparks it. Platform threads keep the direct wait (it
 * wakes a round trip sooner: docs/benchmarks.md). The mock's channels have no fd; their waits park
 * by themselves.
 */
final class CompletionWaiter {
    /** The longest sleep before the loop looks again; an interrupt or a close ends it sooner. */
    static final int SLICE_MILLIS = 10_000;
    private static final long PARK_NANOS = 20_000;
    /** The endpoint's close: a wait ends with it. */
    private final CloseFlag closeFlag;
    /**
     * False while what is awaited raises no event on this CQ (a recovery waits for both CQs, a resend
     * for its time, taken completions for their caller): park, do not sleep. Asked after the arm.
     */
    private final BooleanSupplier mayIdle;
    /** The CQ waited on; a recovery that makes the QP anew replaces it ({@link #attach}). */
    private volatile CompletionQueue cq;
    private final long spinNanos;
    /** Fair, so that a holder passing the turn at a wake-up goes behind those queued. */
    private final Semaphore turn = new Semaphore(1, true);
    /** The thread between its arm and the end of its sleep, or null; read by {@link #wakeSleeper()}. */
    private volatile Thread sleeper;
    private final InterruptHook interruptHook;
    /** Sleeps on the channel so far; written by the one waiter holding the turn. */
    private final java.util.concurrent.atomic.AtomicLong sleeps = new java.util.concurrent.atomic.AtomicLong();

    CompletionWaiter(CloseFlag closeFlag, BooleanSupplier mayIdle, CompletionQueue cq, long spinNanos) {
        this.closeFlag = closeFlag;
        this.mayIdle = mayIdle;
        this.cq = cq;
        this.spinNanos = spinNanos;
        this.interruptHook = new InterruptHook(this);
    }

    /** How often a wait has gone to sleep on the channel (each sleep costs a wake-up: two context switches). */
    long sleeps() {
        return sleeps.getOpaque();
    }

    /** Whether waits sleep on a completion channel. */
    boolean eventDriven() {
        return cq.hasEvents();
    }

    /**
     * Takes {@code step} until it returns true (then true) or {@code deadline} (a {@link System#nanoTime}
     * value) passes (then false, after one last step). Holds no lock while it waits.
     *
     * @throws InterruptedOperationException if interrupted (the flag set again)
     * @throws IllegalStateException         if the endpoint is or gets closed
     */
    boolean await(BooleanSupplier step, long deadline, String operation) {
        if (!takeTurn(deadline, operation)) {
            return step.getAsBoolean();
        }
        boolean held = true;
        try {
            long spinEnd = System.nanoTime() + spinNanos;
            for (;;) {
                if (step.getAsBoolean()) {
                    return true;
                }
                long now = System.nanoTime();
                if (now - deadline > 0) {
                    return false;
                }
                if (Thread.interrupted()) {
                    Thread.currentThread().interrupt();
                    throw new InterruptedOperationException(operation + " interrupted", null);
                }
                closeFlag.checkOpen();
                if (now - spinEnd < 0) {
                    Thread.onSpinWait();
                    continue;
                }
                if (!cq.hasEvents() || !mayIdle.getAsBoolean()) {
                    // Nothing to sleep on, or what is awaited raises no event on this CQ (a
                    // recovery waits for both CQs, a resend for its time): a short park.
                    LockSupport.parkNanos(PARK_NANOS);
                } else if (sleep(step, deadline)) {
                    return true;
                }
                if (turn.hasQueuedThreads()) {
                    // Woken: those queued for the turn take their step first (what woke this one may
                    // be what they wait for), then this one goes on.
                    turn.release();
                    held = false;
                    if (!takeTurn(deadline, operation)) {
                        return step.getAsBoolean();
                    }
                    held = true;
                }
            }
        } finally {
            if (held) {
                turn.release();
            }
        }
    }

    /** The turn, waited for up to {@code deadline}; false past it. */
    private boolean takeTurn(long deadline, String operation) {
        try {
            return turn.tryAcquire(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedOperationException(operation + " interrupted", e);
        }
    }

    /**
     * Arms the CQ, steps once more, asks {@code mayIdle}, then sleeps up to a slice; true when that
     * step succeeded. The sleeper is published before the step, so that a part that leaves
     * event-less state from another thread after it ({@link #wakeSleeper()}) wakes this one.
     */
    private boolean sleep(BooleanSupplier step, long deadline) {
        CompletionQueue cq = this.cq;
        try {
            cq.requestNotification();
            sleeper = Thread.currentThread();
            if (step.getAsBoolean()) {
                return true;
            }
            if (!mayIdle.getAsBoolean()) {
                return false; // the step left what no event announces: the loop parks and steps again
            }
            long left = deadline - System.nanoTime();
            int millis = (int) Math.min(SLICE_MILLIS, Math.max(0, (left + 999_999) / 1_000_000));
            if (millis > 0) {
                int events;
                sleeps.setOpaque(sleeps.getOpaque() + 1);
                int fd = ChannelPoller.currentIsVirtual() ? cq.eventFd() : -1;
                if (fd >= 0) {
                    events = park(cq, fd, millis);
                } else {
                    interruptHook.enter();
                    try {
                        events = cq.awaitEvents(millis);
                    } finally {
                        interruptHook.exit();
                    }
                }
                if (events == CompletionChannelVerbs.CHANNEL_STOPPED) {
                    closeFlag.checkOpen(); // stopped by close: this throws; else the device went, and the step says so
                }
            }
            return false;
        } catch (IllegalStateException e) {
            closeFlag.checkOpen();
            if (cq != this.cq || !mayIdle.getAsBoolean()) {
                return false; // a recovery closed this CQ to make a new one: wait on that
            }
            throw e;
        } finally {
            sleeper = null;
        }
    }

    /**
     * The sleep of a virtual thread on a channel with an fd: take what is pending without waiting (a
     * stop, too), else park until the poller sees the fd readable, an unpark ({@link #wakeSleeper},
     * {@link #stop}, an interrupt) or {@code millis}, and take what is pending then. Waiting in
     * {@code poll(2)} instead would keep the virtual thread's carrier for the whole wait. A
     * provider without a poller gets today's wait on the channel.
     */
    private int park(CompletionQueue cq, int fd, int millis) {
        int events = cq.awaitEvents(0);
        if (events != 0) {
            return events;
        }
        if (!ChannelPoller.park(cq.device().provider().completionChannels(), fd, TimeUnit.MILLISECONDS.toNanos(millis))) {
            return cq.awaitEvents(millis);
        }
        return cq.awaitEvents(0);
    }

    /**
     * Ends the sleep of a waiter on this CQ, if one is between its arm and its wake-up, unless that is
     * the calling thread (it asks {@code mayIdle} itself before it sleeps): for a part that has just
     * left state no completion event announces (a resend queued, a recovery begun, datagrams kept for
     * the next caller). A wake that comes before the wait ends the wait at once. Any thread, no lock.
     */
    void wakeSleeper() {
        Thread s = sleeper;
        if (s != null && s != Thread.currentThread()) {
            cq.wake();
            LockSupport.unpark(s); // a parked virtual thread; otherwise a stray permit, which a park tolerates
        }
    }

    /**
     * What lets {@link Thread#interrupt()} end a sleep in {@code poll(2)}: {@link AbstractSelector}'s
     * {@code begin()} registers the selector with the thread so that an interrupt calls
     * {@link #wakeup()}; no selector function is used otherwise. One per waiter, reused.
     */
    private static final class InterruptHook extends AbstractSelector {
        private final CompletionWaiter waiter;

        InterruptHook(CompletionWaiter waiter) {
            super(SelectorProvider.provider());
            this.waiter = waiter;
        }

        void enter() {
            begin();
        }

        void exit() {
            end();
        }

        @Override
        public Selector wakeup() {
            waiter.cq.wake();
            return this;
        }

        @Override
        protected void implCloseSelector() {
            // nothing to release: the CQ is the endpoint's
        }

        @Override
        protected SelectionKey register(AbstractSelectableChannel ch, int ops, Object att) {
            throw new UnsupportedOperationException("not a selector");
        }

        @Override
        public Set<SelectionKey> keys() {
            throw new UnsupportedOperationException("not a selector");
        }

        @Override
        public Set<SelectionKey> selectedKeys() {
            throw new UnsupportedOperationException("not a selector");
        }

        @Override
        public int selectNow() {
            throw new UnsupportedOperationException("not a selector");
        }

        @Override
        public int select(long timeout) {
            throw new UnsupportedOperationException("not a selector");
        }

        @Override
        public int select() {
            throw new UnsupportedOperationException("not a selector");
        }
    }

    /** At a recovery that made new CQs: waits go to the new one (the old one's close ended those on it). */
    void attach(CompletionQueue newCq) {
        cq = newCq;
    }

    /** Ends every sleep on the channel, now and later: for the endpoint's close. */
    void stop() {
        cq.stopWaiting();
        Thread s = sleeper;
        if (s != null) {
            LockSupport.unpark(s); // a parked virtual thread; one that parks later sees the stop first
        }
    }
}
