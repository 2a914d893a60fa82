package org.efaah.ud;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import org.efaah.internal.BackgroundReader;
import org.efaah.verbs.Errno;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.spi.CompletionChannelVerbs;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where a virtual thread waits for a completion channel without holding its carrier: it parks, and
 * one platform thread of the library (one per provider), waiting in {@code epoll_wait} for every
 * channel fd a parked waiter armed, unparks it when that fd is readable. The JDK's own sockets wait
 * so on virtual threads ({@code sun.nio.ch.Poller}): a wait in {@code poll(2)} would keep the
 * carrier, and a scheduler of two carriers would run nothing else while two receivers wait.
 */
final class ChannelPoller implements BackgroundReader.Agent {
    /*
     * Life cycle. The poller thread starts with the first park on its provider and ends once no
     * waiter has been parked for IDLE_NANOS: each round of its wait is bounded by that time, and at
     * the end of a round it asks, under LOCK, whether any waiter is in park() (users) and how long
     * since the last left; if it may end, it leaves RUNNING under the same lock, so a later park
     * makes a new poller rather than arming a set about to be freed. LOCK guards only RUNNING,
     * users and idleSince: it is held for map and counter updates (and a poller's creation), never
     * while anyone waits. The thread is a BackgroundReader's (no caller's class loader, no inherited
     * thread locals), whose backoff and one WARN cover a failed epoll_wait; every restart after a
     * failure unparks every parked waiter (onStart), so none waits on an arm the failed set lost,
     * and a waiter that parks while the poller is degraded parks for short steps only.
     *
     * A poller is in RUNNING only while its thread runs: one whose thread did not start (the
     * process's thread limit, a refusal) is freed at once and never registered, its waiter parks
     * short and a later wait tries again after a backoff; one whose thread ends otherwise than by
     * retiring (a failure escaping the reader's loop) leaves RUNNING in onClose. Either way no
     * waiter arms a set that no thread waits on, where it would sleep its whole slice.
     *
     * A failed arm (epoll_ctl) leaves that waiter's readiness unwatched: it parks for short steps
     * instead, as in a degraded round, and the failure is logged, once a run of failures (WARN,
     * then INFO when an arm works again); EBADF is no failure of the poller but an fd closed under
     * the wait (the endpoint's close, a recovery's new CQ), which the waiter's next look sees.
     *
     * A waiter is found by its fd: one waiter sleeps on a channel at a time (CompletionWaiter's
     * turn). A readiness whose waiter already left (its deadline, an interrupt) unparks nobody, or
     * the next waiter on that fd early; both are harmless, as a waiter steps again after any return.
     */
    static final long IDLE_NANOS = TimeUnit.SECONDS.toNanos(1);
    private static final int ROUND_MILLIS = (int) TimeUnit.NANOSECONDS.toMillis(IDLE_NANOS);
    private static final long DEGRADED_PARK_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    private static final Logger LOG = LoggerFactory.getLogger(ChannelPoller.class);
    private static final MethodHandle IS_VIRTUAL = isVirtualHandle();
    private static final ReentrantLock LOCK = new ReentrantLock();
    private static final long FIRST_START_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    private static final long MAX_START_BACKOFF_NANOS = TimeUnit.SECONDS.toNanos(1);
    /** What {@link #enter} returns while no poller thread can be started: its waiters park in short steps. */
    private static final ChannelPoller NOT_STARTED = new ChannelPoller();
    /**
     * Failed starts of a poller thread in a row, and when a wait may try again; guarded by LOCK. For
     * every provider at once: what fails a thread's start (the process's thread limit, memory, a
     * refusal) is the JVM's, and a map by provider would keep a provider nobody uses any more.
     */
    private static int startFailures;
    private static long startRetryAt;
    /** The poller of each provider whose waiters park now; guarded by LOCK. */
    private static final Map<CompletionChannelVerbs, ChannelPoller> RUNNING = new IdentityHashMap<>();

    /** Starts a poller's thread: {@link Thread#start}; a test's seam to fail the start. */
    static volatile Consumer<Thread> threadStarter = Thread::start;

