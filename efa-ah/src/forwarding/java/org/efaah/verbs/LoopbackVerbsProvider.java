package org.efaah.verbs;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.efaah.verbs.spi.QueuePairNumbers;
import org.efaah.verbs.mock.MockVerbsProvider;

/**
 * The endpoint's share of the datapath, apart from any provider's (issue 21): a provider whose UD
 * datapath allocates nothing, for {@link DatapathBench}'s allocation figure. The mock (RoCE model)
 * does everything else; posts, reposts and polls go to rings here instead: a send is delivered at
 * once into the destination QP's oldest posted receive, behind 40 bytes left as they were, with no
 * {@code IBV_WC_GRH} (the sender is unknown: nothing parses a GRH), and completes at once; a send
 * to a QPN with no receive posted is dropped, as UD drops it. One thread at a time: a bench and
 * test tool (DatapathBench's figures, the endpoint's allocation tests), not a model of a device
 * (that is the mock).
 */
public final class LoopbackVerbsProvider extends ForwardingVerbsProvider {
    private static final int GRH_BYTES = 40;
    private final List<Qp> qps = new ArrayList<>();
    private final List<Cq> cqs = new ArrayList<>();
    private final List<Mr> mrs = new ArrayList<>();

    public LoopbackVerbsProvider(MockVerbsProvider mock) {
        super(mock);
    }

    private record Mr(long handle, ByteBuffer buffer) {
    }

    /** A CQ's completions, a ring of the fields a UD completion carries. */
    private static final class Cq {
        final long handle;
        final long[] wrId;
        final int[] byteLength;
        final int[] srcQp;
        final int[] qpNum;
        final int[] opcode;
        int head;
        int count;

        Cq(long handle, int entries) {
            this.handle = handle;
            this.wrId = new long[entries];
            this.byteLength = new int[entries];
            this.srcQp = new int[entries];
            this.qpNum = new int[entries];
            this.opcode = new int[entries];
        }

        void add(long id, int length, int source, int qpn, int op) {
            if (count == wrId.length) {
                throw new IllegalStateException("loopback CQ overrun");
            }
            int i = (head + count++) % wrId.length;
            wrId[i] = id;
            byteLength[i] = length;
            srcQp[i] = source;
            qpNum[i] = qpn;
            opcode[i] = op;
        }
    }

    /** A QP's posted receives, a ring. */
    private static final class Qp {
        final long handle;
        final int qpn;
        final Cq sendCq;
        final Cq recvCq;
        final long[] wrId;
        final int[] offset;
        final int[] length;
        final Mr[] mr;
        int head;
        int count;

        Qp(long handle, int qpn, Cq sendCq, Cq recvCq, int maxRecvWr) {
            this.handle = handle;
            this.qpn = qpn;
            this.sendCq = sendCq;
            this.recvCq = recvCq;
            this.wrId = new long[maxRecvWr];
            this.offset = new int[maxRecvWr];
            this.length = new int[maxRecvWr];
            this.mr = new Mr[maxRecvWr];
        }
    }

    private Qp qp(long handle) {
        for (int i = 0; i < qps.size(); i++) {
            Qp q = qps.get(i);
            if (q.handle == handle) {
                return q;
            }
        }
        throw new VerbsException("ibv_post", Errno.EINVAL, "unknown QP");
    }

    private Qp qpByNumber(int qpn) {
        for (int i = 0; i < qps.size(); i++) {
            Qp q = qps.get(i);
            if (q.qpn == qpn) {
                return q;
            }
        }
        return null;
    }

    private Cq cq(long handle) {
        for (int i = 0; i < cqs.size(); i++) {
            Cq c = cqs.get(i);
            if (c.handle == handle) {
                return c;
            }
        }
        throw new VerbsException("ibv_poll_cq", Errno.EINVAL, "unknown CQ");
    }

    private Mr mr(long handle) {
        for (int i = 0; i < mrs.size(); i++) {
            Mr m = mrs.get(i);
            if (m.handle == handle) {
                return m;
            }
        }
        throw new VerbsException("ibv_post", Errno.EINVAL, "unknown MR");
    }

