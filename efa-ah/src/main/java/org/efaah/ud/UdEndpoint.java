package org.efaah.ud;

import java.nio.ByteBuffer;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.InterruptedOperationException;
import org.efaah.verbs.spi.EfaVerbs;
import org.efaah.verbs.Gid;
import org.efaah.verbs.Grh;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.QueuePairType;
import org.efaah.internal.Ranges;
import org.efaah.verbs.UdQueuePair;
import org.efaah.verbs.VerbsException;

/**
 * A datagram endpoint: a UD or SRD QP ({@link Options#transport()}) with its completion queues and
 * registered send and receive buffers, that sends through AHs from an {@link AddressHandleCache}
 * and answers senders through return-path AHs from the same cache.
 *
 * <p>A send copies the payload into a registered slot and posts it ({@link #sendBatch} posts several
 * in one call). The AH stays alive until the send completes, even if the caller closes its handle
 * at once: the endpoint holds a reference of its own ({@link AddressHandle#duplicate()}), one per
 * AH with sends in flight, until the last of them completes.
 *
 * <p><b>Receiving without a copy.</b> {@link #receive(long, TimeUnit)} copies each datagram out
 * into a {@link Datagram}. {@link #receive(Consumer, int, long, TimeUnit)} and
 * {@link #poll(Consumer, int)} hand datagrams to a handler in place, as {@link DatagramView}s
 * valid only during its {@code accept} call; with them and {@link #send} or
 * {@link #sendBatch}, the endpoint allocates nothing per datagram once running.
 *
 * <p><b>Failed sends.</b> Every send that completes with an error is reported, none is lost: the
 * next {@link #send} or {@link #flush} throws a {@link WorkCompletionException} whose
 * {@link WorkCompletionException#failures()} lists each failed send since the last report (its
 * destination QPN and GID, the status and, on EFA, the vendor error by name), and
 * {@link Counters#failedSends()} counts them. A send that throws it was not posted.
 *
 * <p><b>SRD receiver not ready.</b> An SRD send to a QP with no receive posted is retried by the
 * device {@code rnr_retry} times; with 7 (EFA's default) it retries without end, so the send never
 * completes while the receiver posts nothing, and the sender's slots fill. By default
 * ({@link Options#RNR_RETRY_AUTO}) the endpoint sets a finite {@value #DEFAULT_RNR_RETRY} where the
 * device lets it ({@code EFADV_DEVICE_ATTR_CAPS_RNR_RETRY}), as libfabric's EFA RDM endpoint does,
 * so that such a send ends in an RNR error completion ({@code IBV_WC_RNR_RETRY_EXC_ERR},
 * {@code REMOTE_ERROR_RNR}); elsewhere the device's default stays and a send that waits 10 s for a
 * slot fails naming the likely cause and the setting. A send that meets RNR is not reported at
 * once: it keeps its slot and is posted again after a backoff (at once the first time, then 64 µs
 * doubling to at most 100 ms), for {@link Options#rnrResendNanos()} (1 s by default) from its
 * first RNR; only then is it reported, as an RNR failure. So a receiver that falls behind for a
 * moment costs its senders nothing but resends ({@link Counters#rnrResends()}), and one gone for
 * good still ends in reported failures. The resends are posted by the endpoint's next
 * {@link #send}, {@link #sendBatch} or {@link #flush} (it has no thread of its own); a flush or a
 * send waiting for a slot polls while resends wait. Compared with libfabric: its RDM endpoint also
 * sets {@code rnr_retry} 3 and resends a packet that met RNR, at once the first time, then after
 * a backoff of the whole peer (40 to 120 µs at random, doubling up to 1 s); with its default
 * resource management ({@code FI_RM_ENABLED}) it resends without a bound, and with
 * {@code FI_RM_DISABLED} it reports the first RNR. Here the backoff is per send and the total
 * time is bounded; a budget of 0 reports the first RNR, as {@code FI_RM_DISABLED} does.
 *
 * <p>Receives are posted at open and reposted as soon as a datagram has been copied out. A UD slot
 * is 40 bytes (the GRH area every UD receive carries; on EFA undefined bytes) plus the largest
 * message; an SRD slot is the largest message alone, as an SRD payload starts at offset 0.
 * How a sender is named depends on the device and is chosen once, at open: from the GRH on
 * InfiniBand and RoCE, from the AHN in the completion (or the GID the completion carries, for a
 * sender without an AH here) on EFA; see {@link Datagram#origin()}.
 *
 * <p><b>On EFA, AHs made outside the endpoint's cache.</b> The device names a sender by the AHN
 * of the endpoint PD's AH for it, whoever made that AH, and the endpoint names by AHN only AHs its
 * cache holds. An AH made in the endpoint's PD outside that cache
 * ({@link org.efaah.verbs.ProtectionDomain#createAh}, or a second cache on that PD) costs: the
 * datagrams that arrive while it is the PD's AH for their sender are delivered with the sender
 * UNKNOWN (and no reply is possible from them); and each create in the PD that returns an AHN
 * already given in it makes datagrams under that AHN UNKNOWN until the receiver's next call (see
 * {@link org.efaah.verbs.ProtectionDomain#createAh}). None is credited to the wrong peer. Make
 * the PD's AHs through the endpoint's cache alone to have every sender named.
 *
 * <p><b>Waiting.</b> No lock is held while waiting: {@link #receive}, a {@link #send} waiting for
 * a free slot, {@link #flush} and {@link #close} poll under a lock held only for the poll, and
 * wait outside it. {@code receive}, {@code send} and {@code flush} spin for
 * {@link Options#spinNanos()}, then sleep on their CQ's completion channel: arm it
 * ({@code ibv_req_notify_cq}), poll once more (a completion queued before the arm gives no event),
 * and wait in {@code poll(2)} on the channel, a stop eventfd that {@link #close} writes and a wake
 * eventfd that an interrupt of the waiting thread writes. One caller at a time sleeps on a CQ; the
 * others wait their turn, and each takes a step at every wake-up of the one asleep. No wait sleeps
 * while what it waits for raises no completion event (a send waiting to be resent, a recovery in
 * progress, datagrams already taken off the CQ): it polls with short parks then. Without channels
 * ({@link #eventDriven()} false) they park 20 µs at a time. Each returns promptly when its thread
 * is interrupted (throwing {@link InterruptedOperationException} with the interrupt flag set
 * again; {@code close} just stops waiting for sends and keeps the flag) and when another thread
 * closes the endpoint ({@link IllegalStateException}).
 *
 * <p><b>Error state.</b> A work request that fails can put the QP into the error state (on rxe a
 * receive too small for its datagram does: {@code IBV_WC_LOC_QP_OP_ERR}, then every posted
 * receive flushed). The endpoint then asks the QP its state ({@code ibv_query_qp}; for a failed
 * send on EFA the completion's status tells, without that admin-queue command), and when it
 * is in error first lets every posted send and receive complete (flushed) and polls it, as libefa
 * needs (it names completions by slot at poll time, and RESET rewinds the slots); then, on a
 * device other than EFA, takes the QP through RESET, INIT, RTR and RTS again, reposts every
 * receive, and counts the recovery ({@link #counters()}). It waits for those flushes at most
 * {@link Options#recoveryFlushNanos()} (1 s by default): an EFA device may flush nothing until the
 * QP is destroyed. On EFA (which libfabric never resets either), past that bound, or when the
 * device refuses a move of the recovery ({@code ibv_modify_qp} to ERR, RESET, INIT, RTR or RTS),
 * the sends still in flight are reported as failed ({@code IBV_WC_WR_FLUSH_ERR}, their outcome
 * unknown: the device may have delivered them before the destroy, so a caller that resends one
 * may deliver it twice; {@link SendFailure#outcomeUnknown()}), the QP and its CQs are destroyed
 * and made anew, and every receive is posted on the new QP, which has a new QPN:
 * {@link #address()} changes (see there). Sends flushed by the error are reported as failed sends;
 * sends made meanwhile wait for the recovery, and {@link #flush} never waits for a send the
 * recovery gave up.
 *
 * <p>Thread-safe: sends are serialised with each other, receives with each other; a send and a
 * receive may run at once. {@link #close()} is idempotent.
 */