    private final CompletionChannelVerbs verbs;
    private final long handle;
    private final BackgroundReader reader;
    private final Map<Integer, Thread> parked = new ConcurrentHashMap<>();
    /** The poller thread's: fds found readable in a round. */
    private final int[] ready = new int[64];
    /** Whether the last arm failed (other than EBADF): its WARN is out, an INFO follows the next arm that works. */
    private final AtomicBoolean armFailing = new AtomicBoolean();
    /** Whether the thread has ended (onClose): no waiter arms the set, the last to leave frees it; written under LOCK. */
    private volatile boolean ended;
    /** Waiters inside {@link #park}; guarded by LOCK. */
    private int users;
    /** When the last waiter left {@link #park}, {@link System#nanoTime}; guarded by LOCK. */
    private long idleSince;

    private ChannelPoller(CompletionChannelVerbs verbs, long handle) {
        this.verbs = verbs;
        this.handle = handle;
        this.reader = BackgroundReader.of(this, "efa-ah-poller", "the poller of parked completion waits");
        this.idleSince = System.nanoTime();
    }

    /** {@link #NOT_STARTED}'s: no provider, no set, no thread. */
    private ChannelPoller() {
        this.verbs = null;
        this.handle = 0;
        this.reader = null;
    }

    /** {@code Thread::isVirtual} on Java 21 and later; null before (no thread is virtual there). */
    private static MethodHandle isVirtualHandle() {
        try {
            return MethodHandles.publicLookup().findVirtual(Thread.class, "isVirtual", MethodType.methodType(boolean.class));
        } catch (NoSuchMethodException | IllegalAccessException e) {
            return null;
        }
    }

    /** Whether the calling thread is a virtual thread (always false before Java 21). */
    static boolean currentIsVirtual() {
        if (IS_VIRTUAL == null) {
            return false;
        }
        try {
            return (boolean) IS_VIRTUAL.invokeExact(Thread.currentThread());
        } catch (Throwable e) {
            throw new AssertionError("Thread.isVirtual failed", e);
        }
    }

    /**
     * Parks the calling thread until {@code fd} is readable, an unpark (an interrupt, the endpoint's
     * close or a wake: {@link LockSupport#unpark}), or {@code nanos} pass; the caller then takes the
     * channel's events without waiting and looks again. Holds no lock while parked.
     *
     * @return false when the provider has no poller (EOPNOTSUPP): the caller waits on the channel itself
     * @throws VerbsException when the provider's poller cannot be made (the errno of epoll_create1)
     */
    static boolean park(CompletionChannelVerbs verbs, int fd, long nanos) {
        ChannelPoller p = enter(verbs);
        if (p == null) {
            return false;
        }
        if (p == NOT_STARTED) {
            LockSupport.parkNanos(Math.min(nanos, DEGRADED_PARK_NANOS));
            return true;
        }
        Thread self = Thread.currentThread();
        try {
            p.parked.put(fd, self);
            if (p.ended) { // its thread ended under this wait (onClose): nobody would unpark it
                LockSupport.parkNanos(p, Math.min(nanos, DEGRADED_PARK_NANOS));
                return true;
            }
            try {
                verbs.armChannelPoller(p.handle, fd);
            } catch (VerbsException e) {
                if (e.errno() != Errno.EBADF && p.armFailing.compareAndSet(false, true)) {
                    LOG.warn("efa-ah-poller: arming a completion channel's fd: {}; waits on virtual threads park for "
                            + "{} ms steps until an arm works", e.getMessage(),
                            TimeUnit.NANOSECONDS.toMillis(DEGRADED_PARK_NANOS), e);
                }
                LockSupport.parkNanos(p, Math.min(nanos, DEGRADED_PARK_NANOS));
                return true;
            }
            if (p.armFailing.get() && p.armFailing.compareAndSet(true, false)) {
                LOG.info("efa-ah-poller: the poller arms again");
            }
            LockSupport.parkNanos(p, p.reader.degraded() ? Math.min(nanos, DEGRADED_PARK_NANOS) : nanos);
            return true;
        } finally {
            p.parked.remove(fd, self);
            p.leave();
        }
    }

    /**
     * The provider's running poller, made and started if none runs, with this waiter counted; null
     * without one (EOPNOTSUPP); {@link #NOT_STARTED} when its thread could not be started.
     */
    private static ChannelPoller enter(CompletionChannelVerbs verbs) {
        LOCK.lock();
        try {
            ChannelPoller p = RUNNING.get(verbs);
            if (p == null) {
                if (startFailures > 0 && System.nanoTime() - startRetryAt < 0) {
                    return NOT_STARTED; // backing off after a failed start: no thread to ask for now
                }
                long handle;
                try {
                    handle = verbs.createChannelPoller();
                } catch (VerbsException e) {
                    if (e.errno() == Errno.EOPNOTSUPP) {
                        return null;
                    }
                    throw e;
                }
                try {
                    p = new ChannelPoller(verbs, handle);
                    threadStarter.accept(p.reader.thread());
                } catch (Throwable t) { // OutOfMemoryError "unable to create native thread", a refusal, no heap for the Thread
                    startFailed(verbs, handle, t);
                    return NOT_STARTED;
                }
                if (startFailures > 0) {
                    LOG.info("efa-ah-poller: started again after {} failed start(s)", startFailures);
                    startFailures = 0;
                }
                RUNNING.put(verbs, p);
            }
            p.users++;
            return p;
        } finally {
            LOCK.unlock();
        }
    }

