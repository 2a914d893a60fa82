package org.efaah.internal;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.efaah.health.HealthCheck;
import org.efaah.health.HealthStatus;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The library's one shape of background thread (a device's asynchronous events, the network
 * watcher, a cache's reaper), for the library's own packages; not something a caller needs. An
 * {@link Agent} does the work; this runs it on a daemon thread of its own, the way Agrona's
 * {@code AgentRunner} runs an {@code Agent}.
 */
public final class BackgroundReader {
    /** What a background thread does; every method but {@link #wake} runs on that thread. */
    public interface Agent {
        /**
         * Runs first, and again after each failure before work resumes (a reader re-reads what a
         * failure may have lost).
         *
         * @throws Exception a failure, handled as a failed {@link #doWork}
         */
        default void onStart() throws Exception {
        }

        /**
         * One round of work, waiting a bounded time at most (on its channel, or parked: a
         * {@link #wake} or an unpark ends the wait).
         *
         * @return false when there will never be more to do: the thread then closes and ends
         * @throws Exception a failure: the thread backs off, reports itself DEGRADED, and tries again
         */
        boolean doWork() throws Exception;

        /**
         * Ends a wait of {@link #doWork} in progress, or the next one; from any thread, never blocks.
         * The thread is also unparked.
         */
        default void wake() {
        }

        /** Frees what the agent holds (its channel), once, on its own thread (see {@link #stop}). */
        default void onClose() {
        }
    }

    private static final Logger LOG = LoggerFactory.getLogger(BackgroundReader.class);
    /** How long {@link #stop} waits for the thread to end. */
    static final long STOP_MILLIS = TimeUnit.SECONDS.toMillis(5);
    static final long FIRST_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    static final long MAX_BACKOFF_NANOS = TimeUnit.SECONDS.toNanos(1);

    private final Agent agent;
    private final String what;
    private final Thread thread;
    private volatile boolean stopping;
    private volatile Throwable failure;
    private volatile long failures;
    /*
     * Guarded by this. closing: the agent's close has begun (no wake reaches the channel from
     * then on); closed: it has returned, so the channel is freed and no thread of this reader
     * touches it or its parent again. Only closed lets what depends on the channel's parent
     * (the device context) go: the reader may still be inside the provider's free of the channel
     * while closing. afterClose: what waits for closed.
     */
    private boolean closing;
    private boolean closed;
    private final List<Runnable> afterClose = new ArrayList<>(1);

    private BackgroundReader(Agent agent, String threadName, String what) {
        this.agent = agent;
        this.what = what;
        this.thread = newThread(this::run, threadName);
    }

    /*
     * A thread that keeps nothing of the thread that made it: it may live as long as the device
     * or cache it serves, which may outlive the caller's class loader (an application server's
     * deployment, a plugin). So no inherited thread locals, the library's own class loader as its
     * context loader (not the caller's), and an access control context made without the caller's
     * frames (a thread inherits the protection domains on its creator's stack, each holding its
     * class loader, until it ends). Its thread group is the caller's: the thread ends with what
     * needs it (the device's or the cache's close joins it).
     */
    @SuppressWarnings("removal") // AccessController: what the JDK 17 Thread constructor reads
    private static Thread newThread(Runnable work, String name) {
        Thread t = java.security.AccessController.doPrivileged(
                (java.security.PrivilegedAction<Thread>) () -> new Thread(null, work, name, 0, false));
        t.setContextClassLoader(BackgroundReader.class.getClassLoader());
        t.setDaemon(true);
        return t;
    }

    /**
     * A reader not yet started.
     *
     * @param agent      the work
     * @param threadName the thread's name
     * @param what       what it reads, for logs and health ("asynchronous events of efa_0")
     * @return the reader; {@link #start()} it
     */
    public static BackgroundReader of(Agent agent, String threadName, String what) {
        return new BackgroundReader(Objects.requireNonNull(agent, "agent"), threadName, what);
    }

    /**
     * Starts the thread.
     *
     * @return this
     */
    public BackgroundReader start() {
        thread.start();
        return this;
    }

    /**
     * The thread; for tests.
     *
     * @return the thread
     */
    public Thread thread() {
        return thread;
    }

    /**
     * Whether the last round failed and the reader is backing off to try again.
     *
     * @return true while DEGRADED
     */
    public boolean degraded() {
        return failure != null;
    }

