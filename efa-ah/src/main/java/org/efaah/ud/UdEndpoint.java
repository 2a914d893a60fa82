package org.efaah.ud;

import java.nio.ByteBuffer;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.Errno;
import org.efaah.verbs.Gid;
import org.efaah.verbs.Grh;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.QueuePairType;
import org.efaah.verbs.Ranges;
import org.efaah.verbs.UdQueuePair;
import org.efaah.verbs.VerbsException;

/**
 * A datagram endpoint: a UD or SRD QP ({@link Options#transport()}) with its completion queues and
 * registered send and receive buffers, that sends through AHs from an {@link AddressHandleCache}
 * and answers senders through return-path AHs from the same cache.
 *
 * <p>A send copies the payload into a registered slot and posts it. The AH stays alive until the
 * send completes, even if the caller closes its handle at once: the endpoint holds a reference of
 * its own ({@link AddressHandle#duplicate()}) until the completion. A send that completes with an
 * error is reported by the next {@link #send} or {@link #flush} as a {@link WorkCompletionException}.
 *
 * <p>Receives are posted at open, one slot each of 40 bytes (the GRH area every UD receive
 * carries) plus the largest message, and reposted as soon as a datagram has been copied out.
 * How a sender is named depends on the device and is chosen once, at open: from the GRH on
 * InfiniBand and RoCE, from the AHN in the completion (or the GID the completion carries, for a
 * sender without an AH here) on EFA; see {@link Datagram#origin()}.
 *
 * <p><b>Waiting.</b> No lock is held while waiting: {@link #receive}, a {@link #send} waiting for
 * a free slot, {@link #flush} and {@link #close} poll under a lock held only for the poll, and
 * wait outside it. Each returns promptly when its thread is interrupted (throwing
 * {@link EndpointInterruptedException} with the interrupt flag set again; {@code close} just
 * stops waiting for sends and keeps the flag) and when another thread closes the endpoint
 * ({@link IllegalStateException}).
 *
 * <p><b>Error state.</b> A work request that fails can put the QP into the error state (on rxe a
 * receive too small for its datagram does: {@code IBV_WC_LOC_QP_OP_ERR}, then every posted
 * receive flushed). The endpoint then asks the QP its state ({@code ibv_query_qp}), and when it
 * is in error takes it through RESET, INIT, RTR and RTS again, reposts every receive, drops the
 * sends that were in flight (their AH references too), and counts the recovery
 * ({@link #counters()}). Completions of the QP's earlier life are recognised by a generation in
 * their {@code wr_id} and ignored.
 *
 * <p>Thread-safe: sends are serialised with each other, receives with each other; a send and a
 * receive may run at once. {@link #close()} is idempotent.
 */
public final class UdEndpoint implements AutoCloseable {
    /** Bytes in front of every UD receive: a GRH, or on EFA 40 bytes of undefined content. */
    public static final int GRH_BYTES = Grh.LENGTH;
    /** The Q_Key used when none is given (the one {@code ibv_ud_pingpong} uses). */
    public static final long DEFAULT_QKEY = 0x11111111L;
    private static final long SEND_SLOT_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(10);
    private static final long CLOSE_DRAIN_NANOS = TimeUnit.SECONDS.toNanos(1);
    private static final long PARK_NANOS = 20_000;
    private static final int SPINS = 10_000;

    private final ProtectionDomain pd;
    private final AddressHandleCache cache;
    private final Device device;
    private final Options options;
    private final int maxMessageSize;
    private final int receiveSlotSize;
    private final EndpointResources resources;
    private final EndpointAddress address;
    private final SourceResolver resolver;

    // The send side, the receive side and the error-state recovery: their methods do one step
    // under a lock and never wait; the loops here wait between steps holding no lock.
    // Lock order: sends.lock, then receives.lock.
    final SendSlots sends;
    final ReceiveSlots receives;
    private final QpRecovery recovery;
    private final AtomicBoolean closing = new AtomicBoolean();
    private volatile boolean closed;

