package org.efaah.verbs.mock;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.SplittableRandom;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.EfaDeviceAttributes;
import org.efaah.verbs.EfaCompletionStatus;
import org.efaah.verbs.Errno;
import org.efaah.verbs.Gid;
import org.efaah.verbs.Grh;
import org.efaah.verbs.QueuePairState;
import org.efaah.verbs.QueuePairType;
import org.efaah.verbs.spi.QueuePairNumbers;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.WorkCompletion;

/**
 * The mock's datagram path: UD and SRD QPs on the mock devices of one {@link MockVerbsProvider}
 * exchange datagrams in memory, with the semantics of the real stack, failures included. Each EFA
 * rule names the rdma-core function (libefa, {@code providers/efa/verbs.c}) or kernel function it
 * follows; RoCE-model devices ({@code efa=false}) behave as rxe does.
 * <ul>
 * <li>UD: a send completes locally whether or not it is delivered; a datagram is dropped when the
 * destination GID, QPN or Q_Key does not match or no receive is posted.</li>
 * <li>A receive too small for the datagram completes with {@code IBV_WC_LOC_QP_OP_ERR} and puts
 * the QP in the error state, as rxe does: the receives still posted complete with
 * {@code IBV_WC_WR_FLUSH_ERR}, later posts are flushed at once, nothing more is delivered,
 * until the QP goes through RESET, INIT, RTR and RTS again.</li>
 * <li>A send beyond {@code max_send_wr} outstanding (posted, completion not yet polled) fails
 * with ENOMEM, as EFA answers a full send queue.</li>
 * <li>RoCE-model devices: a delivered datagram lands behind a 40-byte GRH (IPv6 header layout)
 * carrying the source and destination GIDs, or between IPv4-mapped GIDs behind the RoCE v2 IPv4
 * layout (20 undefined bytes, then the IPv4 header); {@code IBV_WC_GRH} is set.</li>
 * <li>EFA UD: no {@code IBV_WC_GRH}; the 40 bytes are garbage; {@code slid} is the AHN of the
 * receiving PD's AH for the sender's GID, or 0xFFFF when it has none; the sender's GID is given
 * only by a CQ made with the source GID, and only for 0xFFFF; {@code ibv_init_ah_from_wc} yields
 * the non-global attributes libibverbs builds without a GRH.</li>
 * <li>EFA SRD: no 40-byte area: the payload lands at offset 0 and {@code byte_len} is the payload;
 * every datagram is delivered exactly once, out of order when {@link MockVerbsProvider#reorderSrd}
 * is on; the send completes when delivered. A receiver with no receive posted: with
 * {@code rnr_retry} 7 (the default) the send stays in flight until one is posted; with less it
 * completes with {@code IBV_WC_RNR_RETRY_EXC_ERR}. A missing destination QP, one in error, or a
 * Q_Key mismatch: {@code REMOTE_ERROR_BAD_DEST_QPN}.</li>
 * <li>EFA completions name their work request by slot: the {@code wr_id} is looked up when the
 * completion is polled, and RESET rewinds the slots, so a completion from before a RESET polled
 * after it reads a new work request's {@code wr_id} (or breaks libefa's slot pool).</li>
 * <li>A CQ with more completions than its {@code cqe} overruns: it fails every later poll, and on
 * RoCE-model devices raises {@code IBV_EVENT_CQ_ERR} (the EFA driver raises no async events).</li>
 * </ul>
 *
 * <p>One lock (this object's monitor) guards the whole fabric: it is a model, not a hot path.
 */
final class MockFabric {
    /** Size of the area in front of every UD receive (a GRH, or on EFA 40 undefined bytes). */
    static final int GRH_LENGTH = Grh.LENGTH;
    private static final int IPV4_HEADER_LENGTH = 20;
    /** Largest UD payload: the path MTU the mock ports report. */
    static final int MTU = 4096;
    /** SRD sends held back for reordering before one is delivered regardless. */
    private static final int REORDER_WINDOW = 16;
    /** {@code rnr_retry} 7: retry without end, EFA's default for SRD (libfabric's EFA_RNR_INFINITE_RETRY). */
    static final int RNR_RETRY_FOREVER = 7;

    private final MockVerbsProvider provider;
    private final Map<Long, Cq> cqs = new HashMap<>();
    private final Map<Long, MockCompletionChannel> channels = new HashMap<>();
    private final Map<Long, Mr> mrs = new HashMap<>();
    private final Map<Long, Qp> qps = new HashMap<>();
    private final Map<MockVerbsProvider.MockDevice, Map<Integer, Qp>> qpsByNumber = new HashMap<>();
    private final SplittableRandom garbage = new SplittableRandom(0x40);
    private final List<SrdSend> inFlightSrd = new ArrayList<>();
    /** SRD sends whose receiver had no receive posted, retried without end ({@code rnr_retry} 7). */
    private final List<SrdSend> retryingSrd = new ArrayList<>();
    private SplittableRandom reorder; // null: SRD delivers in order
    private List<Cqe> heldSendCompletions; // null: send completions go to their CQ at once
    private int nextQpn = 0x100;

    MockFabric(MockVerbsProvider provider) {
        this.provider = provider;
    }

    private static final class Cq {
        final MockVerbsProvider.MockContext context;
        final int capacity;
        final boolean withSourceGid;
        final ArrayDeque<Cqe> queue = new ArrayDeque<>();
        int users;
        /** Its completion channel, or null; {@link #armed} until a completion posts the one event. */
        MockCompletionChannel channel;
        boolean armed;
        /** Set when a completion found the CQ full: the CQ is broken for good, as hardware's is. */
        boolean overrun;

        Cq(MockVerbsProvider.MockContext context, int capacity, boolean withSourceGid) {
            this.context = context;
            this.capacity = capacity;
            this.withSourceGid = withSourceGid;
        }
    }