    /**
     * The reader's health: UP while its rounds succeed, DEGRADED with the last failure while they
     * fail (it keeps trying), DOWN once stopped.
     *
     * @param name    the check's name, e.g. {@code event_reader}
     * @param subject what it was checked on
     * @return the check
     */
    public HealthCheck health(String name, String subject) {
        Throwable f = failure;
        if (stopping || !thread.isAlive() && thread.getState() != Thread.State.NEW) {
            return new HealthCheck(name, subject, HealthStatus.DOWN, 0, -1, what + ": stopped");
        }
        if (f != null) {
            return new HealthCheck(name, subject, HealthStatus.DEGRADED, failures, 0, what + ": " + failures
                    + " failed read(s) in a row, retrying with backoff; last: " + f);
        }
        return new HealthCheck(name, subject, HealthStatus.UP, 0, 0, what + ": reading");
    }

    /**
     * Whether {@link #stop} was called: an agent's round ends early.
     *
     * @return true once stopping
     */
    public boolean stopping() {
        return stopping;
    }

    /** Lets the thread see a stop, or a new state, now rather than at the end of its wait. */
    public void wake() {
        synchronized (this) {
            if (!closing) {
                agent.wake(); // never on a channel being freed: the close begins under this lock
            }
        }
        LockSupport.unpark(thread);
    }

    private void run() {
        boolean started = false;
        long backoff = FIRST_BACKOFF_NANOS;
        try {
            while (!stopping) {
                try {
                    if (!started) {
                        agent.onStart();
                        started = true;
                    }
                    if (!agent.doWork()) {
                        return;
                    }
                    if (failure != null) {
                        LOG.info("{}: reading again after {} failure(s)", what, failures);
                        failure = null;
                        failures = 0;
                    }
                    backoff = FIRST_BACKOFF_NANOS;
                } catch (Throwable t) {
                    if (stopping) {
                        return; // a channel woken or closed by the stop
                    }
                    if (failure == null) {
                        LOG.warn("{} failed; retrying with backoff, DEGRADED until it reads again", what, t);
                    }
                    failure = t;
                    failures++;
                    started = false; // a failed read may have lost what it was reading: start over
                    LockSupport.parkNanos(this, backoff);
                    backoff = Math.min(MAX_BACKOFF_NANOS, backoff * 2);
                }
            }
        } finally {
            closeAgent();
        }
    }

    /** Closes the agent once, then runs what waited for that; on the thread, or a stop from it. */
    private void closeAgent() {
        synchronized (this) {
            if (closing) {
                return;
            }
            closing = true;
        }
        List<Runnable> then;
        try {
            agent.onClose();
        } catch (Throwable t) {
            // Logged, not thrown: what waits for the close (the device context's) must still run.
            LOG.warn("{}: freeing its channel failed", what, t);
        } finally {
            // Returned or thrown, the agent's close is over: nothing of this reader uses the
            // channel any more.
            synchronized (this) {
                closed = true;
                then = List.copyOf(afterClose);
                afterClose.clear();
            }
        }
        then.forEach(Runnable::run);
    }

    /**
     * Stops the thread, which frees the agent's channel ({@link Agent#onClose}) itself: the stop
     * never frees it under a wait in progress. From the thread itself (a listener closing its
     * device) the agent is closed at once, no wait being in progress, and the thread ends after
     * the current round. Otherwise waits up to 5 s for the thread to end; an interrupt ends that
     * wait at once (the flag set again), and the thread still closes the agent when it ends.
     * Idempotent.
     *
     * @return true when the agent's close has returned (its channel is freed and the thread
     *         touches it no more); false when the wait was interrupted or timed out, also while
     *         the thread is inside the agent's close (see {@link #runAfterClose})
     */
    public boolean stop() {
        stopping = true;
        if (Thread.currentThread() == thread) {
            closeAgent();
            return true;
        }
        if (thread.getState() == Thread.State.NEW) {
            closeAgent();
            return true;
        }
        wake();
        try {
            thread.join(STOP_MILLIS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return isClosed();
        }
        if (thread.isAlive()) {
            LOG.warn("{} has not stopped within {} ms; it frees its channel when it does", thread.getName(), STOP_MILLIS);
        }
        return isClosed();
    }

    private synchronized boolean isClosed() {
        return closed;
    }

    /**
     * Runs {@code action} once the agent's close has returned: now if it has, else on the reader's
     * thread right after {@link Agent#onClose} returns (what must follow the channel, such as
     * closing the device context). An action given while the close is in progress waits for it.
     *
     * @param action what to run
     */
    public void runAfterClose(Runnable action) {
        synchronized (this) {
            if (!closed) {
                afterClose.add(action);
                return;
            }
        }
        action.run();
    }
}