public final class UdEndpoint implements AutoCloseable {
    /** Bytes in front of every UD receive: a GRH, or on EFA 40 bytes of undefined content. None on SRD. */
    public static final int GRH_BYTES = Grh.LENGTH;
    /**
     * The SRD {@code rnr_retry} {@link Options#RNR_RETRY_AUTO} sets where the device lets it: finite,
     * so that a receiver that posts nothing fails the send instead of holding it forever (libfabric's
     * EFA RDM endpoint uses the same).
     */
    public static final int DEFAULT_RNR_RETRY = DeviceLimits.DEFAULT_RNR_RETRY;
    /** The Q_Key used when none is given (the one {@code ibv_ud_pingpong} uses). */
    public static final long DEFAULT_QKEY = 0x11111111L;
    private static final long CLOSE_WAIT_SECONDS = 30;
    /** The spin of {@link Options#defaults()}, ns: a wait for a completion then sleeps on the CQ's channel. */
    public static final long DEFAULT_SPIN_NANOS = 50_000;
    /**
     * The recovery flush bound of {@link Options#defaults()}, ns (1 s): how long a recovery waits for a
     * QP in the error state to flush before it makes a new QP.
     */
    public static final long DEFAULT_RECOVERY_FLUSH_NANOS = TimeUnit.SECONDS.toNanos(1);
    /**
     * The SRD RNR resend budget of {@link Options#defaults()}, ns (1 s): how long a send that met RNR
     * is resent for before it is reported.
     */
    public static final long DEFAULT_RNR_RESEND_NANOS = TimeUnit.SECONDS.toNanos(1);
    private static final long MAX_BOUND_NANOS = TimeUnit.SECONDS.toNanos(60);

    private final ProtectionDomain pd;
    private final AddressHandleCache cache;
    private final Device device;
    private final Options options;
    private final int maxMessageSize;
    private final int receiveSlotSize;
    private final int rnrRetry;
    private final EndpointResources resources;
    /** Where peers reach this endpoint; a new QPN after a recovery that made a new QP. */
    private volatile EndpointAddress address;
    private final SourceResolver resolver;

    /*
     * The parts, composed here and nowhere else; each knows only what lies beneath it:
     *
     *   UdEndpoint -+- sender (Sender) ----+- sends (SendSlots) ------+
     *               +- receiver (Receiver) -+- receives (ReceiveSlots) -+- recovery (QpRecovery) -- resources
     *               |                       +- sendWaiter, receiveWaiter       (EndpointResources: the QP,
     *               |                          (CompletionWaiter, a CQ each)     its CQs, the memory)
     *
     * The slots, the recovery and the waiters do one step under a lock and never wait; the sender's
     * and the receiver's loops wait between steps holding no lock. This class checks every argument,
     * then hands the call to them; it keeps the close and the answers about the endpoint. Lock
     * order: sends.lock, then receives.lock. Upward a part speaks only through what it was made
     * with, never by a call to this class: the close flag;
     * a Waker for state no completion event announces (a resend queued, datagrams kept, a recovery
     * begun), wired here to the waits it concerns; the recovery's Sides (the slots, handed to it
     * once) and its callback for a new QP. Whether a wait may sleep is answered in one place,
     * sendsMayIdle and receivesMayIdle, from the parts. UdPartsDirectionTest keeps it so.
     */
    private final SendSlots sends;
    private final ReceiveSlots receives;
    private final QpRecovery recovery;
    private final CompletionWaiter sendWaiter;
    private final CompletionWaiter receiveWaiter;
    private final Sender sender;
    private final Receiver receiver;
    /** The close running now, or null: a second close waits for it. */
    private final AtomicReference<CountDownLatch> closing = new AtomicReference<>();
    /** Past the drain: no call may use the QP or the slots any more. Shared with the parts. */
    private final CloseFlag closeFlag = new CloseFlag();
    /** Every resource freed: a close has succeeded. */
    private volatile boolean released;

