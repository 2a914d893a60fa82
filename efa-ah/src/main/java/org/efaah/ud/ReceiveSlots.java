package org.efaah.ud;

import java.util.ArrayDeque;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.efaah.verbs.CompletionQueue;
import org.efaah.verbs.MemoryRegion;
import org.efaah.verbs.UdQueuePair;
import org.efaah.verbs.WorkCompletion;

/**
 * An endpoint's receive side: the registered receive slots, the receive CQ's completions, lending
 * a slot out (its {@link DatagramView}) until the caller has read it, reposting it, and the receive
 * counters.
 *
 * <p>A slot is {@code prefix} bytes plus the largest message: on UD {@code prefix} is the 40-byte
 * area in front of every payload (a GRH, or on EFA undefined bytes); on SRD it is 0, as an SRD
 * payload starts at offset 0 and {@code byte_len} counts the payload alone (rdma-core's EFA tests
 * read UD at the GRH size and SRD at 0). A slot is reposted only once its completion has been polled,
 * so a receive CQ of {@code depth} entries cannot overrun.
 *
 * <p>Locks: {@link #lock} (the endpoint's receive lock; taken after the send lock when both are
 * needed) guards the CQ poll, the reposts, which slots are lent, and the datagrams a recovery polled
 * before the caller did. Every method does one step and returns; none waits. The endpoint's
 * {@code receive} waits between polls, and callers read lent slots, with no lock held; a lent slot
 * is not posted (not even by a recovery) until it is given back, so nothing writes it meanwhile.
 */
final class ReceiveSlots implements QpRecovery.Side {
    final SlotsLock lock = new SlotsLock();
    /** The endpoint's close: no step starts past it, no slot is reposted. */
    private final CloseFlag closeFlag;
    /** Told when datagrams are kept for the next caller, which no completion event announces. */
    private final Waker datagramsKept;
    private final QpRecovery recovery;
    /** The QP and its receive CQ; replaced, under the lock, by a recovery that makes them anew. */
    private UdQueuePair qp;
    private CompletionQueue receiveCq;
    /** Between a recovery's discard and its new QP: nothing to poll. */
    private boolean detached;
    private final MemoryRegion receiveMemory;
    private final int depth;
    private final int prefix;
    private final int slotSize;
    private final boolean efa;
    private final SourceResolver resolver;
    /** EFA: per completion taken, a mark of the cache's AHN reuses read before it arrived (EfaSourceResolver). */
    private final ArrivalMarks marks;
    /** Receive completions one poll takes at most: the native stub's 64 ({@code EFA_AH_MAX_BATCH}). */
    static final int POLL_BATCH = 64;
    /**
     * One poll's holders. A datagram's holder is handed to its slot's view, which gives back the one
     * it held (a swap, no copy): the view reads the fields the poll decoded, where they were decoded.
     */
    private final WorkCompletion[] batch;
    /*
     * Completions taken off the CQ and not yet handed out, in CQ order: count from head, in a ring
     * of depth (never full before the CQ is empty: each holds a receive, and the CQ holds at most
     * the receives still posted). The ring keeps what handing out needs: the slot (wr_id), the
     * status and vendor_err; a datagram's other fields are already in its slot's view.
     */
    private final int[] takenSlot;
    private final int[] takenStatus;
    private final int[] takenVendorError;
    private int head;
    private int count;
    /** Slots copied out and not yet reposted; reposted {@link #repostBatch} at a time, in one call. */
    private final int[] repostOffsets;
    private final long[] repostSlots;
    private final int repostBatch;
    private int reposts;
    /** Receives posted whose completion has not been polled yet. */
    private int posted;
    /** Per slot, the view a handler reads it through, and whether it is lent out now. */
    private final DatagramView[] views;
    private final boolean[] lent;
    /** Views lent and not read: their caller's handler threw before them. Handed out first. */
    private DatagramView pending;
    /** Datagrams a recovery's drain polled; handed out before the CQ is polled again. */
    private final ArrayDeque<Datagram> drained = new ArrayDeque<>();
    // Written under the lock, read without it.
    private final AtomicLong received = new AtomicLong();
    private final AtomicLong receiveErrors = new AtomicLong();