    @Override
    public long createCq(long context, int entries) {
        long h = delegate().datagrams().createCq(context, entries);
        cqs.add(new Cq(h, entries));
        return h;
    }

    @Override
    public long createCq(long context, int entries, long channel) {
        long h = delegate().completionChannels().createCq(context, entries, channel);
        cqs.add(new Cq(h, entries));
        return h;
    }

    @Override
    public long registerMemory(long pd, ByteBuffer buffer) {
        long h = delegate().datagrams().registerMemory(pd, buffer);
        mrs.add(new Mr(h, buffer));
        return h;
    }

    @Override
    public QueuePairNumbers createUdQp(long pd, long sendCq, long recvCq, int maxSendWr, int maxRecvWr) {
        QueuePairNumbers n = delegate().datagrams().createUdQp(pd, sendCq, recvCq, maxSendWr, maxRecvWr);
        qps.add(new Qp(n.handle(), n.qpn(), cq(sendCq), cq(recvCq), maxRecvWr));
        return n;
    }

    @Override
    public void postSend(long qp, long ah, int remoteQpn, int remoteQkey, long mr, int offset, int length, long wrId) {
        Qp from = qp(qp);
        Mr source = mr(mr);
        from.sendCq.add(wrId, 0, 0, from.qpn, WorkCompletion.OPCODE_SEND);
        Qp to = qpByNumber(remoteQpn);
        if (to == null || to.count == 0) {
            return; // UD: dropped
        }
        int r = to.head;
        to.head = (to.head + 1) % to.wrId.length;
        to.count--;
        to.mr[r].buffer().put(to.offset[r] + GRH_BYTES, source.buffer(), offset, length);
        to.recvCq.add(to.wrId[r], GRH_BYTES + length, from.qpn, to.qpn, WorkCompletion.OPCODE_RECV);
    }

    /** A batch: one {@link #postSend} each, here rather than the mock's (the forwarding default). */
    @Override
    public int postSends(long qp, long ah, int remoteQpn, int remoteQkey, long mr, int[] offsets, int[] lengths,
                         long[] wrIds, int count) {
        for (int i = 0; i < count; i++) {
            postSend(qp, ah, remoteQpn, remoteQkey, mr, offsets[i], lengths[i], wrIds[i]);
        }
        return count;
    }

    /** A batch in native memory: likewise. */
    @Override
    public int postSends(long qp, long ah, int remoteQpn, int remoteQkey, long mr, SendRequests requests, int count) {
        for (int i = 0; i < count; i++) {
            postSend(qp, ah, remoteQpn, remoteQkey, mr, requests.offset(i), requests.length(i), requests.wrId(i));
        }
        return count;
    }

    @Override
    public void postReceive(long qp, long mr, int offset, int length, long wrId) {
        Qp q = qp(qp);
        if (q.count == q.wrId.length) {
            throw new VerbsException("ibv_post_recv", Errno.ENOMEM, "receive queue full");
        }
        int i = (q.head + q.count++) % q.wrId.length;
        q.wrId[i] = wrId;
        q.offset[i] = offset;
        q.length[i] = length;
        q.mr[i] = mr(mr);
    }

    @Override
    public int postReceives(long qp, long mr, int[] offsets, int length, long[] wrIds, int count) {
        for (int i = 0; i < count; i++) {
            postReceive(qp, mr, offsets[i], length, wrIds[i]);
        }
        return count;
    }

    @Override
    public int pollCq(long cq, WorkCompletion[] into) {
        Cq c = cq(cq);
        int n = 0;
        while (n < into.length && c.count > 0) {
            int i = c.head;
            c.head = (c.head + 1) % c.wrId.length;
            c.count--;
            WorkCompletion wc = into[n++];
            wc.wrId = c.wrId[i];
            wc.status = WorkCompletion.SUCCESS;
            wc.opcode = c.opcode[i];
            wc.vendorError = 0;
            wc.byteLength = c.byteLength[i];
            wc.qpNum = c.qpNum[i];
            wc.srcQp = c.srcQp[i];
            wc.wcFlags = 0;
            wc.pkeyIndex = 0;
            wc.slid = 0;
            wc.sl = 0;
            wc.dlidPathBits = 0;
            wc.hasSourceGid = false;
        }
        return n;
    }









}
