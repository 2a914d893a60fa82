package org.efaah.verbs.mock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.spi.CreatedAh;
import org.efaah.verbs.Errno;
import org.efaah.verbs.Gid;
import org.efaah.verbs.spi.QueuePairNumbers;
import org.efaah.verbs.QueuePairState;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.WorkCompletion;
import org.junit.jupiter.api.Test;

/** The mock's data path at the SPI: the rows of efa-datapath.md and rxe's error state. */
class MockDatapathTest {
    private final MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().deviceCount(2).build());
    private final long ctx0 = mock.openDevice("efa_0");
    private final long ctx1 = mock.openDevice("efa_1");
    private final long pd0 = mock.allocatePd(ctx0);
    private final long pd1 = mock.allocatePd(ctx1);

    private record Qp(long handle, int qpn, long sendCq, long recvCq, long mr) {
    }

    private Qp qp(long ctx, long pd, int maxSend, int maxRecv, boolean sgidCq) {
        long scq = mock.createCq(ctx, 64);
        long rcq = sgidCq ? mock.efa().createCqWithSourceGid(ctx, 64) : mock.createCq(ctx, 64);
        QueuePairNumbers q = mock.createUdQp(pd, scq, rcq, maxSend, maxRecv);
        mock.activateUdQp(q.handle(), 1, 0, 7);
        long mr = mock.registerMemory(pd, ByteBuffer.allocateDirect(8192));
        return new Qp(q.handle(), q.qpn(), scq, rcq, mr);
    }

    private static WorkCompletion[] holders(int n) {
        WorkCompletion[] w = new WorkCompletion[n];
        for (int i = 0; i < n; i++) {
            w[i] = new WorkCompletion();
        }
        return w;
    }

    @Test
    void aFullSendQueueIsEnomemUntilCompletionsArePolled() {
        Qp a = qp(ctx0, pd0, 2, 4, false);
        Gid gid1 = mock.queryGid(ctx1, 1, 0);
        CreatedAh ah = mock.createAh(pd0, AddressHandleAttributes.forGid(gid1));
        mock.postSend(a.handle(), ah.handle(), 0x999, 7, a.mr(), 0, 8, 1);
        mock.postSend(a.handle(), ah.handle(), 0x999, 7, a.mr(), 0, 8, 2);
        VerbsException e = assertThrows(VerbsException.class,
                () -> mock.postSend(a.handle(), ah.handle(), 0x999, 7, a.mr(), 0, 8, 3));
        assertEquals(Errno.ENOMEM, e.errno());
        assertEquals(2, mock.pollCq(a.sendCq(), holders(4)));
        mock.postSend(a.handle(), ah.handle(), 0x999, 7, a.mr(), 0, 8, 3);
    }

    @Test
    void efaCompletionsCarryNoGrhFlagAndSlidIsTheReceiversAhnOr0xFFFF() {
        Qp a = qp(ctx0, pd0, 8, 8, false);
        Qp b = qp(ctx1, pd1, 8, 8, true);
        Gid gid0 = mock.queryGid(ctx0, 1, 0);
        Gid gid1 = mock.queryGid(ctx1, 1, 0);
        CreatedAh toB = mock.createAh(pd0, AddressHandleAttributes.forGid(gid1));
        mock.postReceive(b.handle(), b.mr(), 0, 4096, 10);
        mock.postReceive(b.handle(), b.mr(), 4096, 4096, 11);
        mock.postSend(a.handle(), toB.handle(), b.qpn(), 7, a.mr(), 0, 100, 1);
        WorkCompletion[] wc = holders(1);
        assertEquals(1, mock.efa().pollCqWithSourceGid(b.recvCq(), wc));
        assertEquals(0, wc[0].wcFlags & WorkCompletion.FLAG_GRH);
        assertEquals(0xFFFF, wc[0].slid, "b holds no AH for a");
        assertTrue(wc[0].hasSourceGid);
        assertEquals(gid0, Gid.of(wc[0].sourceGid.clone()));
        // Once b holds an AH for a, slid is its AHN and the GID is no longer given.
        CreatedAh toA = mock.createAh(pd1, AddressHandleAttributes.forGid(gid0));
        mock.postSend(a.handle(), toB.handle(), b.qpn(), 7, a.mr(), 0, 100, 2);
        assertEquals(1, mock.efa().pollCqWithSourceGid(b.recvCq(), wc));
        assertEquals(toA.ahn(), wc[0].slid);
        assertFalse(wc[0].hasSourceGid);
    }

    @Test
    void aReceiveTooSmallPutsTheQpInErrorFlushesTheRestAndResetBringsItBack() {
        Qp a = qp(ctx0, pd0, 8, 8, false);
        Qp b = qp(ctx1, pd1, 8, 8, false);
        CreatedAh toB = mock.createAh(pd0, AddressHandleAttributes.forGid(mock.queryGid(ctx1, 1, 0)));
        mock.postReceive(b.handle(), b.mr(), 0, 100, 1);
        mock.postReceive(b.handle(), b.mr(), 100, 100, 2);
        mock.postSend(a.handle(), toB.handle(), b.qpn(), 7, a.mr(), 0, 500, 1);
        WorkCompletion[] wc = holders(4);
        assertEquals(2, mock.pollCq(b.recvCq(), wc));
        assertEquals(WorkCompletion.LOC_QP_OP_ERR, wc[0].status);
        assertEquals(WorkCompletion.WR_FLUSH_ERR, wc[1].status);
        assertEquals(QueuePairState.ERR, mock.queryQpState(b.handle()));
        mock.postReceive(b.handle(), b.mr(), 0, 4096, 3);
        assertEquals(1, mock.pollCq(b.recvCq(), wc), "a post to a QP in error is flushed at once");
        assertEquals(WorkCompletion.WR_FLUSH_ERR, wc[0].status);
        mock.postSend(a.handle(), toB.handle(), b.qpn(), 7, a.mr(), 0, 10, 2);
        assertEquals(0, mock.pollCq(b.recvCq(), wc), "nothing is delivered to a QP in error");
        VerbsException notFromErr = assertThrows(VerbsException.class, () -> mock.activateUdQp(b.handle(), 1, 0, 7));
        assertEquals(Errno.EINVAL, notFromErr.errno());
        mock.resetQp(b.handle());
        mock.activateUdQp(b.handle(), 1, 0, 7);
        assertEquals(QueuePairState.RTS, mock.queryQpState(b.handle()));
        mock.postReceive(b.handle(), b.mr(), 0, 4096, 4);
        mock.postSend(a.handle(), toB.handle(), b.qpn(), 7, a.mr(), 0, 10, 3);
        assertEquals(1, mock.pollCq(b.recvCq(), wc));
        assertEquals(WorkCompletion.SUCCESS, wc[0].status);
    }

    @Test
    void theRoceModelHasNoEfaExtensions() {
        MockVerbsProvider roce = new MockVerbsProvider(MockConfig.builder().efa(false).build());
        assertEquals(Errno.EOPNOTSUPP, assertThrows(VerbsException.class, roce::efa).errno());
    }
}