    /** Frees the set of a poller whose thread did not start, logs the first of a run, backs off; under LOCK. */
    private static void startFailed(CompletionChannelVerbs verbs, long handle, Throwable failure) {
        try {
            verbs.destroyChannelPoller(handle);
        } catch (Throwable e) {
            failure.addSuppressed(e);
        }
        long backoff = Math.min(MAX_START_BACKOFF_NANOS, FIRST_START_BACKOFF_NANOS << Math.min(startFailures, 10));
        startRetryAt = System.nanoTime() + backoff;
        if (startFailures++ == 0) {
            LOG.warn("efa-ah-poller: could not start the poller thread; waits on virtual threads park for {} ms steps, "
                    + "and a later wait starts it again", TimeUnit.NANOSECONDS.toMillis(DEGRADED_PARK_NANOS), failure);
        }
    }

    private void leave() {
        boolean free;
        LOCK.lock();
        try {
            if (--users == 0) {
                idleSince = System.nanoTime();
            }
            free = ended && users == 0; // the last waiter on a poller whose thread ended frees its set
        } finally {
            LOCK.unlock();
        }
        if (free) {
            verbs.destroyChannelPoller(handle);
        }
    }

    /** A first start, or a restart after a failed round: every waiter parked now looks again and re-arms. */
    @Override
    public void onStart() {
        parked.values().forEach(LockSupport::unpark);
    }

    @Override
    public boolean doWork() {
        int n;
        try {
            n = verbs.awaitChannelPoller(handle, ROUND_MILLIS, ready);
        } catch (RuntimeException | Error e) { // a failed epoll_wait, or any other failure of the round
            if (retireIfIdle()) {
                return false; // failing with nobody to serve: end, rather than retry for ever
            }
            throw e; // the reader reports it, backs off and starts again (onStart)
        }
        for (int i = 0; i < n; i++) {
            Thread t = parked.get(ready[i]);
            if (t != null) {
                LockSupport.unpark(t);
            }
        }
        return !retireIfIdle();
    }

    /** True when no waiter has parked for IDLE_NANOS: then out of RUNNING, and the reader frees the set (onClose). */
    private boolean retireIfIdle() {
        LOCK.lock();
        try {
            if (users == 0 && System.nanoTime() - idleSince >= IDLE_NANOS) {
                RUNNING.remove(verbs, this);
                return true;
            }
            return false;
        } finally {
            LOCK.unlock();
        }
    }

    @Override
    public void wake() {
        verbs.wakeChannelPoller(handle);
    }

    /**
     * The thread's end, whatever ended it: retired when idle, or an unexpected failure that escaped
     * the reader's loop. In the second case this poller is still registered, maybe with waiters
     * inside park(): it leaves RUNNING, so that the next park makes a new one rather than arming a
     * set nobody waits on; every waiter parked now looks again (one that comes later sees ended and
     * parks short); and the set is freed by the last waiter's leave(), none arming it after.
     */
    @Override
    public void onClose() {
        boolean unexpected;
        boolean free;
        LOCK.lock();
        try {
            unexpected = RUNNING.remove(verbs, this);
            ended = true;
            free = users == 0;
        } finally {
            LOCK.unlock();
        }
        if (unexpected) {
            LOG.warn("efa-ah-poller: the poller thread ended unexpectedly; the next wait on a virtual thread starts another");
            parked.values().forEach(LockSupport::unpark);
        }
        if (free) {
            verbs.destroyChannelPoller(handle);
        }
    }

    /** The poller thread of {@code verbs}, or null when none runs; for tests. */
    static Thread thread(CompletionChannelVerbs verbs) {
        LOCK.lock();
        try {
            ChannelPoller p = RUNNING.get(verbs);
            return p == null ? null : p.reader.thread();
        } finally {
            LOCK.unlock();
        }
    }
}