    ReceiveSlots(CloseFlag closeFlag, Waker datagramsKept, QpRecovery recovery, UdQueuePair qp,
                 CompletionQueue receiveCq, MemoryRegion receiveMemory, int depth, int prefix, int slotSize,
                 SourceResolver resolver, boolean efa, long markBeforeQp) {
        this.views = new DatagramView[depth];
        for (int i = 0; i < depth; i++) {
            views[i] = new DatagramView(receiveMemory.buffer(), i, i * slotSize, prefix, slotSize - prefix, resolver);
        }
        this.lent = new boolean[depth];
        this.closeFlag = closeFlag;
        this.datagramsKept = datagramsKept;
        this.recovery = recovery;
        this.qp = qp;
        this.receiveCq = receiveCq;
        this.receiveMemory = receiveMemory;
        this.depth = depth;
        this.prefix = prefix;
        this.slotSize = slotSize;
        this.efa = efa;
        this.resolver = resolver;
        this.marks = new ArrivalMarks(markBeforeQp);
        this.posted = depth; // EndpointResources posted every slot
        this.batch = new WorkCompletion[Math.min(POLL_BATCH, depth)];
        for (int i = 0; i < batch.length; i++) {
            batch[i] = new WorkCompletion();
        }
        this.takenSlot = new int[depth];
        this.takenStatus = new int[depth];
        this.takenVendorError = new int[depth];
        // At most a quarter of the ring waits for its repost, so three quarters stay posted.
        this.repostBatch = Math.max(1, Math.min(POLL_BATCH, depth / 4));
        this.repostOffsets = new int[repostBatch];
        this.repostSlots = new long[repostBatch];
    }

    @Override
    public SlotsLock lock() {
        return lock;
    }

    long received() {
        return received.getOpaque();
    }

    long receiveErrors() {
        return receiveErrors.getOpaque();
    }

    /**
     * The receive side's part of whether a wait may sleep on the receive CQ's channel: nothing taken
     * off the CQ and not handed out yet (completions of the last poll, views a handler did not get
     * to, datagrams a recovery's drain copied out), as none of it raises an event. Asked after the arm.
     */
    boolean mayIdle() {
        lock.lock();
        try {
            return count == 0 && pending == null && drained.isEmpty();
        } finally {
            lock.unlock();
        }
    }

    /**
     * One poll under the lock: lends out up to {@code limit} datagrams, chained by
     * {@link DatagramView#next} (each slot stays out of the ring until {@link #giveBack}); null when
     * none was there. A datagram a recovery copied out comes first, alone.
     *
     * @throws WorkCompletionException for a receive that completed with an error, when it is the
     *                                 first in line (one behind a datagram waits for the next call)
     */
    DatagramView lend(int limit) {
        lock.lock();
        try {
            closeFlag.checkOpen();
            if (pending != null) {
                return takePending(limit);
            }
            Datagram d = drained.poll();
            if (d != null) {
                DatagramView v = new DatagramView(d);
                v.lendFilled();
                return v;
            }
            if (efa && count > 0) {
                takeAllLocked(); // see takeAllLocked: names read now, not when the backlog reaches them
            }
            DatagramView first = null;
            DatagramView last = null;
            try {
                for (int n = 0; n < limit; n++) {
                    DatagramView v = pollLocked(first != null);
                    if (v == null) {
                        break;
                    }
                    if (first == null) {
                        first = v;
                    } else {
                        last.next = v;
                    }
                    last = v;
                }
            } catch (RuntimeException e) {
                if (first != null) {
                    // A later poll failed: the datagrams already lent are kept, handed out first
                    // by the next call, and this one says why the poll failed.
                    last.next = pending;
                    pending = first;
                    datagramsKept.wake();
                }
                throw e;
            }
            return first;
        } finally {
            lock.unlock();
        }
    }

    /** Up to {@code limit} views from the front of {@link #pending}, lock held. */
    private DatagramView takePending(int limit) {
        DatagramView first = pending;
        DatagramView last = first;
        for (int n = 1; n < limit && last.next != null; n++) {
            last = last.next;
        }
        pending = last.next;
        last.next = null;
        return first;
    }

    /**
     * Keeps the rest of a lent chain, from {@code first}, that its caller did not get to read (its
     * handler threw): the next {@link #lend} hands them out first, in order.
     */
    void putBack(DatagramView first) {
        lock.lock();
        try {
            DatagramView last = first;
            while (last.next != null) {
                last = last.next;
            }
            last.next = pending;
            pending = first;
        } finally {
            lock.unlock();
        }
        datagramsKept.wake(); // a receive asleep on the CQ would get no event for them
    }