    /**
     * Settings of an endpoint.
     *
     * @param portNum        1-based port
     * @param sgidIndex      index of this endpoint's own GID in the port's table (its address)
     * @param qkey           Q_Key, 0..0x7FFFFFFF
     * @param sendDepth      sends in flight at most, 1..the device's {@code max_qp_wr} (on EFA also
     *                       efadv's {@code max_sq_wr})
     * @param receiveDepth   receives posted, 1..the device's {@code max_qp_wr} (on EFA also
     *                       efadv's {@code max_rq_wr})
     * @param maxMessageSize largest payload in bytes; 0 means the port's limit: on EFA its
     *                       {@code max_msg_sz}, elsewhere its active MTU
     * @param transport      UD (every device) or SRD (EFA only)
     * @param rnrRetry       SRD only: the QP's {@code rnr_retry}, 0..7 (7 retries without end), or
     *                       {@link #RNR_RETRY_AUTO}
     * @param spinNanos      how long a wait for a completion spins before it sleeps on the CQ's
     *                       completion channel, ns, 0..1 s; 0 sleeps at once
     * @param recoveryFlushNanos how long a recovery from the QP error state waits for the QP's work
     *                       requests to be flushed before it destroys the QP and makes a new one
     *                       (a new QPN: see {@link UdEndpoint#address()}), ns, 0..60 s
     * @param rnrResendNanos SRD only: how long a send that meets RNR is resent for before it is
     *                       reported failed, ns, 0..60 s; 0 reports it at once (see the class's
     *                       "SRD receiver not ready")
     */
    public record Options(int portNum, int sgidIndex, long qkey, int sendDepth, int receiveDepth, int maxMessageSize,
                          QueuePairType transport, int rnrRetry, long spinNanos, long recoveryFlushNanos,
                          long rnrResendNanos) implements QpSettings {
        /** {@link #rnrRetry()}: a finite retry count where the device lets it be set, else the device's default. */
        public static final int RNR_RETRY_AUTO = DeviceLimits.RNR_RETRY_AUTO;

        /**
         * Checks that the transport is given; the numbers are checked against the device by
         * {@link UdEndpoint#open}.
         *
         * @param portNum        1..the device's port count
         * @param sgidIndex      0..the port's GID table length - 1
         * @param qkey           0..0x7FFFFFFF
         * @param sendDepth      1..the device's {@code max_qp_wr} (EFA: also {@code max_sq_wr})
         * @param receiveDepth   1..the device's {@code max_qp_wr} (EFA: also {@code max_rq_wr})
         * @param maxMessageSize 0..the port's limit (EFA: {@code max_msg_sz}; else the active MTU), bytes; 0 for
         *                       that limit
         * @param transport      not null
         * @param rnrRetry       0..7 or {@link #RNR_RETRY_AUTO}
         * @param spinNanos      0..1_000_000_000 ns
         * @param recoveryFlushNanos 0..60_000_000_000 ns
         * @param rnrResendNanos 0..60_000_000_000 ns
         * @throws NullPointerException if {@code transport} is null
         */
        public Options {
            Objects.requireNonNull(transport, "transport");
        }

        /**
         * The default settings: port 1, sgid_index 0, Q_Key {@link UdEndpoint#DEFAULT_QKEY}, 64 sends and 256
         * receives, the port's active MTU, UD, a spin of {@link UdEndpoint#DEFAULT_SPIN_NANOS}, a
         * recovery flush bound of {@link UdEndpoint#DEFAULT_RECOVERY_FLUSH_NANOS}, an RNR resend budget of
         * {@link UdEndpoint#DEFAULT_RNR_RESEND_NANOS}.
         *
         * @return the defaults
         */
        public static Options defaults() {
            return new Options(1, 0, DEFAULT_QKEY, 64, 256, 0, QueuePairType.UD, RNR_RETRY_AUTO, DEFAULT_SPIN_NANOS,
                    DEFAULT_RECOVERY_FLUSH_NANOS, DEFAULT_RNR_RESEND_NANOS);
        }

        /**
         * Another port, as {@code ibv_ud_pingpong -i} picks one.
         *
         * @param port the 1-based {@code port_num}, 1..255 (a port number is a uint8 in verbs);
         *             {@link UdEndpoint#open} checks it against the device's port count
         *
         * @return a copy with that setting
         * @throws IllegalArgumentException if {@code port} is not 1..255, naming {@code port_num}
         */
        public Options withPortNum(int port) {
            Ranges.check("port_num", port, 1, 255);
            return new Options(port, sgidIndex, qkey, sendDepth, receiveDepth, maxMessageSize, transport, rnrRetry,
                    spinNanos, recoveryFlushNanos, rnrResendNanos);
        }

        /**
         * Another own GID.
         *
         * @param index the sgid_index of the endpoint's GID in the port's table
         *
         * @return a copy with that setting; checked only by {@link UdEndpoint#open}
         */
        public Options withSgidIndex(int index) {
            return new Options(portNum, index, qkey, sendDepth, receiveDepth, maxMessageSize, transport, rnrRetry,
                    spinNanos, recoveryFlushNanos, rnrResendNanos);
        }

        /**
         * Another Q_Key.
         *
         * @param key the Q_Key, 0..0x7FFFFFFF
         *
         * @return a copy with that setting; checked only by {@link UdEndpoint#open}
         */
        public Options withQkey(long key) {
            return new Options(portNum, sgidIndex, key, sendDepth, receiveDepth, maxMessageSize, transport, rnrRetry,
                    spinNanos, recoveryFlushNanos, rnrResendNanos);
        }

        /**
         * Other queue depths.
         *
         * @param send    sends in flight at most, 1..the device's {@code max_qp_wr} (EFA: {@code max_sq_wr})
         * @param receive receives posted, 1..the device's {@code max_qp_wr} (EFA: {@code max_rq_wr})
         *
         * @return a copy with that setting; checked only by {@link UdEndpoint#open}
         */
        public Options withDepths(int send, int receive) {
            return new Options(portNum, sgidIndex, qkey, send, receive, maxMessageSize, transport, rnrRetry,
                    spinNanos, recoveryFlushNanos, rnrResendNanos);
        }

        /**
         * Another largest payload.
         *
         * @param bytes largest payload in bytes, 1..path MTU; 0 means the port's active MTU
         *
         * @return a copy with that setting; checked only by {@link UdEndpoint#open}
         */
        public Options withMaxMessageSize(int bytes) {
            return new Options(portNum, sgidIndex, qkey, sendDepth, receiveDepth, bytes, transport, rnrRetry,
                    spinNanos, recoveryFlushNanos, rnrResendNanos);
        }

        /**
         * Another transport.
         *
         * @param type UD (every device) or SRD (EFA only)
         *
         * @return a copy with that setting; checked only by {@link UdEndpoint#open}
         */
        public Options withTransport(QueuePairType type) {
            return new Options(portNum, sgidIndex, qkey, sendDepth, receiveDepth, maxMessageSize, type, rnrRetry,
                    spinNanos, recoveryFlushNanos, rnrResendNanos);
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
            return new Options(portNum, sgidIndex, qkey, sendDepth, receiveDepth, maxMessageSize, transport, retries,
                    spinNanos, recoveryFlushNanos, rnrResendNanos);
        }

        /**
         * Another bound on a recovery's wait for flushes. A QP in the error state is expected to
         * complete what was posted to it as flushed; where it does not within this time (an EFA
         * device may flush only when the QP is destroyed) the endpoint destroys the QP and its CQs
         * and makes new ones: its address gets a new QPN, and the sends still in flight are reported
         * failed. Longer waits keep the QPN through more stalls; shorter ones end the stall sooner.
         *
         * @param time how long, 0..60 s; 0 waits for no flush: what the QP has not flushed by the
         *             recovery's first look is given up, and a new QP made at once
         * @param unit the unit of {@code time}
         *
         * @return a copy with that setting; checked only by {@link UdEndpoint#open}
         */
        public Options withRecoveryFlushBound(long time, TimeUnit unit) {
            return new Options(portNum, sgidIndex, qkey, sendDepth, receiveDepth, maxMessageSize, transport, rnrRetry,
                    spinNanos, unit.toNanos(time), rnrResendNanos);
        }

        /**
         * Another SRD RNR resend budget: how long a send that met RNR (its receiver had no receive
         * posted through the device's {@code rnr_retry} retries) is resent, after a backoff, before
         * it is reported failed.
         *
         * @param time how long, 0..60 s; 0 reports such a send at once
         * @param unit the unit of {@code time}
         *
         * @return a copy with that setting; checked only by {@link UdEndpoint#open}
         */
        public Options withRnrResendBudget(long time, TimeUnit unit) {
            return new Options(portNum, sgidIndex, qkey, sendDepth, receiveDepth, maxMessageSize, transport, rnrRetry,
                    spinNanos, recoveryFlushNanos, unit.toNanos(time));
        }

        /**
         * Another spin before a wait sleeps: short spins save CPU, long ones save the wake-up's latency.
         *
         * @param time how long, 0..1 s; 0 sleeps at once
         * @param unit the unit of {@code time}
         *
         * @return a copy with that setting; checked only by {@link UdEndpoint#open}
         */
        public Options withSpin(long time, TimeUnit unit) {
            return new Options(portNum, sgidIndex, qkey, sendDepth, receiveDepth, maxMessageSize, transport, rnrRetry,
                    unit.toNanos(time), recoveryFlushNanos,
                    rnrResendNanos);
        }

        /*
         * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
         * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
         * NoObjectMethodsTest). Same meaning and format as the generated ones.
         */
        @Override
        public boolean equals(Object o) {
            return o == this || o instanceof Options that && that.portNum == portNum && that.sgidIndex == sgidIndex
                    && that.qkey == qkey && that.sendDepth == sendDepth && that.receiveDepth == receiveDepth
                    && that.maxMessageSize == maxMessageSize && Objects.equals(that.transport, transport)
                    && that.rnrRetry == rnrRetry && that.spinNanos == spinNanos
                    && that.recoveryFlushNanos == recoveryFlushNanos && that.rnrResendNanos == rnrResendNanos;
        }

        @Override
        public int hashCode() {
            int h = portNum;
            h = 31 * h + sgidIndex;
            h = 31 * h + Long.hashCode(qkey);
            h = 31 * h + sendDepth;
            h = 31 * h + receiveDepth;
            h = 31 * h + maxMessageSize;
            h = 31 * h + Objects.hashCode(transport);
            h = 31 * h + rnrRetry;
            h = 31 * h + Long.hashCode(spinNanos);
            h = 31 * h + Long.hashCode(recoveryFlushNanos);
            h = 31 * h + Long.hashCode(rnrResendNanos);
            return h;
        }

        @Override
        public String toString() {
            return new StringBuilder("Options[portNum=").append(portNum).append(", sgidIndex=").append(sgidIndex)
                    .append(", qkey=").append(qkey).append(", sendDepth=").append(sendDepth)
                    .append(", receiveDepth=").append(receiveDepth)
                    .append(", maxMessageSize=").append(maxMessageSize).append(", transport=").append(transport)
                    .append(", rnrRetry=").append(rnrRetry).append(", spinNanos=").append(spinNanos)
                    .append(", recoveryFlushNanos=").append(recoveryFlushNanos)
                    .append(", rnrResendNanos=").append(rnrResendNanos).append(']').toString();
        }
    }