    /**
     * One completion of {@code qp}'s send ({@code send}) or receive queue. {@code token} is what the
     * device writes: on EFA the work request's slot (libefa's {@code req_id}), elsewhere its {@code wr_id}.
     */
    private record Cqe(long token, int status, int opcode, int byteLength, Qp qp, boolean send, int srcQp, int flags,
                       int slid, int vendorError, Gid sourceGid) {
        /*
         * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
         * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
         * NoObjectMethodsTest). Same meaning and format as the generated ones.
         */
        @Override
        public boolean equals(Object o) {
            return o == this || o instanceof Cqe that && that.token == token && that.status == status
                    && that.opcode == opcode && that.byteLength == byteLength && Objects.equals(that.qp, qp)
                    && that.send == send && that.srcQp == srcQp && that.flags == flags && that.slid == slid
                    && that.vendorError == vendorError && Objects.equals(that.sourceGid, sourceGid);
        }

        @Override
        public int hashCode() {
            int h = Long.hashCode(token);
            h = 31 * h + status;
            h = 31 * h + opcode;
            h = 31 * h + byteLength;
            h = 31 * h + Objects.hashCode(qp);
            h = 31 * h + Boolean.hashCode(send);
            h = 31 * h + srcQp;
            h = 31 * h + flags;
            h = 31 * h + slid;
            h = 31 * h + vendorError;
            h = 31 * h + Objects.hashCode(sourceGid);
            return h;
        }

        @Override
        public String toString() {
            return new StringBuilder("Cqe[token=").append(token).append(", status=").append(status)
                    .append(", opcode=").append(opcode).append(", byteLength=").append(byteLength)
                    .append(", qp=").append(qp).append(", send=").append(send).append(", srcQp=").append(srcQp)
                    .append(", flags=").append(flags).append(", slid=").append(slid)
                    .append(", vendorError=").append(vendorError).append(", sourceGid=").append(sourceGid)
                    .append(']').toString();
        }
    }

    private record Mr(MockVerbsProvider.MockPd pd, ByteBuffer buffer) {
        /*
         * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
         * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
         * NoObjectMethodsTest). Same meaning and format as the generated ones.
         */
        @Override
        public boolean equals(Object o) {
            return o == this || o instanceof Mr that && Objects.equals(that.pd, pd)
                    && Objects.equals(that.buffer, buffer);
        }

        @Override
        public int hashCode() {
            int h = Objects.hashCode(pd);
            h = 31 * h + Objects.hashCode(buffer);
            return h;
        }

        @Override
        public String toString() {
            return new StringBuilder("Mr[pd=").append(pd).append(", buffer=").append(buffer).append(']').toString();
        }
    }

    private record Receive(Mr mr, int offset, int length, long token) {
        /*
         * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
         * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
         * NoObjectMethodsTest). Same meaning and format as the generated ones.
         */
        @Override
        public boolean equals(Object o) {
            return o == this || o instanceof Receive that && Objects.equals(that.mr, mr) && that.offset == offset
                    && that.length == length && that.token == token;
        }

        @Override
        public int hashCode() {
            int h = Objects.hashCode(mr);
            h = 31 * h + offset;
            h = 31 * h + length;
            h = 31 * h + Long.hashCode(token);
            return h;
        }

        @Override
        public String toString() {
            return new StringBuilder("Receive[mr=").append(mr).append(", offset=").append(offset)
                    .append(", length=").append(length).append(", token=").append(token).append(']').toString();
        }
    }

    private record SrdSend(Qp from, MockVerbsProvider.MockAh ah, int remoteQpn, int remoteQkey, byte[] payload,
                           long token) {
        /*
         * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
         * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
         * NoObjectMethodsTest). Same meaning and format as the generated ones: arrays by reference.
         */
        @Override
        public boolean equals(Object o) {
            return o == this || o instanceof SrdSend that && Objects.equals(that.from, from)
                    && Objects.equals(that.ah, ah) && that.remoteQpn == remoteQpn && that.remoteQkey == remoteQkey
                    && Objects.equals(that.payload, payload) && that.token == token;
        }

        @Override
        public int hashCode() {
            int h = Objects.hashCode(from);
            h = 31 * h + Objects.hashCode(ah);
            h = 31 * h + remoteQpn;
            h = 31 * h + remoteQkey;
            h = 31 * h + Objects.hashCode(payload);
            h = 31 * h + Long.hashCode(token);
            return h;
        }

        @Override
        public String toString() {
            return new StringBuilder("SrdSend[from=").append(from).append(", ah=").append(ah)
                    .append(", remoteQpn=").append(remoteQpn).append(", remoteQkey=").append(remoteQkey)
                    .append(", payload=").append(payload).append(", token=").append(token).append(']').toString();
        }
    }

    /**
     * A QP's send or receive queue as libefa keeps it ({@code struct efa_wq}): on EFA a pool of slots,
     * each remembering the {@code wr_id} posted into it, taken at post ({@code efa_wq_get_next_wrid_idx_locked}),
     * read and given back when the completion is polled ({@code efa_wq_get_wrid_by_dev_req_id},
     * {@code efa_wq_cqe_finalize}), and rewound by RESET ({@code efa_qp_init_indices}). Elsewhere the
     * completion carries the {@code wr_id} itself, as rxe's does.
     */
    private static final class WorkQueue {
        final boolean bySlot;
        final long[] wrIds;
        final int[] pool;
        int poolNext;
        int posted;
        int completed;

        WorkQueue(int capacity, boolean bySlot) {
            this.bySlot = bySlot;
            this.wrIds = new long[capacity];
            this.pool = new int[capacity];
            for (int i = 0; i < capacity; i++) {
                pool[i] = i;
            }
        }

        /** Posted, completion not yet polled: {@code wqe_posted - wqe_completed}. */
        int outstanding() {
            return posted - completed;
        }

        boolean full() {
            return outstanding() >= pool.length;
        }

        /** The token a completion of this work request will carry. */
        long post(long wrId) {
            posted++;
            if (!bySlot) {
                return wrId;
            }
            if (poolNext >= pool.length) {
                throw new IllegalStateException("libefa's wrid slot pool overruns (efa_wq_get_next_wrid_idx_locked): "
                        + "completions from before a RESET were polled after it");
            }
            int slot = pool[poolNext++];
            wrIds[slot] = wrId;
            return slot;
        }