    /**
     * Settings of an endpoint.
     *
     * @param portNum        1-based port
     * @param sgidIndex      index of this endpoint's own GID in the port's table (its address)
     * @param qkey           Q_Key, 0..0x7FFFFFFF
     * @param sendDepth      sends in flight at most, 1..8192
     * @param receiveDepth   receives posted, 1..8192
     * @param maxMessageSize largest payload in bytes, 1..path MTU; 0 means the port's active MTU
     * @param transport      UD (every device) or SRD (EFA only)
     * @param rnrRetry       SRD only: the QP's {@code rnr_retry}, 0..7 (7 retries without end), or
     *                       {@link #RNR_RETRY_AUTO}
     */
    public record Options(int portNum, int sgidIndex, long qkey, int sendDepth, int receiveDepth, int maxMessageSize,
                          QueuePairType transport, int rnrRetry) {
        /** {@link #rnrRetry()}: a finite retry count where the device lets it be set, else the device's default. */
        public static final int RNR_RETRY_AUTO = -1;

        /**
         * Checks that the transport is given; the numbers are checked against the device by
         * {@link UdEndpoint#open}.
         *
         * @param portNum        1..the device's port count
         * @param sgidIndex      0..the port's GID table length - 1
         * @param qkey           0..0x7FFFFFFF
         * @param sendDepth      1..8192
         * @param receiveDepth   1..8192
         * @param maxMessageSize 0..the port's active MTU, bytes; 0 for the MTU
         * @param transport      not null
         * @param rnrRetry       0..7 or {@link #RNR_RETRY_AUTO}
         * @throws NullPointerException if {@code transport} is null
         */
        public Options {
            Objects.requireNonNull(transport, "transport");
        }

        /**
         * The default settings: port 1, sgid_index 0, Q_Key {@link UdEndpoint#DEFAULT_QKEY}, 64 sends and 256
         * receives, the port's active MTU, UD.
         *
         * @return the defaults
         */
        public static Options defaults() {
            return new Options(1, 0, DEFAULT_QKEY, 64, 256, 0, QueuePairType.UD, RNR_RETRY_AUTO);
        }

        /**
         * Another own GID.
         *
         * @param index the sgid_index of the endpoint's GID in the port's table
         *
         * @return a copy with that setting; checked only by {@link UdEndpoint#open}
         */
        public Options withSgidIndex(int index) {
            return new Options(portNum, index, qkey, sendDepth, receiveDepth, maxMessageSize, transport, rnrRetry);
        }

        /**
         * Another Q_Key.
         *
         * @param key the Q_Key, 0..0x7FFFFFFF
         *
         * @return a copy with that setting; checked only by {@link UdEndpoint#open}
         */
        public Options withQkey(long key) {
            return new Options(portNum, sgidIndex, key, sendDepth, receiveDepth, maxMessageSize, transport, rnrRetry);
        }

        /**
         * Other queue depths.
         *
         * @param send    sends in flight at most, 1..8192
         * @param receive receives posted, 1..8192
         *
         * @return a copy with that setting; checked only by {@link UdEndpoint#open}
         */
        public Options withDepths(int send, int receive) {
            return new Options(portNum, sgidIndex, qkey, send, receive, maxMessageSize, transport, rnrRetry);
        }

        /**
         * Another largest payload.
         *
         * @param bytes largest payload in bytes, 1..path MTU; 0 means the port's active MTU
         *
         * @return a copy with that setting; checked only by {@link UdEndpoint#open}
         */
        public Options withMaxMessageSize(int bytes) {
            return new Options(portNum, sgidIndex, qkey, sendDepth, receiveDepth, bytes, transport, rnrRetry);
        }

        /**
         * Another transport.
         *
         * @param type UD (every device) or SRD (EFA only)
         *
         * @return a copy with that setting; checked only by {@link UdEndpoint#open}
         */
        public Options withTransport(QueuePairType type) {
            return new Options(portNum, sgidIndex, qkey, sendDepth, receiveDepth, maxMessageSize, type, rnrRetry);
        }

        /**
         * Another SRD {@code rnr_retry}: how often the device retries a send whose receiver has no
         * receive posted before it fails the send with an RNR error completion.
         *
         * @param retries 0..7, where 7 means retry without end (the send never completes while the
         *                receiver posts nothing), or {@link #RNR_RETRY_AUTO}
         *
         * @return a copy with that setting; checked only by {@link UdEndpoint#open}
         */
        public Options withRnrRetry(int retries) {
            return new Options(portNum, sgidIndex, qkey, sendDepth, receiveDepth, maxMessageSize, transport, retries);
        }
    }

    /**
     * What an endpoint has done so far. Each counter has one writer, so a snapshot costs plain
     * reads; it is not atomic across counters.
     *
     * @param sent          sends posted
     * @param received      datagrams returned by {@link #receive}
     * @param receiveErrors receives that completed with an error (flushes of a recovered QP not counted)
     * @param recoveries    times the QP was taken out of the error state
     */
    public record Counters(long sent, long received, long receiveErrors, long recoveries) {
    }