    /**
     * What an endpoint has done so far. Each counter has one writer, so a snapshot costs plain
     * reads; it is not atomic across counters.
     *
     * @param sent          sends posted
     * @param failedSends   sends that completed with an error, flushes included; each is reported
     *                      in a {@link WorkCompletionException}
     * @param received      datagrams returned by {@link #receive}
     * @param receiveErrors receives that completed with an error (flushes of a recovered QP not counted)
     * @param recoveries    times the QP was taken out of the error state, {@code qpsRemade} included
     * @param qpsRemade     of those, the times the QP and its CQs were destroyed and made anew (on
     *                      EFA every time; elsewhere when the flushes did not come within
     *                      {@link Options#recoveryFlushNanos()} or a move of the QP failed): each time
     *                      {@link #address()} got a new QPN
     * @param rnrResends    SRD: sends posted again because they met RNR (see "SRD receiver not
     *                      ready" in {@link UdEndpoint}); a send resent n times counts n
     * @param sendSleeps    times a send waiting for a slot, or a flush, slept on the send CQ's
     *                      completion channel (past its spin): each costs a wake-up
     * @param receiveSleeps times a receive slept on the receive CQ's completion channel
     * @param sendsOutcomeUnknown of {@code failedSends}, the sends a recovery gave up when it
     *                      destroyed the QP, with no completion ever polled: reported
     *                      {@code IBV_WC_WR_FLUSH_ERR} ({@link SendFailure#outcomeUnknown()}), though
     *                      the device may have delivered them
     */
    public record Counters(long sent, long failedSends, long received, long receiveErrors, long recoveries,
                           long qpsRemade, long rnrResends, long sendSleeps, long receiveSleeps,
                           long sendsOutcomeUnknown) {
        /**
         * Counters without {@code sendsOutcomeUnknown} (0), as before it was counted.
         *
         * @param sent          sends posted
         * @param failedSends   sends that completed with an error
         * @param received      datagrams returned by {@link #receive}
         * @param receiveErrors receives that completed with an error
         * @param recoveries    times the QP was taken out of the error state
         * @param qpsRemade     of those, the times the QP was made anew
         * @param rnrResends    SRD: sends posted again because they met RNR
         * @param sendSleeps    times a send or flush slept on the send CQ's channel
         * @param receiveSleeps times a receive slept on the receive CQ's channel
         */
        public Counters(long sent, long failedSends, long received, long receiveErrors, long recoveries,
                        long qpsRemade, long rnrResends, long sendSleeps, long receiveSleeps) {
            this(sent, failedSends, received, receiveErrors, recoveries, qpsRemade, rnrResends, sendSleeps,
                    receiveSleeps, 0);
        }

        /*
         * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
         * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
         * NoObjectMethodsTest). Same meaning and format as the generated ones.
         */
        @Override
        public boolean equals(Object o) {
            return o == this || o instanceof Counters that && that.sent == sent && that.failedSends == failedSends
                    && that.received == received && that.receiveErrors == receiveErrors
                    && that.recoveries == recoveries && that.qpsRemade == qpsRemade && that.rnrResends == rnrResends
                    && that.sendSleeps == sendSleeps && that.receiveSleeps == receiveSleeps
                    && that.sendsOutcomeUnknown == sendsOutcomeUnknown;
        }

        @Override
        public int hashCode() {
            int h = Long.hashCode(sent);
            h = 31 * h + Long.hashCode(failedSends);
            h = 31 * h + Long.hashCode(received);
            h = 31 * h + Long.hashCode(receiveErrors);
            h = 31 * h + Long.hashCode(recoveries);
            h = 31 * h + Long.hashCode(qpsRemade);
            h = 31 * h + Long.hashCode(rnrResends);
            h = 31 * h + Long.hashCode(sendSleeps);
            h = 31 * h + Long.hashCode(receiveSleeps);
            h = 31 * h + Long.hashCode(sendsOutcomeUnknown);
            return h;
        }

        @Override
        public String toString() {
            return new StringBuilder("Counters[sent=").append(sent).append(", failedSends=").append(failedSends)
                    .append(", received=").append(received).append(", receiveErrors=").append(receiveErrors)
                    .append(", recoveries=").append(recoveries).append(", qpsRemade=").append(qpsRemade)
                    .append(", rnrResends=").append(rnrResends).append(", sendSleeps=").append(sendSleeps)
                    .append(", receiveSleeps=").append(receiveSleeps)
                    .append(", sendsOutcomeUnknown=").append(sendsOutcomeUnknown).append(']').toString();
        }
    }