        /** The {@code wr_id} a polled completion reports, and the slot given back. */
        long complete(long token) {
            completed++;
            if (!bySlot) {
                return token;
            }
            int slot = (int) token;
            long wrId = wrIds[slot];
            if (poolNext == 0) {
                throw new IllegalStateException("libefa's wrid slot pool underflows (efa_wq_cqe_finalize): "
                        + "a completion from before a RESET was polled after it");
            }
            pool[--poolNext] = slot;
            return wrId;
        }

        /** RESET: {@code efa_qp_init_indices} zeroes the counters and the pool index, not the pool. */
        void rewind() {
            posted = 0;
            completed = 0;
            poolNext = 0;
        }
    }

    private static final class Qp {
        final int qpn;
        final QueuePairType type;
        final MockVerbsProvider.MockPd pd;
        final Cq sendCq;
        final Cq recvCq;
        final WorkQueue sq;
        final WorkQueue rq;
        final ArrayDeque<Receive> receives = new ArrayDeque<>();
        /** The device's state, what {@code ibv_query_qp} reports. */
        int state = QueuePairState.RESET;
        /**
         * The state libefa caches from the last {@code ibv_modify_qp} ({@code qp->verbs_qp.qp.state}),
         * which its post checks read: a QP the device put in error still reads RTS here.
         */
        int modifiedState = QueuePairState.RESET;
        int qkey;
        int port;
        /** SRD: the {@code rnr_retry} set at RTR to RTS; 7, retry without end, is the device's default. */
        int rnrRetry = RNR_RETRY_FOREVER;
        /**
         * Sends that neither completed nor left, held by a QP in error on a device that flushes only at
         * destroy ({@link MockConfig#flushOnError()} false): their tokens, flushed by {@link #destroyQp}.
         */
        final List<Long> stalledSends = new ArrayList<>();
        boolean destroyed;

        Qp(int qpn, QueuePairType type, MockVerbsProvider.MockPd pd, Cq sendCq, Cq recvCq, int maxSend, int maxRecv,
           boolean efa) {
            this.qpn = qpn;
            this.type = type;
            this.pd = pd;
            this.sendCq = sendCq;
            this.recvCq = recvCq;
            this.sq = new WorkQueue(maxSend, efa);
            this.rq = new WorkQueue(maxRecv, efa);
        }
    }

    /** From now on SRD delivers in an order drawn from {@code seed}; null restores order. */
    synchronized void reorderSrd(Long seed) {
        deliverHeldSrd(inFlightSrd.size());
        reorder = seed == null ? null : new SplittableRandom(seed);
    }

    /**
     * From now on (true) send completions are held back, as by a device under load, until
     * called with false, which releases them in order.
     */
    synchronized void holdSendCompletions(boolean hold) {
        if (hold && heldSendCompletions == null) {
            heldSendCompletions = new ArrayList<>();
        } else if (!hold && heldSendCompletions != null) {
            List<Cqe> held = heldSendCompletions;
            heldSendCompletions = null;
            for (Cqe e : held) {
                complete(e.qp().sendCq, e);
            }
        }
    }

    synchronized long createCq(MockVerbsProvider.MockContext context, int entries, boolean withSourceGid) {
        if (entries < 1 || entries > 65536) {
            throw new VerbsException(withSourceGid ? "efadv_create_cq" : "ibv_create_cq", Errno.EINVAL, "cqe " + entries);
        }
        long h = provider.newHandle();
        cqs.put(h, new Cq(context, entries, withSourceGid));
        context.cqCount().incrementAndGet();
        return h;
    }

    synchronized void destroyCq(long cq) {
        Cq c = cq(cq, "ibv_destroy_cq");
        if (c.users > 0) {
            throw new VerbsException("ibv_destroy_cq", Errno.EBUSY, c.users + " QP(s) still use the CQ");
        }
        cqs.remove(cq);
        c.context.cqCount().decrementAndGet();
        if (c.channel != null) {
            c.channel.cqDestroyed();
            c.channel.cq = null;
        }
    }

    synchronized long createChannel(MockVerbsProvider.MockContext context) {
        long h = provider.newHandle();
        channels.put(h, new MockCompletionChannel(context));
        return h;
    }

    /**
     * A CQ on a channel. The stub takes one CQ per channel ({@code efa_ah_channel_create_cq},
     * {@code efa_ah_efadv_create_cq_on_channel}); EFA's {@code ibv_create_cq} and {@code efadv_create_cq}
     * (with the sender's GID) both reach libefa's {@code create_cq}, which passes the channel to the
     * kernel where the device has CQ notifications and refuses it elsewhere
     * ({@code EFA_DEV_CAP(ctx, CQ_NOTIFICATIONS)}, else EOPNOTSUPP).
     */
    synchronized long createCq(MockVerbsProvider.MockContext context, int entries, boolean withSourceGid,
                               long channel, boolean notifications) {
        String verb = withSourceGid ? "efadv_create_cq" : "ibv_create_cq";
        MockCompletionChannel ch = channel(channel, verb);
        if (ch.cq != null) {
            throw new VerbsException(verb, Errno.EBUSY, "the completion channel already has its CQ");
        }
        if (provider.config().efa() && !notifications) {
            throw new VerbsException(verb, Errno.EOPNOTSUPP, "a completion channel: the EFA device does not "
                    + "report CQ notifications");
        }
        long h = createCq(context, entries, withSourceGid);
        Cq c = cqs.get(h);
        c.channel = ch;
        ch.cq = c;
        return h;
    }

    /** {@code ibv_req_notify_cq(cq, 0)}: one event on the next completion. */
    synchronized void requestNotification(long cq) {
        Cq c = cq(cq, "ibv_req_notify_cq");
        if (c.channel == null) {
            throw new VerbsException("ibv_req_notify_cq", Errno.EINVAL, "the CQ has no completion channel");
        }
        c.armed = true;
    }

    /** The channel to wait on; the wait itself runs on the channel's monitor, not this one. */
    synchronized MockCompletionChannel channel(long handle, String operation) {
        MockCompletionChannel ch = channels.get(handle);
        if (ch == null) {
            throw new VerbsException(operation, Errno.EINVAL, "unknown completion channel");
        }
        return ch;
    }