    private UdEndpoint(ProtectionDomain pd, AddressHandleCache cache, Options options, int maxMessageSize) {
        this.pd = pd;
        this.cache = cache;
        this.device = pd.device();
        this.options = options;
        this.maxMessageSize = maxMessageSize;
        this.receiveSlotSize = GRH_BYTES + maxMessageSize;
        Gid gid = device.gid(options.portNum(), options.sgidIndex());
        EndpointResources r = EndpointResources.open(pd, options, maxMessageSize, receiveSlotSize);
        this.resources = r;
        UdQueuePair q = r.qp;
        this.address = new EndpointAddress(gid, q.qpn(), options.qkey());
        this.recovery = new QpRecovery(this, q, options.portNum(), options.qkey());
        this.sends = new SendSlots(this, recovery, q, r.sendCq, r.sendMemory, options.sendDepth(), maxMessageSize,
                device.isEfa());
        this.resolver = device.isEfa() ? new EfaSourceResolver(pd, cache, options.portNum())
                : new GrhSourceResolver(pd, cache, options.portNum(), r.receiveMemory,
                        options.receiveDepth() * receiveSlotSize);
        this.receives = new ReceiveSlots(this, recovery, q, r.receiveCq, r.receiveMemory, options.receiveDepth(),
                receiveSlotSize, resolver, device.isEfa());
    }

    /**
     * Opens an endpoint on {@code pd}'s device: a CQ pair, a QP of the chosen transport ready to
     * send, and registered send and receive memory, with every receive posted.
     *
     * @param pd      the PD; the endpoint's AHs and memory belong to it
     * @param cache   the cache the endpoint takes its return-path AHs from
     * @param options the settings, checked against the device here
     * @return the open endpoint; close it when done
     *
     * @throws NullPointerException     if an argument is null
     * @throws IllegalArgumentException if an option is out of range (named, with the range)
     * @throws VerbsException           if the device refuses a resource; EOPNOTSUPP, naming the
     *                                  device, for SRD on a device that is not EFA or a provider
     *                                  without a datagram path
     */
    public static UdEndpoint open(ProtectionDomain pd, AddressHandleCache cache, Options options) {
        Objects.requireNonNull(pd, "pd");
        Objects.requireNonNull(cache, "cache");
        Objects.requireNonNull(options, "options");
        Device device = pd.device();
        int ports = device.attributes().portCount();
        Ranges.check("portNum", options.portNum(), 1, ports);
        Ranges.check("sendDepth", options.sendDepth(), 1, 8192);
        Ranges.check("receiveDepth", options.receiveDepth(), 1, 8192);
        Ranges.check("qkey", options.qkey(), 0, UdQueuePair.MAX_QKEY);
        int mtu = device.port(options.portNum()).activeMtu();
        Ranges.check("maxMessageSize", options.maxMessageSize(), 0, mtu);
        return new UdEndpoint(pd, cache, options, options.maxMessageSize() == 0 ? mtu : options.maxMessageSize());
    }

    /**
     * Where peers send to reach this endpoint.
     *
     * @return the endpoint's GID, QPN and Q_Key
     */
    public EndpointAddress address() {
        return address;
    }

    /**
     * Largest payload {@link #send} accepts.
     *
     * @return the size in bytes, the port's active MTU unless the options asked for less
     */
    public int maxMessageSize() {
        return maxMessageSize;
    }

    /**
     * The QP type the endpoint was opened with.
     *
     * @return UD or SRD
     */
    public QueuePairType transport() {
        return options.transport();
    }

    /**
     * The PD the endpoint was opened on: the one to acquire its send AHs in.
     *
     * @return the PD
     */
    public ProtectionDomain pd() {
        return pd;
    }

    /**
     * A snapshot of the counters; cheap, from any thread.
     *
     * @return the counters now, not atomic across counters
     */
    public Counters counters() {
        return new Counters(sends.sent(), receives.received(), receives.receiveErrors(), recovery.recoveries());
    }

    /** A work request's id: the QP's generation in the high half, the slot in the low half. */
    static long wrId(int generation, int slot) {
        return ((long) generation << 32) | slot;
    }

    /**
     * Sends {@code payload}'s remaining bytes to {@code to} through {@code ah}; see
     * {@link #send(AddressHandle, int, long, ByteBuffer)}, whose exceptions apply.
     *
     * @param ah      an AH to {@code to}'s GID, in this endpoint's PD
     * @param to      the receiver's QPN and Q_Key (its GID is the AH's)
     * @param payload the bytes from position to limit; consumed
     */
    public void send(AddressHandle ah, EndpointAddress to, ByteBuffer payload) {
        Objects.requireNonNull(to, "to");
        send(ah, to.qpn(), to.qkey(), payload);
    }