    private UdEndpoint(ProtectionDomain pd, AddressHandleCache cache, Options options, int maxMessageSize,
                       int rnrRetry) {
        this.pd = pd;
        this.cache = cache;
        this.device = pd.device();
        this.options = options;
        this.maxMessageSize = maxMessageSize;
        this.rnrRetry = rnrRetry;
        int prefix = options.transport() == QueuePairType.SRD ? 0 : GRH_BYTES;
        this.receiveSlotSize = prefix + maxMessageSize;
        Gid gid = device.gid(options.portNum(), options.sgidIndex());
        // Before the QP exists, so before anything can arrive: the first mark of ArrivalMarks.
        long markBeforeQp = device.isEfa() ? cache.ahnReuseMark() : 0;
        EndpointResources r = EndpointResources.open(pd, options, maxMessageSize, receiveSlotSize, rnrRetry);
        this.resources = r;
        UdQueuePair q = r.qp;
        this.address = new EndpointAddress(gid, q.qpn(), options.qkey());
        this.recovery = new QpRecovery(this::recoveryBegun, this::attached, closeFlag, r, options.portNum(),
                options.qkey(), rnrRetry, device.isEfa(), options.recoveryFlushNanos());
        this.sends = new SendSlots(closeFlag, this::resendQueued, recovery, q, r.sendCq, r.sendMemory,
                options.sendDepth(), maxMessageSize, device.isEfa(), rnrRetry(),
                options.transport() == QueuePairType.SRD ? options.rnrResendNanos() : 0);
        this.resolver = device.isEfa() ? new EfaSourceResolver(pd, cache, options.portNum())
                : new GrhSourceResolver(pd, cache, options.portNum(), r.receiveMemory,
                        options.receiveDepth() * receiveSlotSize);
        this.receives = new ReceiveSlots(closeFlag, this::datagramsKept, recovery, q, r.receiveCq, r.receiveMemory,
                options.receiveDepth(), prefix, receiveSlotSize, resolver, device.isEfa(), markBeforeQp);
        recovery.drives(sends, receives);
        this.sendWaiter = new CompletionWaiter(closeFlag, this::sendsMayIdle, r.sendCq, options.spinNanos());
        this.receiveWaiter = new CompletionWaiter(closeFlag, this::receivesMayIdle, r.receiveCq, options.spinNanos());
        this.sender = new Sender(sends, recovery, sendWaiter);
        this.receiver = new Receiver(receives, recovery, receiveWaiter, options.recoveryFlushNanos());
    }

    /*
     * The one answer to whether a wait may sleep on its CQ's channel, asked by its waiter after the
     * arm (CompletionWaiter.sleep): every part that holds what no completion event will announce
     * says no. The recovery, while one is in progress (it waits for both CQs); the send side, while
     * a resend waits for its time or the last poll stopped at a full batch; the receive side, while
     * completions taken off the CQ are not yet handed out.
     */
    private boolean sendsMayIdle() {
        return recovery.mayIdle() && sends.mayIdle();
    }

    private boolean receivesMayIdle() {
        return recovery.mayIdle() && receives.mayIdle();
    }

