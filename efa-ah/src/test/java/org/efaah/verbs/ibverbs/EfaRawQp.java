package org.efaah.verbs.ibverbs;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.efaah.verbs.spi.EfaVerbs;
import org.efaah.verbs.spi.QueuePairNumbers;
import org.efaah.verbs.QueuePairType;
import org.efaah.verbs.WorkCompletion;

/**
 * One UD or SRD QP on an {@link EfaHost} through the SPI, with a send CQ, a receive CQ that
 * reports the sender's GID, and one registered buffer of fixed-size slots (filled with
 * {@link #FILL} so that untouched bytes show). Not thread-safe: one test thread.
 */
final class EfaRawQp implements AutoCloseable {
    static final byte FILL = (byte) 0xEE;

    final EfaHost host;
    final long pd;
    final QueuePairType type;
    final long sendCq;
    final long recvCq;
    final long qp;
    final int qpn;
    final int slotSize;
    final ByteBuffer buffer;
    final long mr;

    /** In a new PD of its own, activated (RTS), {@code rnrRetry} as {@link EfaVerbs#activateSrdQp} takes it. */
    EfaRawQp(EfaHost host, QueuePairType type, int rnrRetry, int slotSize, int slots) {
        this.host = host;
        this.type = type;
        this.slotSize = slotSize;
        NativeVerbsProvider p = host.provider;
        pd = p.allocatePd(host.context);
        sendCq = p.createCq(host.context, 64);
        recvCq = p.efa().createCqWithSourceGid(host.context, 64);
        QueuePairNumbers created = type == QueuePairType.SRD
                ? p.efa().createSrdQp(pd, sendCq, recvCq, 16, slots)
                : p.createUdQp(pd, sendCq, recvCq, 16, slots);
        qp = created.handle();
        qpn = created.qpn();
        activate(rnrRetry);
        buffer = ByteBuffer.allocateDirect(slotSize * (slots + 1));
        fill();
        mr = p.registerMemory(pd, buffer);
    }

    void activate(int rnrRetry) {
        if (type == QueuePairType.SRD) {
            host.provider.efa().activateSrdQp(qp, 1, EfaHost.QKEY, rnrRetry);
        } else {
            host.provider.activateUdQp(qp, 1, 0, EfaHost.QKEY);
        }
    }

    /** Bytes before the payload in a receive buffer: 40 on UD, none on SRD (as rdma-core's tests read them). */
    int receiveOffset() {
        return type == QueuePairType.UD ? 40 : 0;
    }

    void fill() {
        for (int i = 0; i < buffer.capacity(); i++) {
            buffer.put(i, FILL);
        }
    }

    void postReceive(int slot, int length, long wrId) {
        host.provider.postReceive(qp, mr, slot * slotSize, length, wrId);
    }

    /** Sends {@code payload} from the last slot to ({@code ah}, {@code remoteQpn}). */
    void send(long ah, int remoteQpn, byte[] payload, long wrId) {
        int offset = buffer.capacity() - slotSize;
        buffer.put(offset, payload);
        host.provider.postSend(qp, ah, remoteQpn, EfaHost.QKEY, mr, offset, payload.length, wrId);
    }

    byte[] bytes(int slot, int length) {
        byte[] out = new byte[length];
        buffer.get(slot * slotSize, out);
        return out;
    }

    /** The next completion of {@code cq}, or null after {@code millis}. */
    WorkCompletion await(long cq, long millis) {
        List<WorkCompletion> got = drain(cq, 1, millis);
        return got.isEmpty() ? null : got.get(0);
    }

    /** Completions of {@code cq} until {@code count} came or {@code millis} passed. */
    List<WorkCompletion> drain(long cq, int count, long millis) {
        List<WorkCompletion> got = new ArrayList<>();
        WorkCompletion[] one = {new WorkCompletion()};
        long deadline = System.nanoTime() + millis * 1_000_000L;
        while (got.size() < count && System.nanoTime() < deadline) {
            // Only the receive CQ comes from efadv_create_cq; the send CQ is a plain ibv_create_cq one.
            int n = cq == recvCq ? host.provider.efa().pollCqWithSourceGid(cq, one) : host.provider.pollCq(cq, one);
            if (n == 1) {
                got.add(one[0]);
                one[0] = new WorkCompletion();
            } else {
                Thread.onSpinWait();
            }
        }
        return got;
    }

    static String describe(WorkCompletion wc) {
        if (wc == null) {
            return "none";
        }
        return String.format("%s (vendor_err %d), opcode %d, byte_len %d, wr_id %d, src_qp 0x%x, slid 0x%x, wc_flags 0x%x",
                WorkCompletion.statusName(wc.status), wc.vendorError, wc.opcode, wc.byteLength, wc.wrId, wc.srcQp,
                wc.slid, wc.wcFlags);
    }

    @Override
    public void close() {
        NativeVerbsProvider p = host.provider;
        p.destroyQp(qp);
        p.deregisterMemory(mr);
        p.destroyCq(sendCq);
        p.destroyCq(recvCq);
        p.deallocatePd(pd);
    }
}