    /**
     * Hands a lent chain to {@code handler}, holding no lock while it runs; gives the read ones back,
     * keeps the rest if it throws.
     */
    int deliver(DatagramView first, Consumer<? super DatagramView> handler) {
        int n = 0;
        DatagramView v = first;
        try {
            while (v != null) {
                handler.accept(v);
                n++;
                v = v.next;
            }
        } finally {
            if (v != null) {
                DatagramView rest = v.next;
                v.next = null; // the one it threw on was read: given back with those before it
                if (rest != null) {
                    putBack(rest);
                }
            }
            giveBack(first);
        }
        return n;
    }

    /**
     * Takes back the slots of a chain {@link #lend} returned, once its datagrams have been read:
     * queues them for a repost, unless the endpoint closed or a recovery will post every slot.
     */
    void giveBack(DatagramView first) {
        lock.lock();
        try {
            for (DatagramView v = first; v != null; ) {
                DatagramView following = v.next;
                v.next = null;
                v.invalidate();
                if (v.slot >= 0) {
                    lent[v.slot] = false;
                    // A QP in the error state would only flush the slot: recovery reposts every slot.
                    if (!closeFlag.isClosed() && !recovery.needsRecovery()) {
                        repost(v.slot);
                    }
                }
                v = following;
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Hands out the next completion taken off the CQ, polling when none is left, until a datagram
     * or an error turns up, or the CQ is empty; a datagram's slot is lent out. A flush of a QP in
     * the error state is consumed quietly: it only returns the slot, which recovery reposts. With
     * {@code errorWaits} an error completion stays queued and null is returned, so that the
     * datagrams lent before it reach the caller first.
     */
    private DatagramView pollLocked(boolean errorWaits) {
        for (;;) {
            if (count == 0) {
                takeAllLocked();
                if (count == 0) {
                    return null;
                }
            }
            int at = head;
            int status = takenStatus[at];
            if (status != WorkCompletion.SUCCESS && errorWaits) {
                return null;
            }
            head = at + 1 == takenSlot.length ? 0 : at + 1;
            count--;
            DatagramView v = take(takenSlot[at], status, takenVendorError[at]);
            if (v != null) {
                return v;
            }
        }
    }

    /*
     * On EFA takes every completion off the CQ, polling until it is empty, and gives each
     * datagram the mark its sender will be named by (when asked: DatagramView.resolve); elsewhere
     * polls once. Why all, on EFA: the mark is known to be older than the arrival (ArrivalMarks),
     * and a datagram is named only if its AHN was given to no new AH since that mark. A receiver
     * taking fewer datagrams per call than arrive (a small limit, a handler slower than its
     * senders) keeps a backlog of up to depth completions. Marked as each reached the front of
     * the backlog, every one had a mark as old as the backlog (the count rule), and once that age
     * passed the time an AH keeps its AHN, under churn no datagram was named by AHN at all
     * (EfaSenderAtArrivalTest, on a loaded machine). Taken at every call, a datagram gets a mark
     * read at the call before (the empty rule: this call's first poll follows that call's short
     * one), however long the backlog ahead of it; what remains is the time between its take and
     * the handler's question, which a reuse of its AHN within turns into UNKNOWN, never the
     * wrong peer.
     */
    private void takeAllLocked() {
        for (;;) {
            if (detached) {
                return;
            }
            if (efa) {
                marks.beforePoll(resolver.reuseMarkNow(), posted);
            }
            int n = receiveCq.poll(batch);
            for (int i = 0; i < n; i++) {
                WorkCompletion wc = batch[i];
                int at = at(count);
                int slot = (int) wc.wrId;
                takenSlot[at] = slot;
                takenStatus[at] = wc.status;
                takenVendorError[at] = wc.vendorError;
                count++;
                posted--;
                long mark = marks.take();
                if (wc.status == WorkCompletion.SUCCESS) {
                    // The slot is not posted again before its view is given back: no other completion
                    // names it meanwhile, so the holder stays the view's until its next fill.
                    batch[i] = views[slot].fill(wc, Math.max(0, wc.byteLength - prefix), mark);
                }
            }
            // With no receive left posted the CQ is as empty as after a short poll.
            boolean empty = n < batch.length || posted == 0;
            marks.afterPoll(empty);
            if (empty || !efa) {
                return; // elsewhere no mark: one poll, as many as were asked for
            }
        }
    }

    /** The ring index of the {@code i}th completion from the head. */
    private int at(int i) {
        return head + i < takenSlot.length ? head + i : head + i - takenSlot.length;
    }

    private DatagramView take(int slot, int status, int vendorError) {
        if (status != WorkCompletion.SUCCESS) {
            boolean inError;
            try {
                inError = recovery.inErrorAfterReceive(status, vendorError);
            } catch (RuntimeException queryFailed) {
                throw stateUnknown(status, vendorError, slot, queryFailed);
            }
            if (status == WorkCompletion.WR_FLUSH_ERR && inError) {
                return null;
            }
            receiveErrors.setOpaque(receiveErrors.getOpaque() + 1);
            if (!inError) {
                repost(slot);
            }
            throw new WorkCompletionException("receive", status, vendorError, efa);
        }
        DatagramView v = views[slot];
        v.lendFilled();
        lent[slot] = true;
        received.setOpaque(received.getOpaque() + 1);
        return v;
    }

    /**
     * A receive error whose {@code ibv_query_qp} failed, lock held: the QP's state is unknown. The
     * error is counted and thrown, the query's failure with it, and the slot is reposted, not lost
     * from the ring (were the QP in error, that repost's flush asks again).
     */
    private WorkCompletionException stateUnknown(int status, int vendorError, int slot, RuntimeException queryFailed) {
        receiveErrors.setOpaque(receiveErrors.getOpaque() + 1);
        WorkCompletionException e = new WorkCompletionException("receive", status, vendorError, efa);
        e.addSuppressed(queryFailed);
        try {
            repost(slot);
        } catch (RuntimeException repostFailed) {
            e.addSuppressed(repostFailed);
        }
        return e;
    }

    /** Queues the slot for a repost; posts the queue in one call once a batch is full. */
    private void repost(int slot) {
        repostOffsets[reposts] = slot * slotSize;
        repostSlots[reposts] = slot;
        if (++reposts == repostBatch) {
            postQueued();
        }
    }

    private void postQueued() {
        int n = reposts;
        reposts = 0;
        int done = qp.postReceives(receiveMemory, repostOffsets, slotSize, repostSlots, n);
        posted += done;
        // A refused one alone says why (it throws); those after it are dropped with it, as a failed
        // single repost dropped its slot.
        for (int i = done; i < n; i++) {
            qp.postReceive(receiveMemory, repostOffsets[i], slotSize, repostSlots[i]);
            posted++;
        }
    }

    /**
     * At recovery, lock held: polls what the QP in error flushed, keeping datagrams that completed
     * before the error for the caller; true once no receive is outstanding, so that none can
     * complete after the reset.
     */
    @Override
    public boolean drainedLocked() {
        for (;;) {
            DatagramView v;
            try {
                v = pollLocked(false);
            } catch (WorkCompletionException e) {
                continue; // counted; the caller of receive already heard of the error that stopped the QP
            }
            if (v == null) {
                return posted == 0;
            }
            // Copied out at once: the slot goes back to the ring with every other at the reset.
            drained.add(v.copy());
            v.invalidate();
            lent[v.slot] = false;
        }
    }

    /**
     * At a recovery past its flush bound, lock held, once the QP is destroyed: the receives it
     * held are gone with it (their slots are posted on the new QP), and the receive CQ is not
     * polled again until {@link #attachLocked}. Datagrams copied out by the drain are kept.
     */
    @Override
    public void discardLocked() {
        detached = true;
        marks.qpDiscarded();
        head = 0;
        count = 0;
        posted = 0;
        reposts = 0;
    }

    /** At a recovery, lock held: receives go to the new QP, completions come from its new CQ. */
    @Override
    public void attachLocked(UdQueuePair newQp, CompletionQueue newCq) {
        qp = newQp;
        receiveCq = newCq;
        detached = false;
    }

    /**
     * At recovery, lock held, the QP back in RTS: posts every receive slot again, except those lent
     * to a handler still reading them ({@link #giveBack} posts those).
     */
    @Override
    public void repostAllLocked() {
        reposts = 0; // every slot, the queued ones among them
        for (int i = 0; i < depth; i++) {
            if (!lent[i]) {
                repost(i);
            }
        }
        if (reposts > 0) {
            postQueued();
        }
    }
}