    /**
     * Posts one {@code IBV_WR_SEND} of {@code payload}'s remaining bytes (consumed) to
     * ({@code ah}, {@code remoteQpn}, {@code remoteQkey}). Returns once posted; the AH is kept
     * alive until the send completes, whatever the caller does with {@code ah}. Waits, holding no
     * lock, for a free send slot when {@code sendDepth} sends are in flight. Thread-safe.
     *
     * @param ah         an AH to the receiver's GID, in this endpoint's PD
     * @param remoteQpn  the receiver's QPN, 0..0xFFFFFF
     * @param remoteQkey the receiver's Q_Key, 0..0x7FFFFFFF
     * @param payload    the bytes from position to limit, at most {@link #maxMessageSize()}; consumed
     *
     * @throws IllegalArgumentException      if {@code ah} belongs to another PD, the payload is larger
     *                                       than {@link #maxMessageSize()}, or a number is out of range
     * @throws IllegalStateException         if the endpoint or {@code ah} is closed, also while waiting
     * @throws EndpointInterruptedException  if interrupted while waiting for a slot (flag set again)
     * @throws WorkCompletionException       if an earlier send completed with an error
     * @throws VerbsException                if the post fails, or ETIMEDOUT when no slot frees in 10 s
     */
    public void send(AddressHandle ah, int remoteQpn, long remoteQkey, ByteBuffer payload) {
        Objects.requireNonNull(ah, "ah");
        Objects.requireNonNull(payload, "payload");
        if (ah.pd() != pd) {
            throw new IllegalArgumentException("ah: belongs to another PD than this endpoint's");
        }
        int length = payload.remaining();
        if (length > maxMessageSize) {
            throw new IllegalArgumentException("payload: " + length + " bytes; valid 0.." + maxMessageSize
                    + " (the endpoint's largest message)");
        }
        Ranges.check("remoteQpn", remoteQpn, 0, 0xFFFFFF);
        Ranges.check("remoteQkey", remoteQkey, 0, UdQueuePair.MAX_QKEY);
        long deadline = 0;
        for (int idle = 0; ; idle++) {
            recovery.recoverIfNeeded();
            if (sends.tryPost(ah, remoteQpn, remoteQkey, payload, length)) {
                return;
            }
            if (deadline == 0) {
                deadline = System.nanoTime() + SEND_SLOT_TIMEOUT_NANOS;
            } else if (System.nanoTime() - deadline > 0) {
                throw new VerbsException("ibv_poll_cq", Errno.ETIMEDOUT, "no send completed in 10 s");
            }
            pause(idle, "send");
        }
    }

    /**
     * Waits, holding no lock, until every send posted so far has completed.
     *
     * @param timeout how long to wait at most
     * @param unit    the unit of {@code timeout}
     *
     * @return true when all completed, false on timeout
     * @throws WorkCompletionException      if one completed with an error
     * @throws EndpointInterruptedException if interrupted while waiting (flag set again)
     * @throws IllegalStateException        if the endpoint is or gets closed
     */
    public boolean flush(long timeout, TimeUnit unit) {
        long deadline = System.nanoTime() + unit.toNanos(timeout);
        for (int idle = 0; ; idle++) {
            recovery.recoverIfNeeded();
            if (sends.flushStep()) {
                return true;
            }
            if (System.nanoTime() - deadline > 0) {
                return false;
            }
            pause(idle, "flush");
        }
    }

    /**
     * Sends in flight now (posted, not yet completed as far as this endpoint has polled).
     *
     * @return 0..{@code sendDepth}
     */
    public int sendsInFlight() {
        return sends.inFlightCount();
    }

    /**
     * Waits up to {@code timeout}, holding no lock, for one datagram.
     *
     * @param timeout how long to wait at most
     * @param unit    the unit of {@code timeout}
     *
     * @return the datagram, or null on timeout
     * @throws WorkCompletionException      if the receive completed with an error (the slot is
     *                                      reposted; if the QP went into the error state it has
     *                                      been recovered by the time this is thrown)
     * @throws EndpointInterruptedException if interrupted while waiting (flag set again)
     * @throws IllegalStateException        if the endpoint is closed, also by another thread while waiting
     */
    public Datagram receive(long timeout, TimeUnit unit) {
        long deadline = System.nanoTime() + unit.toNanos(timeout);
        for (int idle = 0; ; idle++) {
            Datagram d;
            try {
                d = receives.poll();
            } catch (WorkCompletionException e) {
                recovery.recoverIfNeeded();
                throw e;
            }
            if (d != null) {
                return d;
            }
            recovery.recoverIfNeeded();
            if (System.nanoTime() - deadline > 0) {
                return null;
            }
            pause(idle, "receive");
        }
    }

