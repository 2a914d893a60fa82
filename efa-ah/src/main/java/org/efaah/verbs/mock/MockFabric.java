package org.efaah.verbs.mock;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Errno;
import org.efaah.verbs.Gid;
import org.efaah.verbs.QueuePairNumbers;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.WorkCompletion;

/**
 * The mock's datagram path: UD QPs on the mock devices of one {@link MockVerbsProvider} exchange
 * datagrams in memory, with the semantics of UD on real hardware: a send completes locally
 * whether or not it is delivered; a datagram is dropped when the destination GID, QPN or Q_Key
 * does not match or no receive is posted; a delivered datagram lands behind a 40-byte GRH (IPv6
 * header layout) carrying the source and destination GIDs, or, on a RoCE-model device
 * ({@code efa=false}) between IPv4-mapped GIDs, behind the RoCE v2 IPv4 layout (20 undefined
 * bytes, then the IPv4 header).
 *
 * <p>One lock (this object's monitor) guards the whole fabric: it is a model, not a hot path.
 */
final class MockFabric {
    /** Size of the Global Routing Header in front of every UD receive. */
    static final int GRH_LENGTH = 40;
    private static final int IPV4_HEADER_LENGTH = 20;
    /** Largest UD payload: the path MTU the mock ports report. */
    static final int MTU = 4096;

    private final MockVerbsProvider provider;
    private final Map<Long, Cq> cqs = new HashMap<>();
    private final Map<Long, Mr> mrs = new HashMap<>();
    private final Map<Long, Qp> qps = new HashMap<>();
    private final Map<MockVerbsProvider.MockDevice, Map<Integer, Qp>> qpsByNumber = new HashMap<>();
    private int nextQpn = 0x100;

    MockFabric(MockVerbsProvider provider) {
        this.provider = provider;
    }

    private static final class Cq {
        final MockVerbsProvider.MockContext context;
        final int capacity;
        final ArrayDeque<long[]> queue = new ArrayDeque<>();
        int users;

        Cq(MockVerbsProvider.MockContext context, int capacity) {
            this.context = context;
            this.capacity = capacity;
        }
    }

    private record Mr(MockVerbsProvider.MockPd pd, ByteBuffer buffer) {
    }

    private record Receive(Mr mr, int offset, int length, long wrId) {
    }

    private static final class Qp {
        final int qpn;
        final MockVerbsProvider.MockPd pd;
        final Cq sendCq;
        final Cq recvCq;
        final int maxRecv;
        final ArrayDeque<Receive> receives = new ArrayDeque<>();
        boolean ready;
        int qkey;
        int port;

        Qp(int qpn, MockVerbsProvider.MockPd pd, Cq sendCq, Cq recvCq, int maxRecv) {
            this.qpn = qpn;
            this.pd = pd;
            this.sendCq = sendCq;
            this.recvCq = recvCq;
            this.maxRecv = maxRecv;
        }
    }