    /** {@code ibv_destroy_comp_channel}: EBUSY while its CQ exists. */
    synchronized void destroyChannel(long handle) {
        MockCompletionChannel ch = channel(handle, "ibv_destroy_comp_channel");
        if (ch.cq != null) {
            throw new VerbsException("ibv_destroy_comp_channel", Errno.EBUSY, "its CQ still exists");
        }
        channels.remove(handle);
    }

    synchronized long registerMemory(MockVerbsProvider.MockPd pd, ByteBuffer buffer) {
        if (buffer == null || !buffer.isDirect()) {
            throw new VerbsException("ibv_reg_mr", Errno.EINVAL, "a direct buffer is required");
        }
        long h = provider.newHandle();
        mrs.put(h, new Mr(pd, buffer));
        pd.resources.incrementAndGet();
        return h;
    }

    synchronized void deregisterMemory(long mr) {
        Mr m = mrs.remove(mr);
        if (m == null) {
            throw new VerbsException("ibv_dereg_mr", Errno.EINVAL, "unknown MR");
        }
        m.pd().resources.decrementAndGet();
    }

    synchronized QueuePairNumbers createQp(QueuePairType type, MockVerbsProvider.MockPd pd, long sendCq, long recvCq,
                                           int maxSendWr, int maxRecvWr) {
        String verb = type == QueuePairType.SRD ? "efadv_create_qp_ex" : "ibv_create_qp";
        if (type == QueuePairType.SRD && !provider.config().efa()) {
            throw new VerbsException(verb, Errno.EOPNOTSUPP, pd.context.device().name + " is not an EFA device");
        }
        Cq s = cq(sendCq, verb);
        Cq r = cq(recvCq, verb);
        if (maxSendWr < 1 || maxRecvWr < 1 || maxSendWr > 8192 || maxRecvWr > 8192) {
            throw new VerbsException(verb, Errno.EINVAL, "max_send_wr " + maxSendWr + ", max_recv_wr " + maxRecvWr);
        }
        // efa_check_qp_limits (rdma-core 63 and later): the depths efadv_get_max_*_depth report.
        MockConfig c = provider.config();
        if (c.efa() && ((c.efaMaxSqDepth() > 0 && maxSendWr > c.efaMaxSqDepth())
                || (c.efaMaxRqDepth() > 0 && maxRecvWr > c.efaMaxRqDepth()))) {
            throw new VerbsException(verb, Errno.EINVAL, "max_send_wr " + maxSendWr + ", max_recv_wr " + maxRecvWr
                    + " beyond the device's depths " + c.efaMaxSqDepth() + ", " + c.efaMaxRqDepth());
        }
        int qpn = nextQpn++ & 0xFFFFFF;
        Qp qp = new Qp(qpn, type, pd, s, r, maxSendWr, maxRecvWr, provider.config().efa());
        long h = provider.newHandle();
        qps.put(h, qp);
        qpsByNumber.computeIfAbsent(pd.context.device(), d -> new HashMap<>()).put(qpn, qp);
        s.users++;
        r.users++;
        pd.resources.incrementAndGet();
        return new QueuePairNumbers(h, qpn);
    }

    /** RESET to INIT, RTR, RTS; like the kernel, INIT is reachable from RESET only. */
    synchronized void activateUdQp(long qp, int portNum, int pkeyIndex, int qkey) {
        activate(qp(qp, "ibv_modify_qp"), portNum, pkeyIndex, qkey, -1);
    }

    /** An SRD QP to RTS, setting {@code rnr_retry} at RTR to RTS unless it is -1. */
    synchronized void activateSrdQp(long qp, int portNum, int qkey, int rnrRetry) {
        Qp q = qp(qp, "ibv_modify_qp");
        if (q.type != QueuePairType.SRD) {
            throw new VerbsException("ibv_modify_qp", Errno.EINVAL, "not an SRD QP");
        }
        if (rnrRetry != -1 && (rnrRetry < 0 || rnrRetry > RNR_RETRY_FOREVER)) {
            throw new VerbsException("ibv_modify_qp", Errno.EINVAL, "rnr_retry " + rnrRetry + "; valid 0..7");
        }
        // The kernel's efa_modify_qp refuses IB_QP_RNR_RETRY unless the device has the capability.
        if (rnrRetry != -1 && (provider.config().efaDeviceCaps() & EfaDeviceAttributes.CAPS_RNR_RETRY) == 0) {
            throw new VerbsException("ibv_modify_qp", Errno.EOPNOTSUPP,
                    "rnr_retry: the device does not report EFADV_DEVICE_ATTR_CAPS_RNR_RETRY");
        }
        activate(q, portNum, 0, qkey, rnrRetry);
    }

    private void activate(Qp q, int portNum, int pkeyIndex, int qkey, int rnrRetry) {
        if (portNum != 1 || pkeyIndex != 0) {
            // The kernel's efa_modify_qp answers EOPNOTSUPP for a port other than 1 or a pkey_index
            // other than 0 (EFA has one of each); rxe refuses an invalid port with EINVAL.
            Errno errno = provider.config().efa() ? Errno.EOPNOTSUPP : Errno.EINVAL;
            throw new VerbsException("ibv_modify_qp", errno, "port " + portNum + ", pkey_index " + pkeyIndex);
        }
        if (q.state != QueuePairState.RESET) {
            throw new VerbsException("ibv_modify_qp", Errno.EINVAL,
                    "INIT from " + QueuePairState.name(q.state) + "; only RESET may go to INIT");
        }
        q.port = portNum;
        q.qkey = qkey;
        q.rnrRetry = rnrRetry == -1 ? RNR_RETRY_FOREVER : rnrRetry;
        q.state = QueuePairState.RTS;
        q.modifiedState = QueuePairState.RTS;
    }

    synchronized int queryQpState(long qp) {
        return qp(qp, "ibv_query_qp").state;
    }

    /**
     * To ERR by the user ({@code ibv_modify_qp} to {@code IBV_QPS_ERR}): what is posted is flushed,
     * and libefa, which caches the state it set, refuses later posts with EINVAL
     * ({@code efa_post_send_validate}, {@code efa_post_recv_validate}).
     */
    synchronized void moveQpToError(long qp) {
        Qp q = qp(qp, "ibv_modify_qp");
        enterError(q);
        q.modifiedState = QueuePairState.ERR;
    }

