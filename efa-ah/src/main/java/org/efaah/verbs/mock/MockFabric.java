package org.efaah.verbs.mock;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.EfaCompletionStatus;
import org.efaah.verbs.Errno;
import org.efaah.verbs.Gid;
import org.efaah.verbs.Grh;
import org.efaah.verbs.QueuePairState;
import org.efaah.verbs.QueuePairType;
import org.efaah.verbs.QueuePairNumbers;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.WorkCompletion;

/**
 * The mock's datagram path: UD and SRD QPs on the mock devices of one {@link MockVerbsProvider}
 * exchange datagrams in memory, with the semantics of the real stack, failures included:
 * <ul>
 * <li>UD: a send completes locally whether or not it is delivered; a datagram is dropped when the
 * destination GID, QPN or Q_Key does not match or no receive is posted.</li>
 * <li>A receive too small for the datagram completes with {@code IBV_WC_LOC_QP_OP_ERR} and puts
 * the QP in the error state, as rxe does: the receives still posted complete with
 * {@code IBV_WC_WR_FLUSH_ERR}, later posts are flushed at once, nothing more is delivered,
 * until the QP goes through RESET, INIT, RTR and RTS again.</li>
 * <li>A send beyond {@code max_send_wr} outstanding (posted, completion not yet polled) fails
 * with ENOMEM, as EFA answers a full send queue.</li>
 * <li>RoCE-model devices ({@code efa=false}): a delivered datagram lands behind a 40-byte GRH
 * (IPv6 header layout) carrying the source and destination GIDs, or between IPv4-mapped GIDs
 * behind the RoCE v2 IPv4 layout (20 undefined bytes, then the IPv4 header); {@code IBV_WC_GRH}
 * is set.</li>
 * <li>EFA devices: no {@code IBV_WC_GRH}; the 40 bytes are garbage; {@code slid} is the AHN of
 * the receiving PD's AH for the sender's GID, or 0xFFFF when it has none; the sender's GID is
 * given only by a CQ made with the source GID, and only for 0xFFFF; {@code ibv_init_ah_from_wc}
 * yields the non-global attributes libibverbs builds without a GRH.</li>
 * <li>SRD (EFA only): every datagram is delivered exactly once, out of order when
 * {@link MockVerbsProvider#reorderSrd} is on; the send completes when delivered, and with
 * {@code IBV_WC_RNR_RETRY_EXC_ERR} (vendor error {@code EFA_IO_COMP_STATUS_REMOTE_ERROR_RNR})
 * when no receive is posted, or {@code REMOTE_ERROR_BAD_DEST_QPN} when the QP is missing, in
 * error, or the Q_Key does not match.</li>
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

    private final MockVerbsProvider provider;
    private final Map<Long, Cq> cqs = new HashMap<>();
    private final Map<Long, Mr> mrs = new HashMap<>();
    private final Map<Long, Qp> qps = new HashMap<>();
    private final Map<MockVerbsProvider.MockDevice, Map<Integer, Qp>> qpsByNumber = new HashMap<>();
    private final SplittableRandom garbage = new SplittableRandom(0x40);
    private final List<SrdSend> inFlightSrd = new ArrayList<>();
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

        Cq(MockVerbsProvider.MockContext context, int capacity, boolean withSourceGid) {
            this.context = context;
            this.capacity = capacity;
            this.withSourceGid = withSourceGid;
        }
    }

    /** One completion; {@code sender} is set for sends, whose queue slot frees when it is polled. */
    private record Cqe(long wrId, int status, int opcode, int byteLength, int qpn, int srcQp, int flags, int slid,
                       int vendorError, Gid sourceGid, Qp sender) {
    }

    private record Mr(MockVerbsProvider.MockPd pd, ByteBuffer buffer) {
    }

    private record Receive(Mr mr, int offset, int length, long wrId) {
    }

    private record SrdSend(Qp from, MockVerbsProvider.MockAh ah, int remoteQpn, int remoteQkey, byte[] payload,
                           long wrId) {
    }

    private static final class Qp {
        final int qpn;
        final QueuePairType type;
        final MockVerbsProvider.MockPd pd;
        final Cq sendCq;
        final Cq recvCq;
        final int maxSend;
        final int maxRecv;
        final ArrayDeque<Receive> receives = new ArrayDeque<>();
        int state = QueuePairState.RESET;
        int sendsOutstanding;
        int qkey;
        int port;

        Qp(int qpn, QueuePairType type, MockVerbsProvider.MockPd pd, Cq sendCq, Cq recvCq, int maxSend, int maxRecv) {
            this.qpn = qpn;
            this.type = type;
            this.pd = pd;
            this.sendCq = sendCq;
            this.recvCq = recvCq;
            this.maxSend = maxSend;
            this.maxRecv = maxRecv;
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
                complete(e.sender().sendCq, e);
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
        int qpn = nextQpn++ & 0xFFFFFF;
        Qp qp = new Qp(qpn, type, pd, s, r, maxSendWr, maxRecvWr);
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
        Qp q = qp(qp, "ibv_modify_qp");
        if (portNum != 1 || pkeyIndex != 0) {
            throw new VerbsException("ibv_modify_qp", Errno.EINVAL, "port " + portNum + ", pkey_index " + pkeyIndex);
        }
        if (q.state != QueuePairState.RESET) {
            throw new VerbsException("ibv_modify_qp", Errno.EINVAL,
                    "INIT from " + QueuePairState.name(q.state) + "; only RESET may go to INIT");
        }
        q.port = portNum;
        q.qkey = qkey;
        q.state = QueuePairState.RTS;
    }

    synchronized int queryQpState(long qp) {
        return qp(qp, "ibv_query_qp").state;
    }

    /** To RESET: posted receives are dropped without completions. */
    synchronized void resetQp(long qp) {
        Qp q = qp(qp, "ibv_modify_qp");
        q.receives.clear();
        inFlightSrd.removeIf(p -> p.from() == q);
        q.sendsOutstanding = 0;
        q.state = QueuePairState.RESET;
    }

    synchronized void destroyQp(long qp) {
        Qp q = qps.remove(qp);
        if (q == null) {
            throw new VerbsException("ibv_destroy_qp", Errno.EINVAL, "unknown QP");
        }
        qpsByNumber.get(q.pd.context.device()).remove(q.qpn);
        inFlightSrd.removeIf(p -> p.from() == q);
        if (heldSendCompletions != null) {
            heldSendCompletions.removeIf(e -> e.sender() == q);
        }
        q.sendCq.users--;
        q.recvCq.users--;
        q.pd.resources.decrementAndGet();
    }

    synchronized void postReceive(long qp, long mr, int offset, int length, long wrId) {
        Qp q = qp(qp, "ibv_post_recv");
        Mr m = mr(mr, offset, length, "ibv_post_recv");
        if (q.state == QueuePairState.RESET) {
            throw new VerbsException("ibv_post_recv", Errno.EINVAL, "QP is in RESET");
        }
        if (q.state == QueuePairState.ERR) {
            complete(q.recvCq, new Cqe(wrId, WorkCompletion.WR_FLUSH_ERR, WorkCompletion.OPCODE_RECV, 0, q.qpn, 0, 0,
                    0, 0, null, null));
            return;
        }
        if (q.receives.size() >= q.maxRecv) {
            throw new VerbsException("ibv_post_recv", Errno.ENOMEM, "receive queue full");
        }
        q.receives.add(new Receive(m, offset, length, wrId));
    }

    synchronized void postSend(long qp, MockVerbsProvider.MockAh ah, int remoteQpn, int remoteQkey, long mr,
                               int offset, int length, long wrId) {
        Qp q = qp(qp, "ibv_post_send");
        Mr m = mr(mr, offset, length, "ibv_post_send");
        if (q.state != QueuePairState.RTS && q.state != QueuePairState.ERR) {
            throw new VerbsException("ibv_post_send", Errno.EINVAL, "QP is in " + QueuePairState.name(q.state));
        }
        if (ah.pd() != q.pd) {
            throw new VerbsException("ibv_post_send", Errno.EINVAL, "the AH belongs to another PD than the QP");
        }
        if (q.sendsOutstanding >= q.maxSend) {
            throw new VerbsException("ibv_post_send", Errno.ENOMEM,
                    "send queue full: " + q.sendsOutstanding + " of max_send_wr " + q.maxSend + " outstanding");
        }
        q.sendsOutstanding++;
        if (q.state == QueuePairState.ERR) {
            completeSend(q, wrId, WorkCompletion.WR_FLUSH_ERR, 0);
            return;
        }
        if (length > MTU) {
            completeSend(q, wrId, WorkCompletion.LOC_LEN_ERR, 0);
            return;
        }
        byte[] payload = new byte[length];
        m.buffer().get(offset, payload);
        if (q.type == QueuePairType.UD) {
            completeSend(q, wrId, WorkCompletion.SUCCESS, 0);
            deliverUd(q, ah, remoteQpn, remoteQkey, payload);
            return;
        }
        inFlightSrd.add(new SrdSend(q, ah, remoteQpn, remoteQkey, payload, wrId));
        deliverHeldSrd(reorder == null ? inFlightSrd.size() : inFlightSrd.size() - REORDER_WINDOW);
    }

    /** Delivers {@code count} held SRD sends: the oldest when in order, else drawn at random. */
    private void deliverHeldSrd(int count) {
        for (int i = 0; i < count && !inFlightSrd.isEmpty(); i++) {
            SrdSend s = inFlightSrd.remove(reorder == null ? 0 : reorder.nextInt(inFlightSrd.size()));
            deliverSrd(s);
        }
    }

    private void deliverSrd(SrdSend s) {
        Qp to = destination(s.ah().attributes(), s.remoteQpn());
        if (to == null || to.state != QueuePairState.RTS || to.type != QueuePairType.SRD || to.qkey != s.remoteQkey()) {
            completeSend(s.from(), s.wrId(), EfaCompletionStatus.REMOTE_ERROR_BAD_DEST_QPN.ibvStatus(),
                    EfaCompletionStatus.REMOTE_ERROR_BAD_DEST_QPN.code());
            return;
        }
        if (to.receives.isEmpty()) {
            // EFA retries, then gives up: an error completion, never a silent drop.
            completeSend(s.from(), s.wrId(), EfaCompletionStatus.REMOTE_ERROR_RNR.ibvStatus(),
                    EfaCompletionStatus.REMOTE_ERROR_RNR.code());
            return;
        }
        if (land(s.from(), s.ah(), to, s.payload())) {
            completeSend(s.from(), s.wrId(), WorkCompletion.SUCCESS, 0);
        } else {
            completeSend(s.from(), s.wrId(), EfaCompletionStatus.REMOTE_ERROR_BAD_LENGTH.ibvStatus(),
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
        if (r.length() < GRH_LENGTH + payload.length) {
            complete(to.recvCq, new Cqe(r.wrId(), WorkCompletion.LOC_QP_OP_ERR, WorkCompletion.OPCODE_RECV, 0, to.qpn,
                    from.qpn, 0, 0, 0, null, null));
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
            // Not a GRH: bytes no parser can take for one (no IPv6 nor IPv4 version nibble).
            byte[] junk = new byte[GRH_LENGTH];
            for (int i = 0; i < junk.length; i++) {
                junk[i] = (byte) garbage.nextInt(256);
            }
            junk[0] = (byte) (junk[0] & 0x0F | 0x90);
            junk[Grh.IPV4_HEADER_OFFSET] = (byte) (junk[Grh.IPV4_HEADER_OFFSET] & 0x0F | 0xA0);
            dst.put(junk);
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
        complete(to.recvCq, new Cqe(r.wrId(), WorkCompletion.SUCCESS, WorkCompletion.OPCODE_RECV,
                GRH_LENGTH + payload.length, to.qpn, from.qpn, flags, slid, 0, completionGid, null));
        return true;
    }

    /** The QP stops: what is still posted is flushed, and so is whatever is posted later. */
    private void enterError(Qp q) {
        q.state = QueuePairState.ERR;
        for (Receive r; (r = q.receives.poll()) != null; ) {
            complete(q.recvCq, new Cqe(r.wrId(), WorkCompletion.WR_FLUSH_ERR, WorkCompletion.OPCODE_RECV, 0, q.qpn, 0, 0,
                    0, 0, null, null));
        }
        List<SrdSend> held = new ArrayList<>();
        inFlightSrd.removeIf(p -> p.from() == q && held.add(p));
        for (SrdSend p : held) {
            completeSend(q, p.wrId(), WorkCompletion.WR_FLUSH_ERR, EfaCompletionStatus.FLUSHED.code());
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

    private void completeSend(Qp q, long wrId, int status, int vendorError) {
        Cqe e = new Cqe(wrId, status, WorkCompletion.OPCODE_SEND, 0, q.qpn, 0, 0, 0, vendorError, null, q);
        if (heldSendCompletions != null) {
            heldSendCompletions.add(e);
        } else {
            complete(q.sendCq, e);
        }
    }

    private static void complete(Cq cq, Cqe e) {
        if (cq.queue.size() < cq.capacity) {
            cq.queue.add(e);
        }
    }

    synchronized int pollCq(long cq, WorkCompletion[] into, boolean readSourceGid) {
        Cq c = cq(cq, readSourceGid ? "ibv_start_poll" : "ibv_poll_cq");
        if (readSourceGid && !c.withSourceGid) {
            throw new VerbsException("efadv_cq_from_ibv_cq_ex", Errno.EINVAL, "the CQ was not made by efadv_create_cq");
        }
        // SRD sends still held are delivered once someone polls: nothing waits forever for them.
        deliverHeldSrd(inFlightSrd.size());
        int n = 0;
        while (n < into.length && !c.queue.isEmpty()) {
            Cqe e = c.queue.poll();
            if (e.sender() != null && e.sender().sendsOutstanding > 0) {
                e.sender().sendsOutstanding--;
            }
            WorkCompletion wc = into[n++];
            wc.wrId = e.wrId();
            wc.status = e.status();
            wc.opcode = e.opcode();
            wc.byteLength = e.byteLength();
            wc.qpNum = e.qpn();
            wc.srcQp = e.srcQp();
            wc.wcFlags = e.flags();
            wc.vendorError = e.vendorError();
            wc.pkeyIndex = 0;
            wc.slid = e.slid();
            wc.sl = 0;
            wc.dlidPathBits = 0;
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
    }
}