    /**
     * Opens an endpoint on {@code pd}'s device: a CQ pair, a QP of the chosen transport ready to
     * send, and registered send and receive memory, with every receive posted.
     *
     * @param pd      the PD; the endpoint's AHs and memory belong to it
     * @param cache   the cache the endpoint takes its return-path AHs from; close the endpoint
     *                before it
     * @param options the settings, checked against the device here
     * @return the open endpoint; close it when done
     *
     * @throws NullPointerException     if an argument is null
     * @throws IllegalArgumentException if an option is out of range (named, with the range)
     * @throws VerbsException           if the device refuses a resource; EOPNOTSUPP, naming the
     *                                  device, for SRD on a device that is not EFA or a provider
     *                                  without a datagram path, and for an {@code rnrRetry} of 0..6
     *                                  on a device that cannot set it
     */
    public static UdEndpoint open(ProtectionDomain pd, AddressHandleCache cache, Options options) {
        Objects.requireNonNull(pd, "pd");
        Objects.requireNonNull(cache, "cache");
        Objects.requireNonNull(options, "options");
        Device device = pd.device();
        int ports = device.attributes().portCount();
        if (options.portNum() < 1 || options.portNum() > ports) {
            throw new IllegalArgumentException("port_num: " + options.portNum() + " is not a port of " + device.name()
                    + ", which has " + ports + (ports == 1 ? " port" : " ports") + " (valid 1.." + ports + ")");
        }
        DeviceLimits.checkDepths(device, options);
        Ranges.check("qkey", options.qkey(), 0, UdQueuePair.MAX_QKEY);
        Ranges.check("spinNanos", options.spinNanos(), 0, TimeUnit.SECONDS.toNanos(1));
        Ranges.check("recoveryFlushNanos", options.recoveryFlushNanos(), 0, MAX_BOUND_NANOS);
        Ranges.check("rnrResendNanos", options.rnrResendNanos(), 0, MAX_BOUND_NANOS);
        if (options.rnrRetry() != Options.RNR_RETRY_AUTO) {
            Ranges.check("rnrRetry", options.rnrRetry(), 0, 7);
        }
        int limit = DeviceLimits.messageSizeLimit(device, options.portNum());
        Ranges.check("maxMessageSize", options.maxMessageSize(), 0, limit);
        return new UdEndpoint(pd, cache, options, options.maxMessageSize() == 0 ? limit : options.maxMessageSize(),
                DeviceLimits.rnrRetry(device, options));
    }

    /**
     * Where peers send to reach this endpoint. The QPN changes when a recovery from the QP error
     * state makes a new QP ({@link Options#recoveryFlushNanos()}, {@link Counters#qpsRemade()}):
     * peers that kept the old address reach nobody (UD drops their datagrams; SRD fails their
     * sends), so an application whose peers learn its address once should tell them the new one
     * after such a recovery; datagrams it sends carry the new QPN as their source.
     *
     * @return the endpoint's GID, QPN and Q_Key, as of now
     */
    public EndpointAddress address() {
        return address;
    }

    /** At a recovery that made a new QP, both locks held: the address and the waits follow it. */
    private void attached(UdQueuePair qp) {
        address = new EndpointAddress(address.gid(), qp.qpn(), address.qkey());
        sendWaiter.attach(resources.sendCq);
        receiveWaiter.attach(resources.receiveCq);
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
        return new Counters(sends.sent(), sends.failed(), receives.received(), receives.receiveErrors(),
                recovery.recoveries(), recovery.remade(), sends.rnrResends(), sendWaiter.sleeps(),
                receiveWaiter.sleeps(), sends.outcomeUnknown());
    }

    /**
     * The SRD {@code rnr_retry} in force.
     *
     * @return 0..7 (7 retries without end, also where the device's default was left); -1 on UD
     */
    public int rnrRetry() {
        if (options.transport() != QueuePairType.SRD) {
            return -1;
        }
        return rnrRetry == EfaVerbs.RNR_RETRY_DEVICE_DEFAULT ? 7 : rnrRetry;
    }

    /**
     * Sends {@code payload}'s remaining bytes to {@code to} through {@code ah}; see
     * {@link #send(AddressHandle, int, long, ByteBuffer)}, whose exceptions apply.
     *
     * @param ah      an AH to {@code to}'s GID, in this endpoint's PD
     * @param to      the receiver's GID (the AH's), QPN and Q_Key
     * @param payload the bytes from position to limit; consumed
     * @throws IllegalArgumentException also when {@code to}'s GID is not {@code ah}'s, before the post
     */
    public void send(AddressHandle ah, EndpointAddress to, ByteBuffer payload) {
        checkAgree(ah, to);
        send(ah, to.qpn(), to.qkey(), payload);
    }

    /**
     * Sends {@code payload}'s remaining bytes to {@code to}, through an AH the endpoint acquires
     * from its cache for {@code to}'s GID (a hit once made) and releases when the send completes:
     * the caller holds no AH. The exceptions of {@link #send(AddressHandle, int, long, ByteBuffer)}
     * apply, and those of {@link AddressHandleCache#acquire} for the AH.
     *
     * @param to      the receiver's GID, QPN and Q_Key
     * @param payload the bytes from position to limit; consumed
     */
    public void send(EndpointAddress to, ByteBuffer payload) {
        Objects.requireNonNull(to, "to");
        checkOpen();
        try (AddressHandle ah = cache.acquire(pd,
                AddressHandleAttributes.builder().dgid(to.gid()).portNum(options.portNum()).build())) {
            send(ah, to.qpn(), to.qkey(), payload);
        }
    }