    /**
     * To RESET: the device drops what is posted without completions; completions already in the CQs
     * stay there. On EFA {@code efa_modify_qp} then rewinds the slots ({@code efa_qp_init_indices}).
     */
    synchronized void resetQp(long qp) {
        Qp q = qp(qp, "ibv_modify_qp");
        q.receives.clear();
        q.stalledSends.clear();
        inFlightSrd.removeIf(p -> p.from() == q);
        retryingSrd.removeIf(p -> p.from() == q);
        if (heldSendCompletions != null) {
            heldSendCompletions.removeIf(e -> e.qp() == q);
        }
        q.sq.rewind();
        q.rq.rewind();
        q.state = QueuePairState.RESET;
        q.modifiedState = QueuePairState.RESET;
    }

    synchronized void destroyQp(long qp) {
        Qp q = qps.remove(qp);
        if (q == null) {
            throw new VerbsException("ibv_destroy_qp", Errno.EINVAL, "unknown QP");
        }
        q.destroyed = true;
        qpsByNumber.get(q.pd.context.device()).remove(q.qpn);
        if (!provider.config().flushOnError()) {
            // "The EFA device will clear all active WQEs on ibv_destroy_qp() and return error
            // completions" (libfabric PR #10968), FLUSHED being "flushed during QP destroy"
            // (efa_io_defs.h). They name a QP efa_destroy_qp has taken out of the context's table:
            // polled, efa_poll_sub_cq fails each with EINVAL ("Invalid QP"), see pollCq.
            for (Receive r; (r = q.receives.poll()) != null; ) {
                complete(q.recvCq, new Cqe(r.token(), WorkCompletion.WR_FLUSH_ERR, WorkCompletion.OPCODE_RECV, 0, q,
                        false, 0, 0, 0, EfaCompletionStatus.FLUSHED.code(), null));
            }
            inFlightSrd.removeIf(p -> p.from() == q && q.stalledSends.add(p.token()));
            retryingSrd.removeIf(p -> p.from() == q && q.stalledSends.add(p.token()));
            for (long token : q.stalledSends) {
                complete(q.sendCq, new Cqe(token, WorkCompletion.WR_FLUSH_ERR, WorkCompletion.OPCODE_SEND, 0, q, true,
                        0, 0, 0, EfaCompletionStatus.FLUSHED.code(), null));
            }
            q.stalledSends.clear();
        }
        inFlightSrd.removeIf(p -> p.from() == q);
        retryingSrd.removeIf(p -> p.from() == q);
        if (heldSendCompletions != null) {
            heldSendCompletions.removeIf(e -> e.qp() == q);
        }
        q.sendCq.users--;
        q.recvCq.users--;
        q.pd.resources.decrementAndGet();
    }

    synchronized void postReceive(long qp, long mr, int offset, int length, long wrId) {
        Qp q = qp(qp, "ibv_post_recv");
        Mr m = mr(mr, offset, length, "ibv_post_recv");
        // efa_post_recv_validate reads the state libefa cached at its last modify.
        int state = provider.config().efa() ? q.modifiedState : q.state;
        if (state == QueuePairState.RESET || (provider.config().efa() && state == QueuePairState.ERR)) {
            throw new VerbsException("ibv_post_recv", Errno.EINVAL, "QP is in " + QueuePairState.name(state));
        }
        if (q.rq.full()) {
            throw new VerbsException("ibv_post_recv", Errno.ENOMEM, "receive queue full: " + q.rq.outstanding()
                    + " of max_recv_wr " + q.rq.pool.length + " outstanding");
        }
        long token = q.rq.post(wrId);
        if (q.state == QueuePairState.ERR && provider.config().flushOnError()) {
            complete(q.recvCq, new Cqe(token, WorkCompletion.WR_FLUSH_ERR, WorkCompletion.OPCODE_RECV, 0, q, false, 0,
                    0, 0, EfaCompletionStatus.FLUSHED.code(), null));
            return;
        }
        q.receives.add(new Receive(m, offset, length, token));
        retrySrdTo(q);
    }

    synchronized void postSend(long qp, MockVerbsProvider.MockAh ah, int remoteQpn, int remoteQkey, long mr,
                               int offset, int length, long wrId) {
        Qp q = qp(qp, "ibv_post_send");
        Mr m = mr(mr, offset, length, "ibv_post_send");
        boolean efa = provider.config().efa();
        // efa_post_send_validate reads the cached state: a QP the device put in error reads RTS and
        // accepts the post (it is flushed), one the user moved to ERR refuses it.
        int state = efa ? q.modifiedState : q.state;
        if (state != QueuePairState.RTS && !(state == QueuePairState.ERR && !efa)) {
            throw new VerbsException("ibv_post_send", Errno.EINVAL, "QP is in " + QueuePairState.name(state));
        }
        // libefa copies the AHN into the descriptor unchecked (efa_post_send); the device fails a
        // foreign PD's AH in the completion. rxe checks the AH's PD at post.
        boolean foreignAh = ah.pd() != q.pd;
        if (foreignAh && !efa) {
            throw new VerbsException("ibv_post_send", Errno.EINVAL, "the AH belongs to another PD than the QP");
        }
        if (q.sq.full()) {
            throw new VerbsException("ibv_post_send", Errno.ENOMEM,
                    "send queue full: " + q.sq.outstanding() + " of max_send_wr " + q.sq.pool.length + " outstanding");
        }
        long token = q.sq.post(wrId);
        if (q.state == QueuePairState.ERR) {
            if (provider.config().flushOnError()) {
                completeSend(q, token, WorkCompletion.WR_FLUSH_ERR, EfaCompletionStatus.FLUSHED.code());
            } else {
                q.stalledSends.add(token);
            }
            return;
        }
        if (foreignAh) {
            completeSend(q, token, EfaCompletionStatus.LOCAL_ERROR_INVALID_AH.ibvStatus(),
                    EfaCompletionStatus.LOCAL_ERROR_INVALID_AH.code());
            return;
        }
        if (length > maxMessageSize(q)) {
            completeSend(q, token, WorkCompletion.LOC_LEN_ERR, EfaCompletionStatus.LOCAL_ERROR_BAD_LENGTH.code());
            return;
        }
        byte[] payload = new byte[length];
        m.buffer().get(offset, payload);
        if (q.type == QueuePairType.UD) {
            completeSend(q, token, WorkCompletion.SUCCESS, 0);
            deliverUd(q, ah, remoteQpn, remoteQkey, payload);
            return;
        }
        inFlightSrd.add(new SrdSend(q, ah, remoteQpn, remoteQkey, payload, token));
        deliverHeldSrd(reorder == null ? inFlightSrd.size() : inFlightSrd.size() - REORDER_WINDOW);
    }

