package org.efaah.verbs.mock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.spi.CreatedAh;
import org.efaah.verbs.Errno;
import org.efaah.verbs.spi.QueuePairNumbers;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.WorkCompletion;
import org.junit.jupiter.api.Test;

/**
 * The mock's two models of a QP in the error state ({@link MockConfig#flushOnError()}): flushes
 * at ERR, as rxe and mlx5; or none until the destroy, as EFA documents FLUSHED, whose completions
 * libefa then refuses as those of a QP no longer in its table.
 */
class MockErrorFlushTest {

    private static WorkCompletion[] holders(int n) {
        WorkCompletion[] w = new WorkCompletion[n];
        for (int i = 0; i < n; i++) {
            w[i] = new WorkCompletion();
        }
        return w;
    }

    /** A QP with three receives posted and a send held in flight (completions held), moved to ERR. */
    private static long[] qpInError(MockVerbsProvider mock) {
        long ctx = mock.openDevice("efa_0");
        long pd = mock.allocatePd(ctx);
        long scq = mock.createCq(ctx, 16);
        long rcq = mock.createCq(ctx, 16);
        QueuePairNumbers q = mock.createUdQp(pd, scq, rcq, 4, 4);
        mock.activateUdQp(q.handle(), 1, 0, 7);
        long mr = mock.registerMemory(pd, ByteBuffer.allocateDirect(4096));
        for (int i = 0; i < 3; i++) {
            mock.postReceive(q.handle(), mr, i * 1024, 1024, i);
        }
        mock.moveQpToError(q.handle());
        return new long[] {q.handle(), scq, rcq, mr, pd};
    }

    @Test
    void byDefaultErrFlushesAtOnce() {
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.defaults());
        long[] q = qpInError(mock);
        WorkCompletion[] wc = holders(8);
        assertEquals(3, mock.pollCq(q[2], wc));
        assertEquals(WorkCompletion.WR_FLUSH_ERR, wc[0].status);
    }

    @Test
    void withoutFlushOnErrorErrFlushesNothingAndTheDestroysFlushesAreInvalidQpCompletions() {
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().flushOnError(false).build());
        long[] q = qpInError(mock);
        assertEquals(0, mock.pollCq(q[2], holders(8)), "ERR flushes nothing");
        mock.destroyQp(q[0]);
        VerbsException e = assertThrows(VerbsException.class, () -> mock.pollCq(q[2], holders(8)));
        assertEquals(Errno.EINVAL, e.errno(), "efa_poll_sub_cq: Invalid QP");
        mock.destroyCq(q[2]);
        mock.destroyCq(q[1]);
    }

    @Test
    void withoutFlushOnErrorAQpTheDevicePutInErrorHoldsLaterSendsUntilTheDestroy() {
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().deviceCount(2).flushOnError(false)
                .build());
        long ctx = mock.openDevice("efa_0");
        long pd = mock.allocatePd(ctx);
        long scq = mock.createCq(ctx, 16);
        long rcq = mock.createCq(ctx, 16);
        QueuePairNumbers q = mock.createUdQp(pd, scq, rcq, 4, 4);
        mock.activateUdQp(q.handle(), 1, 0, 7);
        long mr = mock.registerMemory(pd, ByteBuffer.allocateDirect(4096));
        mock.postReceive(q.handle(), mr, 0, 64, 0); // too short for what comes: the device puts the QP in error
        long ctx1 = mock.openDevice("efa_1");
        long pd1 = mock.allocatePd(ctx1);
        long scq1 = mock.createCq(ctx1, 16);
        QueuePairNumbers q1 = mock.createUdQp(pd1, scq1, scq1, 4, 4);
        mock.activateUdQp(q1.handle(), 1, 0, 7);
        long mr1 = mock.registerMemory(pd1, ByteBuffer.allocateDirect(4096));
        CreatedAh to0 = mock.createAh(pd1, AddressHandleAttributes.forGid(mock.queryGid(ctx, 1, 0)));
        mock.postSend(q1.handle(), to0.handle(), q.qpn(), 7, mr1, 0, 1024, 9);
        WorkCompletion[] wc = holders(8);
        assertEquals(1, mock.pollCq(rcq, wc));
        assertEquals(WorkCompletion.LOC_QP_OP_ERR, wc[0].status);
        CreatedAh to1 = mock.createAh(pd, AddressHandleAttributes.forGid(mock.queryGid(ctx1, 1, 0)));
        mock.postSend(q.handle(), to1.handle(), q1.qpn(), 7, mr, 0, 8, 1); // libefa's cached state is RTS
        assertEquals(0, mock.pollCq(scq, wc), "not sent, not flushed");
        mock.destroyQp(q.handle());
        assertThrows(VerbsException.class, () -> mock.pollCq(scq, holders(8)), "flushed by the destroy");
    }

    @Test
    void theModelIsReadFromItsProperty() {
        assertTrue(MockConfig.defaults().flushOnError());
        System.setProperty(MockConfig.PROPERTY_PREFIX + "flushOnError", "false");
        try {
            assertFalse(MockConfig.fromSystemProperties().flushOnError());
            assertFalse(MockConfig.fromSystemProperties().toBuilder().build().flushOnError());
        } finally {
            System.clearProperty(MockConfig.PROPERTY_PREFIX + "flushOnError");
        }
    }
}