    /** A send names its destination twice (the AH's GID, the address's): they must agree. */
    private static void checkAgree(AddressHandle ah, EndpointAddress to) {
        Objects.requireNonNull(ah, "ah");
        Objects.requireNonNull(to, "to");
        if (!ah.dgid().equals(to.gid())) {
            throw new IllegalArgumentException("to: GID " + to.gid() + " is not the GID of ah (" + ah.dgid()
                    + "); a send through it would reach " + ah.dgid() + ", not " + to);
        }
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
     * @throws InterruptedOperationException if interrupted while waiting for a slot (flag set again)
     * @throws WorkCompletionException       if earlier sends completed with an error (each listed in
     *                                       {@link WorkCompletionException#failures()}); this send was
     *                                       not posted and its payload not consumed
     * @throws VerbsException                if the post fails, or ETIMEDOUT when no slot frees in 10 s
     *                                       (naming a send in flight and, on SRD, the {@code rnr_retry});
     *                                       for every call after a recovery's remake of the QP failed
     *                                       (the endpoint is then ended: its cause is that failure,
     *                                       with its errno; close it)
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
        sender.send(ah, remoteQpn, remoteQkey, payload, length);
    }

    /**
     * Sends {@code count} payloads, {@code payloads[offset]} on, to one destination, posting as many
     * as there are free slots in one provider call ({@code ibv_post_send} of chained work requests):
     * fewer crossings per datagram than one {@link #send} each. Waits, holding no lock, for slots
     * when the batch is larger than the slots free; returns once every payload is posted. Each
     * payload's remaining bytes are sent and consumed as it is posted. Thread-safe; another thread's
     * sends may come in between two of the batch's posts.
     *
     * @param ah       an AH to the receiver's GID, in this endpoint's PD
     * @param to       the receiver's GID (the AH's: checked, before the post), QPN and Q_Key
     * @param payloads the payloads; those from {@code offset} to {@code offset + count - 1} are sent
     * @param offset   the first payload's index
     * @param count    payloads to send, 0..{@code payloads.length - offset}
     * @throws IllegalArgumentException      as {@link #send}, for any payload, before anything is posted;
     *                                       also for an {@code offset} or {@code count} out of range
     * @throws IllegalStateException         as {@link #send}
     * @throws InterruptedOperationException as {@link #send}; the payloads posted before are consumed,
     *                                       the others keep their position
     * @throws WorkCompletionException       as {@link #send}, likewise
     * @throws VerbsException                as {@link #send}, likewise
     */
    public void sendBatch(AddressHandle ah, EndpointAddress to, ByteBuffer[] payloads, int offset, int count) {
        checkAgree(ah, to);
        Objects.requireNonNull(payloads, "payloads");
        if (ah.pd() != pd) {
            throw new IllegalArgumentException("ah: belongs to another PD than this endpoint's");
        }
        Objects.checkFromIndexSize(offset, count, payloads.length);
        for (int i = offset; i < offset + count; i++) {
            ByteBuffer p = payloads[i];
            if (p == null || p.remaining() > maxMessageSize) {
                throw badPayload(payloads, i); // the message built only here: this loop runs per datagram
            }
        }
        sender.sendBatch(ah, to.qpn(), to.qkey(), payloads, offset, count);
    }

    /** What is wrong with {@code payloads[i]}: null, or larger than the endpoint's largest message. */
    private RuntimeException badPayload(ByteBuffer[] payloads, int i) {
        ByteBuffer p = payloads[i];
        if (p == null) {
            return new NullPointerException("payloads[" + i + "]");
        }
        return new IllegalArgumentException("payloads[" + i + "]: " + p.remaining() + " bytes; valid 0.."
                + maxMessageSize + " (the endpoint's largest message)");
    }

    /**
     * Waits, holding no lock, until every send posted so far has completed.
     *
     * @param timeout how long to wait at most
     * @param unit    the unit of {@code timeout}
     *
     * @return true when all completed, false on timeout (on SRD with {@code rnr_retry} 7 a send to a
     *         receiver that posts nothing never completes)
     * @throws WorkCompletionException       if sends completed with an error, each listed in
     *                                       {@link WorkCompletionException#failures()}
     * @throws InterruptedOperationException if interrupted while waiting (flag set again)
     * @throws IllegalStateException         if the endpoint is or gets closed
     */
    public boolean flush(long timeout, TimeUnit unit) {
        return sender.flush(System.nanoTime() + unit.toNanos(timeout));
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
     * Waits up to {@code timeout}, holding no lock, for one datagram, and copies it out; for no copy
     * and no allocation, see {@link #receive(Consumer, int, long, TimeUnit)}.
     *
     * @param timeout how long to wait at most
     * @param unit    the unit of {@code timeout}
     *
     * @return the datagram, or null on timeout
     * @throws WorkCompletionException       if the receive completed with an error (the slot is
     *                                       reposted; if the QP went into the error state it has
     *                                       been recovered by the time this is thrown, which can
     *                                       take up to {@link Options#recoveryFlushNanos()} where
     *                                       the error state flushes nothing: see the class comment)
     * @throws InterruptedOperationException if interrupted while waiting (flag set again)
     * @throws IllegalStateException         if the endpoint is closed, also by another thread while waiting
     */
    public Datagram receive(long timeout, TimeUnit unit) {
        DatagramView v = receiver.await(1, System.nanoTime() + unit.toNanos(timeout));
        if (v == null) {
            return null;
        }
        try {
            return v.copy();
        } finally {
            receives.giveBack(v);
        }
    }

    /**
     * Waits up to {@code timeout}, holding no lock, for at least one datagram, then hands each of
     * those already received, up to {@code limit}, to {@code handler} in arrival order, in place in
     * the registered receive memory: no copy, and in steady state no allocation. Each
     * {@link DatagramView} is valid only during its {@code handler.accept} call (see there): its slot
     * is posted again once the handler returns, and a handler that keeps anything copies it. The
     * handler runs on this thread with no endpoint lock held, so it may send and reply; the slot it
     * reads stays out of the receive ring until it returns, so a slow handler leaves fewer receives
     * posted.
     *
     * @param handler takes each datagram, valid only until it returns
     * @param limit   datagrams at most, 1..{@link Integer#MAX_VALUE}; up to 64 are taken per CQ poll
     * @param timeout how long to wait at most for the first
     * @param unit    the unit of {@code timeout}
     * @return the datagrams handed to {@code handler}, 0 on timeout
     * @throws IllegalArgumentException      if {@code limit} is below 1
     * @throws WorkCompletionException       as {@link #receive(long, TimeUnit)}, for an error completion
     *                                       found before any datagram (one behind datagrams waits for
     *                                       the next call)
     * @throws InterruptedOperationException if interrupted while waiting (flag set again)
     * @throws IllegalStateException         if the endpoint is closed, also by another thread while waiting
     * @throws RuntimeException              what {@code handler} throws; the datagrams after the one it
     *                                       threw on are kept for the next call
     */
    public int receive(Consumer<? super DatagramView> handler, int limit, long timeout, TimeUnit unit) {
        Objects.requireNonNull(handler, "handler");
        checkLimit(limit);
        DatagramView v = receiver.await(limit, System.nanoTime() + unit.toNanos(timeout));
        return v == null ? 0 : receives.deliver(v, handler);
    }

    /**
     * Hands the datagrams already received, up to {@code limit}, to {@code handler}, without waiting:
     * {@link #receive(Consumer, int, long, TimeUnit)} with no wait, for callers with their
     * own idle strategy or several endpoints on one thread (Aeron's {@code Subscription.poll}).
     * One wait remains on EFA: naming a sender waits while another thread creates or destroys
     * that sender's AH in the cache (one device call); an interrupt does not end it, and stays set.
     *
     * @param handler takes each datagram, valid only until it returns
     * @param limit   datagrams at most, 1..{@link Integer#MAX_VALUE}
     * @return the datagrams handed to {@code handler}, 0 when none was there
     * @throws IllegalArgumentException if {@code limit} is below 1
     * @throws WorkCompletionException  as {@link #receive(Consumer, int, long, TimeUnit)}, but
     *                                  without waiting for a recovery it begins: later calls take it on
     * @throws IllegalStateException    if the endpoint is closed
     * @throws RuntimeException         what {@code handler} throws, as there
     */
    public int poll(Consumer<? super DatagramView> handler, int limit) {
        Objects.requireNonNull(handler, "handler");
        checkLimit(limit);
        DatagramView v = receiver.poll(limit);
        return v == null ? 0 : receives.deliver(v, handler);
    }

    private static void checkLimit(int limit) {
        if (limit < 1) {
            throw new IllegalArgumentException("limit: " + limit + "; valid 1.." + Integer.MAX_VALUE);
        }
    }

    /**
     * Whether waits sleep on completion channels (else they poll with short parks): true where the
     * provider and the device support them (not on EFA devices without CQ notifications).
     *
     * @return true when {@link #receive} sleeps until a datagram arrives
     */
    public boolean eventDriven() {
        return receiveWaiter.eventDriven();
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

    /**
     * {@link #replyAttributes(Datagram)} for a datagram a handler is reading.
     *
     * @param datagram a view this endpoint's handler call was given, during that call
     * @return the attributes, to acquire an AH with
     * @throws IllegalStateException    if the endpoint is closed, or the view is used after its call
     * @throws IllegalArgumentException if the datagram's sender is unknown ({@link SourceOrigin#UNKNOWN} on EFA)
     */
    public AddressHandleAttributes replyAttributes(DatagramView datagram) {
        Objects.requireNonNull(datagram, "datagram");
        checkOpen();
        return resolver.replyAttributes(datagram);
    }

    /**
     * {@link #acquireReplyAh(Datagram)} for a datagram a handler is reading.
     *
     * @param datagram a view this endpoint's handler call was given, during that call
     * @return a new open handle to the AH; close it when done
     * @throws IllegalArgumentException if the datagram's sender is unknown
     *                                  ({@link SourceOrigin#UNKNOWN} on EFA)
     * @throws IllegalStateException    if the endpoint is closed, or the view is used after its call
     * @throws VerbsException           if the AH cannot be created
     */
    public AddressHandle acquireReplyAh(DatagramView datagram) {
        Objects.requireNonNull(datagram, "datagram");
        checkOpen();
        return resolver.acquireReplyAh(datagram);
    }

    /**
     * {@link #reply(Datagram, ByteBuffer)} from a handler: to the sender of the datagram it is reading.
     *
     * @param datagram a view this endpoint's handler call was given, during that call
     * @param payload  the bytes from position to limit; consumed (it may be {@code datagram.payload()}, to echo)
     */
    public void reply(DatagramView datagram, ByteBuffer payload) {
        try (AddressHandle ah = acquireReplyAh(datagram)) {
            send(ah, datagram.sourceQpn(), options.qkey(), payload);
        }
    }

    /** A recovery has begun: waits asleep on either CQ go on parked, driving it (no event may come). */
    private void recoveryBegun() {
        sendWaiter.wakeSleeper();
        receiveWaiter.wakeSleeper();
    }

    /** A send was queued for a resend: a wait asleep on the send CQ goes on parked, to post it. */
    private void resendQueued() {
        sendWaiter.wakeSleeper();
    }

    /** Datagrams were kept for the next receive: a receive asleep on the CQ takes them. */
    private void datagramsKept() {
        receiveWaiter.wakeSleeper();
    }

    /** Whether {@link #close()} has gone past its drain: no call may use the QP or the slots any more. */
    boolean closed() {
        return closeFlag.isClosed();
    }

    private void checkOpen() {
        closeFlag.checkOpen();
    }

    /**
     * Waits briefly (up to 1 s, holding no lock; less if interrupted, the flag kept) for sends in
     * flight, then destroys the QP, the registered memory and the CQs, children first, and drops
     * the AH references it held. Calls waiting in other threads throw {@link IllegalStateException}
     * promptly. A close that another thread is running is waited for (up to 30 s; an interrupt ends
     * the wait, the flag kept), so that on return everything is freed. A close that threw can be
     * called again: it retries what was not freed. Idempotent once it has succeeded.
     *
     * @throws VerbsException        if a resource could not be freed (the first failure; the
     *                               others suppressed), or a poll of the drain failed (everything
     *                               was still freed)
     * @throws IllegalStateException if a close running in another thread did not end within 30 s
     */
    @Override
    public void close() {
        while (!released) {
            CountDownLatch mine = new CountDownLatch(1);
            CountDownLatch running = closing.compareAndExchange(null, mine);
            if (running == null) {
                try {
                    closeOnce();
                    released = true;
                } finally {
                    closing.set(null);
                    mine.countDown();
                }
                return;
            }
            if (!awaitClose(running)) {
                return;
            }
            // It ended; if it failed, this call retries.
        }
    }

    /** Waits for another thread's close; false when interrupted (flag set again) or past the bound. */
    private static boolean awaitClose(CountDownLatch running) {
        try {
            if (!running.await(CLOSE_WAIT_SECONDS, TimeUnit.SECONDS)) {
                throw new IllegalStateException("UD endpoint: another thread's close() has not ended within "
                        + CLOSE_WAIT_SECONDS + " s");
            }
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /*
     * One attempt at closing. The drain runs once (a retry skips it); a drain that throws (a CQ
     * poll failing) does not keep the resources: they are freed, and its failure is thrown after.
     * Each resource's close is retryable (its guard closes only on success), so a retry frees
     * exactly what the failed attempt left.
     */
    private void closeOnce() {
        RuntimeException failure = null;
        if (!closeFlag.isClosed()) {
            try {
                sender.drain();
            } catch (RuntimeException e) {
                failure = e;
            }
            closeFlag.set();
            sendWaiter.stop();
            receiveWaiter.stop();
        }
        sends.lock.lock();
        try {
            receives.lock.lock();
            try {
                failure = resources.closeQp(failure);
                // With the QP gone no send can still use an AH: now the references may go. If the
                // QP could not be destroyed they stay held (and show as leaks at cache close)
                // rather than let an AH be destroyed under a send the device may still process.
                if (resources.qpClosed()) {
                    sends.releaseAllLocked();
                }
                failure = resources.closeRest(failure);
            } finally {
                receives.lock.unlock();
            }
        } finally {
            sends.lock.unlock();
        }
        if (failure != null) {
            throw failure;
        }
    }

    @Override
    public String toString() {
        VerbsException ended = recovery.ended();
        return "UdEndpoint[" + address + " on " + device.name()
                + (ended == null ? "" : ", ended by its QP's remake: " + ended.getMessage()) + "]";
    }
}