    /** The port's {@code max_msg_sz}: on EFA the device's MTU ({@code efa_query_port}), else the path MTU. */
    private int maxMessageSize(Qp q) {
        return provider.config().efa() ? MockAttributes.EFA_MAX_MESSAGE_SIZE : MTU;
    }

    /** Delivers {@code count} held SRD sends: the oldest when in order, else drawn at random. */
    private void deliverHeldSrd(int count) {
        for (int i = 0; i < count && !inFlightSrd.isEmpty(); i++) {
            SrdSend s = inFlightSrd.remove(reorder == null ? 0 : reorder.nextInt(inFlightSrd.size()));
            deliverSrd(s);
        }
    }

    /** A receive was posted on {@code to}: SRD sends retrying for it are tried again, oldest first. */
    private void retrySrdTo(Qp to) {
        if (retryingSrd.isEmpty()) {
            return;
        }
        List<SrdSend> waiting = new ArrayList<>(retryingSrd);
        retryingSrd.clear();
        for (SrdSend s : waiting) {
            deliverSrd(s);
        }
    }

    private void deliverSrd(SrdSend s) {
        Qp to = destination(s.ah().attributes(), s.remoteQpn());
        if (to == null || to.state != QueuePairState.RTS || to.type != QueuePairType.SRD || to.qkey != s.remoteQkey()) {
            completeSend(s.from(), s.token(), EfaCompletionStatus.REMOTE_ERROR_BAD_DEST_QPN.ibvStatus(),
                    EfaCompletionStatus.REMOTE_ERROR_BAD_DEST_QPN.code());
            return;
        }
        if (to.receives.isEmpty()) {
            // Receiver not ready: the device retries rnr_retry times; 7 (its SRD default, which
            // libfabric names EFA_RNR_INFINITE_RETRY) retries until a receive is posted, so the send
            // stays in flight; otherwise, out of retries, it completes with an RNR error.
            if (s.from().rnrRetry == RNR_RETRY_FOREVER) {
                retryingSrd.add(s);
            } else {
                completeSend(s.from(), s.token(), EfaCompletionStatus.REMOTE_ERROR_RNR.ibvStatus(),
                        EfaCompletionStatus.REMOTE_ERROR_RNR.code());
            }
            return;
        }
        if (land(s.from(), s.ah(), to, s.payload())) {
            completeSend(s.from(), s.token(), WorkCompletion.SUCCESS, 0);
        } else {
            completeSend(s.from(), s.token(), EfaCompletionStatus.REMOTE_ERROR_BAD_LENGTH.ibvStatus(),
                    EfaCompletionStatus.REMOTE_ERROR_BAD_LENGTH.code());
        }
    }

    private void deliverUd(Qp from, MockVerbsProvider.MockAh ah, int remoteQpn, int remoteQkey, byte[] payload) {
        Qp to = destination(ah.attributes(), remoteQpn);
        if (to == null || to.type != QueuePairType.UD || to.state != QueuePairState.RTS || to.qkey != remoteQkey
                || to.receives.isEmpty()) {
            return; // UD: dropped without a trace, as on the wire
        }
        land(from, ah, to, payload);
    }

    private Qp destination(AddressHandleAttributes ah, int remoteQpn) {
        Gid dgid = ah.dgid();
        MockVerbsProvider.MockDevice target = dgid == null ? null : provider.deviceWithGid(dgid);
        return target == null ? null : qpsByNumber.getOrDefault(target, Map.of()).get(remoteQpn);
    }

    /**
     * Puts {@code payload} into {@code to}'s next receive and completes it; returns false when the
     * receive was too small, which, as on rxe, puts {@code to} in the error state.
     */
    private boolean land(Qp from, MockVerbsProvider.MockAh ah, Qp to, byte[] payload) {
        Receive r = to.receives.poll();
        // An SRD receive has no 40-byte area (rdma-core tests/utils.py reads UD at the GRH size, SRD at 0).
        int prefix = to.type == QueuePairType.SRD ? 0 : GRH_LENGTH;
        if (r.length() < prefix + payload.length) {
            complete(to.recvCq, new Cqe(r.token(), WorkCompletion.LOC_QP_OP_ERR, WorkCompletion.OPCODE_RECV, 0, to,
                    false, from.qpn, 0, 0, EfaCompletionStatus.LOCAL_ERROR_BAD_LENGTH.code(), null));
            enterError(to);
            return false;
        }
        AddressHandleAttributes attributes = ah.attributes();
        Gid sgid = from.pd.context.device().gids[attributes.isGlobal() ? attributes.sgidIndex() : 0];
        ByteBuffer dst = r.mr().buffer().duplicate();
        dst.position(r.offset());
        int flags;
        int slid;
        Gid completionGid = null;
        if (provider.config().efa()) {
            if (prefix > 0) {
                // UD: not a GRH, bytes no parser can take for one (no IPv6 nor IPv4 version nibble).
                byte[] junk = new byte[GRH_LENGTH];
                for (int i = 0; i < junk.length; i++) {
                    junk[i] = (byte) garbage.nextInt(256);
                }
                junk[0] = (byte) (junk[0] & 0x0F | 0x90);
                junk[Grh.IPV4_HEADER_OFFSET] = (byte) (junk[Grh.IPV4_HEADER_OFFSET] & 0x0F | 0xA0);
                dst.put(junk);
            }
            // efa_process_cqe: wc_flags 0 (no IBV_WC_GRH), slid = the descriptor's AHN field.
            flags = 0;
            int ahn = provider.receiverAhn(to.pd, sgid);
            slid = ahn < 0 ? WorkCompletion.EFA_UNKNOWN_AHN : ahn;
            completionGid = ahn < 0 ? sgid : null;
        } else {
            Gid dgid = attributes.dgid();
            if (sgid.isIpv4Mapped() && dgid.isIpv4Mapped()) {
                writeIpv4Grh(dst, attributes, sgid, dgid, payload.length);
            } else {
                // IPv6 header: version 6, traffic class, flow label, payload length, next header, hop limit.
                dst.putInt((6 << 28) | (attributes.trafficClass() << 20) | attributes.flowLabel());
                dst.putShort((short) payload.length);
                dst.put((byte) 0x11);
                dst.put((byte) attributes.hopLimit());
                dst.put(sgid.toBytes());
                dst.put(dgid.toBytes());
            }
            flags = WorkCompletion.FLAG_GRH;
            slid = 0;
        }
        dst.put(payload);
        complete(to.recvCq, new Cqe(r.token(), WorkCompletion.SUCCESS, WorkCompletion.OPCODE_RECV,
                prefix + payload.length, to, false, from.qpn, flags, slid, 0, completionGid));
        return true;
    }