    synchronized long createCq(MockVerbsProvider.MockContext context, int entries) {
        if (entries < 1 || entries > 65536) {
            throw new VerbsException("ibv_create_cq", Errno.EINVAL, "cqe " + entries);
        }
        long h = provider.newHandle();
        cqs.put(h, new Cq(context, entries));
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

    synchronized QueuePairNumbers createUdQp(MockVerbsProvider.MockPd pd, long sendCq, long recvCq, int maxSendWr,
                                             int maxRecvWr) {
        Cq s = cq(sendCq, "ibv_create_qp");
        Cq r = cq(recvCq, "ibv_create_qp");
        if (maxSendWr < 1 || maxRecvWr < 1 || maxSendWr > 8192 || maxRecvWr > 8192) {
            throw new VerbsException("ibv_create_qp", Errno.EINVAL, "max_send_wr " + maxSendWr + ", max_recv_wr " + maxRecvWr);
        }
        int qpn = nextQpn++ & 0xFFFFFF;
        Qp qp = new Qp(qpn, pd, s, r, maxRecvWr);
        long h = provider.newHandle();
        qps.put(h, qp);
        qpsByNumber.computeIfAbsent(pd.context.device(), d -> new HashMap<>()).put(qpn, qp);
        s.users++;
        r.users++;
        pd.resources.incrementAndGet();
        return new QueuePairNumbers(h, qpn);
    }

    synchronized void activateUdQp(long qp, int portNum, int pkeyIndex, int qkey) {
        Qp q = qp(qp, "ibv_modify_qp");
        if (portNum != 1 || pkeyIndex != 0) {
            throw new VerbsException("ibv_modify_qp", Errno.EINVAL, "port " + portNum + ", pkey_index " + pkeyIndex);
        }
        q.port = portNum;
        q.qkey = qkey;
        q.ready = true;
    }

    synchronized void destroyQp(long qp) {
        Qp q = qps.remove(qp);
        if (q == null) {
            throw new VerbsException("ibv_destroy_qp", Errno.EINVAL, "unknown QP");
        }
        qpsByNumber.get(q.pd.context.device()).remove(q.qpn);
        q.sendCq.users--;
        q.recvCq.users--;
        q.pd.resources.decrementAndGet();
    }

    synchronized void postReceive(long qp, long mr, int offset, int length, long wrId) {
        Qp q = qp(qp, "ibv_post_recv");
        Mr m = mr(mr, offset, length, "ibv_post_recv");
        if (q.receives.size() >= q.maxRecv) {
            throw new VerbsException("ibv_post_recv", Errno.ENOMEM, "receive queue full");
        }
        q.receives.add(new Receive(m, offset, length, wrId));
    }

    synchronized void postSend(long qp, MockVerbsProvider.MockAh ah, int remoteQpn, int remoteQkey, long mr,
                               int offset, int length, long wrId) {
        Qp q = qp(qp, "ibv_post_send");
        Mr m = mr(mr, offset, length, "ibv_post_send");
        if (!q.ready) {
            throw new VerbsException("ibv_post_send", Errno.EINVAL, "QP is not in RTS");
        }
        if (ah.pd() != q.pd) {
            throw new VerbsException("ibv_post_send", Errno.EINVAL, "the AH belongs to another PD than the QP");
        }
        if (length > MTU) {
            complete(q.sendCq, wrId, 1 /* IBV_WC_LOC_LEN_ERR */, WorkCompletion.OPCODE_SEND, 0, q.qpn, 0, 0);
            return;
        }
        complete(q.sendCq, wrId, WorkCompletion.SUCCESS, WorkCompletion.OPCODE_SEND, 0, q.qpn, 0, 0);
        deliver(q, ah.attributes(), remoteQpn, remoteQkey, m, offset, length);
    }

    private void deliver(Qp from, AddressHandleAttributes ah, int remoteQpn, int remoteQkey, Mr m, int offset, int length) {
        Gid dgid = ah.dgid();
        MockVerbsProvider.MockDevice target = dgid == null ? null : provider.deviceWithGid(dgid);
        Qp to = target == null ? null : qpsByNumber.getOrDefault(target, Map.of()).get(remoteQpn);
        if (to == null || !to.ready || to.qkey != remoteQkey || to.receives.isEmpty()) {
            return; // UD: dropped without a trace, as on the wire
        }
        Receive r = to.receives.poll();
        if (r.length() < GRH_LENGTH + length) {
            complete(to.recvCq, r.wrId(), 1 /* IBV_WC_LOC_LEN_ERR */, WorkCompletion.OPCODE_RECV, 0, to.qpn, from.qpn, 0);
            return;
        }
        Gid sgid = from.pd.context.device().gids[ah.sgidIndex()];
        ByteBuffer dst = r.mr().buffer().duplicate();
        dst.position(r.offset());
        if (!provider.config().efa() && sgid.isIpv4Mapped() && dgid.isIpv4Mapped()) {
            writeIpv4Grh(dst, ah, sgid, dgid, length);
        } else {
            // IPv6 header: version 6, traffic class, flow label, payload length, next header, hop limit.
            dst.putInt((6 << 28) | (ah.trafficClass() << 20) | ah.flowLabel());
            dst.putShort((short) length);
            dst.put((byte) 0x11);
            dst.put((byte) ah.hopLimit());
            dst.put(sgid.toBytes());
            dst.put(dgid.toBytes());
        }
        ByteBuffer src = m.buffer().duplicate();
        src.limit(offset + length).position(offset);
        dst.put(src);
        complete(to.recvCq, r.wrId(), WorkCompletion.SUCCESS, WorkCompletion.OPCODE_RECV, GRH_LENGTH + length, to.qpn,
                from.qpn, WorkCompletion.FLAG_GRH);
    }

    /**
     * RoCE v2 between IPv4-mapped GIDs travels over IPv4, and a RoCE NIC then fills the 40-byte
     * GRH area with 20 undefined bytes (zeros here, as rxe writes) and the 20-byte IPv4 header.
     * UDP, BTH and DETH are not modelled: the total length counts the payload only.
     */
    private static void writeIpv4Grh(ByteBuffer dst, AddressHandleAttributes ah, Gid sgid, Gid dgid, int length) {
        byte[] header = new byte[IPV4_HEADER_LENGTH];
        ByteBuffer h = ByteBuffer.wrap(header);
        h.put((byte) 0x45).put((byte) ah.trafficClass()).putShort((short) (IPV4_HEADER_LENGTH + length));
        h.putShort((short) 0).putShort((short) 0x4000); // identification; don't fragment
        h.put((byte) ah.hopLimit()).put((byte) 17).putShort((short) 0); // TTL, UDP, checksum below
        h.put(sgid.toBytes(), 12, 4).put(dgid.toBytes(), 12, 4);
        int sum = 0;
        for (int i = 0; i < IPV4_HEADER_LENGTH; i += 2) {
            sum += ((header[i] & 0xFF) << 8) | (header[i + 1] & 0xFF);
        }
        while ((sum >>> 16) != 0) {
            sum = (sum & 0xFFFF) + (sum >>> 16);
        }
        h.putShort(10, (short) ~sum);
        dst.put(new byte[GRH_LENGTH - IPV4_HEADER_LENGTH]).put(header);
    }

    private static void complete(Cq cq, long wrId, int status, int opcode, int byteLength, int qpn, int srcQp, int flags) {
        if (cq.queue.size() < cq.capacity) {
            cq.queue.add(new long[] {wrId, status, opcode, byteLength, qpn, srcQp, flags});
        }
    }

    synchronized int pollCq(long cq, WorkCompletion[] into) {
        Cq c = cq(cq, "ibv_poll_cq");
        int n = 0;
        while (n < into.length && !c.queue.isEmpty()) {
            long[] e = c.queue.poll();
            WorkCompletion wc = into[n++];
            wc.wrId = e[0];
            wc.status = (int) e[1];
            wc.opcode = (int) e[2];
            wc.byteLength = (int) e[3];
            wc.qpNum = (int) e[4];
            wc.srcQp = (int) e[5];
            wc.wcFlags = (int) e[6];
            wc.vendorError = 0;
            wc.pkeyIndex = 0;
            wc.slid = 0;
            wc.sl = 0;
            wc.dlidPathBits = 0;
        }
        return n;
    }

    synchronized AddressHandleAttributes initAhFromWc(MockVerbsProvider.MockDevice device, int portNum,
                                                      WorkCompletion wc, long mr, int grhOffset) {
        Mr m = mr(mr, grhOffset, GRH_LENGTH, "ibv_init_ah_from_wc");
        if ((wc.wcFlags & WorkCompletion.FLAG_GRH) == 0 || portNum != 1) {
            throw new VerbsException("ibv_init_ah_from_wc", Errno.EINVAL, "no GRH, or port " + portNum);
        }
        ByteBuffer grh = m.buffer().duplicate();
        grh.position(grhOffset);
        int first = grh.getInt();
        byte[] sgid = new byte[16];
        byte[] dgid = new byte[16];
        int trafficClass = (first >>> 20) & 0xFF;
        int flowLabel = first & 0xFFFFF;
        int ipv4 = grhOffset + GRH_LENGTH - IPV4_HEADER_LENGTH;
        if ((first >>> 28) != 6 && (m.buffer().get(ipv4) & 0xFF) == 0x45) {
            // The RoCE v2 over IPv4 layout of deliver(): both GIDs are the IPv4-mapped addresses.
            sgid[10] = sgid[11] = dgid[10] = dgid[11] = (byte) 0xFF;
            m.buffer().get(ipv4 + 12, sgid, 12, 4).get(ipv4 + 16, dgid, 12, 4);
            trafficClass = m.buffer().get(ipv4 + 1) & 0xFF;
            flowLabel = 0;
        } else {
            grh.position(grhOffset + 8);
            grh.get(sgid).get(dgid);
        }
        Gid local = Gid.of(dgid);
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
        return AddressHandleAttributes.builder().dgid(Gid.of(sgid)).sgidIndex(index).hopLimit(0xFF)
                .trafficClass(trafficClass).flowLabel(flowLabel).portNum(portNum)
                .dlid(wc.slid).sl(wc.sl).srcPathBits(wc.dlidPathBits).build();
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
}