    /** Spins first for latency, then parks; stops for an interrupt or a close. */
    private void pause(int idle, String operation) {
        if (idle < SPINS) {
            Thread.onSpinWait();
        } else {
            LockSupport.parkNanos(PARK_NANOS);
        }
        if (Thread.interrupted()) {
            Thread.currentThread().interrupt();
            throw new EndpointInterruptedException(operation);
        }
        checkOpen();
    }

    /**
     * The attributes of an AH back to the sender of {@code datagram}: on EFA the sender's GID
     * alone (global, as EFA requires); elsewhere {@code ibv_init_ah_from_wc(3)}.
     *
     * @param datagram a datagram this endpoint received
     * @return the attributes, to acquire an AH with
     * @throws IllegalStateException    if the endpoint is closed
     *
     * @throws IllegalArgumentException if the datagram's sender is unknown ({@link SourceOrigin#UNKNOWN} on EFA)
     */
    public AddressHandleAttributes replyAttributes(Datagram datagram) {
        Objects.requireNonNull(datagram, "datagram");
        checkOpen();
        return resolver.replyAttributes(datagram);
    }

    /**
     * Acquires, through the cache, the AH back to the sender of {@code datagram}: a server
     * answering many clients holds one hardware AH per client, not one per message. On EFA a
     * datagram named by AHN gets that same AH, as a hit.
     *
     * @param datagram a datagram this endpoint received
     * @return a new open handle to the AH; close it when done
     * @throws IllegalArgumentException if the datagram's sender is unknown
     *                                  ({@link SourceOrigin#UNKNOWN} on EFA)
     * @throws IllegalStateException    if the endpoint is closed
     * @throws VerbsException           if the AH cannot be created
     */
    public AddressHandle acquireReplyAh(Datagram datagram) {
        Objects.requireNonNull(datagram, "datagram");
        checkOpen();
        return resolver.acquireReplyAh(datagram);
    }

    /**
     * Replies to the sender of {@code datagram} with {@code payload}, through a return-path AH
     * ({@link #acquireReplyAh}) and the endpoint's own Q_Key; the exceptions of both apply.
     *
     * @param datagram a datagram this endpoint received
     * @param payload  the bytes from position to limit; consumed
     */
    public void reply(Datagram datagram, ByteBuffer payload) {
        try (AddressHandle ah = acquireReplyAh(datagram)) {
            send(ah, datagram.sourceQpn(), options.qkey(), payload);
        }
    }

    /** Whether {@link #close()} has gone past its drain: no call may use the QP or the slots any more. */
    boolean closed() {
        return closed;
    }

    void checkOpen() {
        if (closed) {
            throw new IllegalStateException("UD endpoint is closed");
        }
    }

    /**
     * Waits briefly (up to 1 s, holding no lock; less if interrupted, the flag kept) for sends in
     * flight, then destroys the QP, the registered memory and the CQs, children first, and drops
     * the AH references it held. Calls waiting in other threads throw {@link IllegalStateException}
     * promptly. Idempotent.
     */
    @Override
    public void close() {
        if (!closing.compareAndSet(false, true)) {
            return;
        }
        long deadline = System.nanoTime() + CLOSE_DRAIN_NANOS;
        for (int idle = 0; System.nanoTime() - deadline < 0 && !Thread.currentThread().isInterrupted(); idle++) {
            if (sends.drainStep(recovery.needsRecovery())) {
                break;
            }
            if (idle < SPINS) {
                Thread.onSpinWait();
            } else {
                LockSupport.parkNanos(PARK_NANOS);
            }
        }
        closed = true;
        sends.lock.lock();
        try {
            receives.lock.lock();
            try {
                RuntimeException failure = resources.closeQp();
                // With the QP gone no send can still use an AH: now the references may go. If the
                // QP could not be destroyed they stay held (and show as leaks at cache close)
                // rather than let an AH be destroyed under a send the device may still process.
                if (failure == null) {
                    sends.releaseAllLocked();
                }
                failure = resources.closeRest(failure);
                if (failure != null) {
                    throw failure;
                }
            } finally {
                receives.lock.unlock();
            }
        } finally {
            sends.lock.unlock();
        }
    }

    @Override
    public String toString() {
        return "UdEndpoint[" + address + " on " + device.name() + "]";
    }
}