    /**
     * The QP stops: what is still posted is flushed, and so is whatever is posted later; or, where
     * the device flushes only at destroy ({@link MockConfig#flushOnError()} false), nothing completes
     * and what is posted stays with the QP until {@link #destroyQp}.
     */
    private void enterError(Qp q) {
        q.state = QueuePairState.ERR;
        if (!provider.config().flushOnError()) {
            // Nothing more leaves the QP: its SRD sends wait, unsent, for the destroy.
            inFlightSrd.removeIf(p -> p.from() == q && q.stalledSends.add(p.token()));
            retryingSrd.removeIf(p -> p.from() == q && q.stalledSends.add(p.token()));
            return;
        }
        for (Receive r; (r = q.receives.poll()) != null; ) {
            complete(q.recvCq, new Cqe(r.token(), WorkCompletion.WR_FLUSH_ERR, WorkCompletion.OPCODE_RECV, 0, q, false,
                    0, 0, 0, EfaCompletionStatus.FLUSHED.code(), null));
        }
        List<SrdSend> held = new ArrayList<>();
        inFlightSrd.removeIf(p -> p.from() == q && held.add(p));
        retryingSrd.removeIf(p -> p.from() == q && held.add(p));
        for (SrdSend p : held) {
            completeSend(q, p.token(), WorkCompletion.WR_FLUSH_ERR, EfaCompletionStatus.FLUSHED.code());
        }
    }

    /**
     * RoCE v2 between IPv4-mapped GIDs travels over IPv4, and a RoCE NIC then fills the 40-byte
     * GRH area with 20 undefined bytes (zeros here, as rxe writes) and the 20-byte IPv4 header.
     * UDP, BTH and DETH are not modelled: the total length counts the payload only.
     */
    private static void writeIpv4Grh(ByteBuffer dst, AddressHandleAttributes ah, Gid sgid, Gid dgid, int length) {
        byte[] area = new byte[GRH_LENGTH];
        ByteBuffer h = ByteBuffer.wrap(area, Grh.IPV4_HEADER_OFFSET, IPV4_HEADER_LENGTH);
        h.put((byte) 0x45).put((byte) ah.trafficClass()).putShort((short) (IPV4_HEADER_LENGTH + length));
        h.putShort((short) 0).putShort((short) 0x4000); // identification; don't fragment
        h.put((byte) ah.hopLimit()).put((byte) 17).putShort((short) 0); // TTL, UDP, checksum below
        h.put(sgid.toBytes(), 12, 4).put(dgid.toBytes(), 12, 4);
        int checksum = Grh.ipv4Checksum(area, Grh.IPV4_HEADER_OFFSET);
        area[Grh.IPV4_HEADER_OFFSET + 10] = (byte) (checksum >>> 8);
        area[Grh.IPV4_HEADER_OFFSET + 11] = (byte) checksum;
        dst.put(area);
    }

    private void completeSend(Qp q, long token, int status, int vendorError) {
        Cqe e = new Cqe(token, status, WorkCompletion.OPCODE_SEND, 0, q, true, 0, 0, 0, vendorError, null);
        if (heldSendCompletions != null) {
            heldSendCompletions.add(e);
        } else {
            complete(q.sendCq, e);
        }
    }

    /**
     * A completion reaches its CQ. One more than the CQ holds overruns it: hardware then fails the
     * CQ (mlx5 and rxe raise {@code IBV_EVENT_CQ_ERR}); the mock fails every later poll, and on
     * RoCE-model devices raises the event too. The EFA driver has no async events, so there the
     * failed poll is all a user sees.
     */
    private void complete(Cq cq, Cqe e) {
        if (cq.overrun) {
            return;
        }
        if (cq.queue.size() >= cq.capacity) {
            cq.overrun = true;
            if (!provider.config().efa()) {
                provider.raiseEvent(cq.context.device().name, org.efaah.verbs.DeviceEvent.Kind.CQ_ERR, 0);
            }
            return;
        }
        cq.queue.add(e);
        if (cq.armed) {
            cq.armed = false;
            cq.channel.post();
        }
    }

    synchronized int pollCq(long cq, WorkCompletion[] into, boolean readSourceGid) {
        String verb = readSourceGid ? "ibv_start_poll" : "ibv_poll_cq";
        Cq c = cq(cq, verb);
        if (readSourceGid && !c.withSourceGid) {
            throw new VerbsException("efadv_cq_from_ibv_cq_ex", Errno.EINVAL, "the CQ was not made by efadv_create_cq");
        }
        if (c.overrun) {
            throw new VerbsException(verb, Errno.EIO, "CQ overrun: more completions arrived than its "
                    + c.capacity + " entries; the CQ is in error");
        }
        // SRD sends still held are delivered once someone polls: nothing waits forever for them.
        deliverHeldSrd(inFlightSrd.size());
        // The providers' rule (NativeVerbsProvider.pollCq): a null holder to be filled loses no
        // completion. Checked before any is taken (one a QP's destroy skips may leave a holder unused).
        for (int i = 0, ready = Math.min(into.length, c.queue.size()); i < ready; i++) {
            if (into[i] == null) {
                throw new NullPointerException("into[" + i + "]");
            }
        }
        int n = 0;
        while (n < into.length && !c.queue.isEmpty()) {
            Cqe e = c.queue.poll();
            if (e.qp().destroyed) {
                // efa_poll_sub_cq: a completion of a QP no longer in the context's table is "Invalid QP".
                if (n == 0 && provider.config().efa()) {
                    throw new VerbsException(verb, Errno.EINVAL, "completion of destroyed QP 0x"
                            + Integer.toHexString(e.qp().qpn));
                }
                continue;
            }
            WorkQueue wq = e.send() ? e.qp().sq : e.qp().rq;
            WorkCompletion wc = into[n++];
            wc.wrId = wq.complete(e.token());
            wc.status = e.status();
            wc.opcode = e.opcode();
            wc.qpNum = e.qp().qpn;
            wc.vendorError = provider.config().efa() ? e.vendorError() : 0;
            wc.pkeyIndex = 0;
            wc.sl = 0;
            wc.dlidPathBits = 0;
            if (e.send()) {
                // efa_process_cqe fills only status, opcode, wr_id and qp_num for a send.
                wc.byteLength = 0;
                wc.srcQp = 0;
                wc.wcFlags = 0;
                wc.slid = 0;
            } else {
                wc.byteLength = e.byteLength();
                wc.srcQp = e.srcQp();
                wc.wcFlags = e.flags();
                wc.slid = e.slid();
            }
            // efadv_wc_read_sgid answers only for an unknown sender, and only through the extended CQ.
            wc.hasSourceGid = readSourceGid && e.sourceGid() != null;
            if (wc.hasSourceGid) {
                System.arraycopy(e.sourceGid().toBytes(), 0, wc.sourceGid, 0, Gid.LENGTH);
            }
        }
        return n;
    }

    /**
     * What libibverbs' {@code ibv_init_ah_from_wc} builds: without {@code IBV_WC_GRH} (always on
     * EFA) a non-global attribute set with {@code dlid = slid}; with it, a global one whose
     * layout is told apart by {@link Grh#version}, the decision libibverbs makes.
     */
    synchronized AddressHandleAttributes initAhFromWc(MockVerbsProvider.MockDevice device, int portNum,
                                                      WorkCompletion wc, long mr, int grhOffset) {
        Mr m = mr(mr, grhOffset, GRH_LENGTH, "ibv_init_ah_from_wc");
        if (portNum != 1) {
            throw new VerbsException("ibv_init_ah_from_wc", Errno.EINVAL, "port " + portNum);
        }
        AddressHandleAttributes.Builder b = AddressHandleAttributes.builder().portNum(portNum)
                .dlid(wc.slid).sl(wc.sl).srcPathBits(wc.dlidPathBits);
        if ((wc.wcFlags & WorkCompletion.FLAG_GRH) == 0) {
            return b.isGlobal(false).build();
        }
        byte[] area = new byte[GRH_LENGTH];
        m.buffer().get(grhOffset, area);
        Grh.Version version = Grh.version(area);
        if (version == Grh.Version.UNKNOWN) {
            throw new VerbsException("ibv_init_ah_from_wc", Errno.EPROTONOSUPPORT,
                    "neither an IPv6 GRH nor an IPv4 header in the 40 bytes");
        }
        int trafficClass;
        int flowLabel;
        if (version == Grh.Version.IPV4) {
            trafficClass = area[Grh.IPV4_HEADER_OFFSET + 1] & 0xFF;
            flowLabel = 0;
        } else {
            int first = ByteBuffer.wrap(area).getInt();
            trafficClass = (first >>> 20) & 0xFF;
            flowLabel = first & 0xFFFFF;
        }
        Gid local = Grh.destinationGid(area);
        int index = -1;
        for (int i = 0; i < device.gids.length; i++) {
            if (device.gids[i].equals(local)) {
                index = i;
                break;
            }
        }
        if (index < 0) {
            throw new VerbsException("ibv_init_ah_from_wc", Errno.EINVAL, "GRH dgid " + local + " is not a local GID");
        }
        return b.dgid(Grh.sourceGid(area)).sgidIndex(index).hopLimit(0xFF).trafficClass(trafficClass)
                .flowLabel(flowLabel).build();
    }

    private Cq cq(long handle, String operation) {
        Cq c = cqs.get(handle);
        if (c == null) {
            throw new VerbsException(operation, Errno.EINVAL, "unknown CQ");
        }
        return c;
    }

    private Qp qp(long handle, String operation) {
        Qp q = qps.get(handle);
        if (q == null) {
            throw new VerbsException(operation, Errno.EINVAL, "unknown QP");
        }
        return q;
    }

    private Mr mr(long handle, int offset, int length, String operation) {
        Mr m = mrs.get(handle);
        if (m == null) {
            throw new VerbsException(operation, Errno.EINVAL, "unknown MR");
        }
        if (offset < 0 || length < 0 || (long) offset + length > m.buffer().capacity()) {
            throw new VerbsException(operation, Errno.EINVAL, "range " + offset + "+" + length + " outside the MR");
        }
        return m;
    }

    /**
     * Forgets every CQ, memory region and QP of {@code context}: {@code ibv_close_device} frees
     * them, so any later call naming one fails as for an unknown handle (EINVAL).
     */
    synchronized void closeContext(MockVerbsProvider.MockContext context) {
        qps.values().removeIf(q -> {
            if (q.pd.context != context) {
                return false;
            }
            qpsByNumber.get(context.device()).remove(q.qpn);
            return true;
        });
        mrs.values().removeIf(m -> m.pd().context == context);
        cqs.values().removeIf(c -> c.context == context);
        channels.values().removeIf(ch -> {
            if (ch.context != context) {
                return false;
            }
            ch.stop();
            return true;
        });
    }
}
