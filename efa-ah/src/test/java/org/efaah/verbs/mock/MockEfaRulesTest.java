package org.efaah.verbs.mock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.List;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.spi.AsyncEvent;
import org.efaah.verbs.spi.CreatedAh;
import org.efaah.verbs.DeviceEvent;
import org.efaah.verbs.EfaCompletionStatus;
import org.efaah.verbs.EfaDeviceAttributes;
import org.efaah.verbs.spi.EfaVerbs;
import org.efaah.verbs.Errno;
import org.efaah.verbs.Gid;
import org.efaah.verbs.spi.QueuePairNumbers;
import org.efaah.verbs.QueuePairState;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.WorkCompletion;
import org.junit.jupiter.api.Test;

/**
 * The mock's EFA rules at the SPI, each against the rdma-core function it follows, and the checks
 * of rdma-core's EFA tests ({@code tests/test_efadv.py}, {@code tests/test_efa_srd.py}) that the
 * mock can run: SRD traffic, a CQ with the sender's GID, efadv_query_device, RNR, post-state checks.
 */
class MockEfaRulesTest {
    private final MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().deviceCount(2).build());
    private final long ctx0 = mock.openDevice("efa_0");
    private final long ctx1 = mock.openDevice("efa_1");
    private final long pd0 = mock.allocatePd(ctx0);
    private final long pd1 = mock.allocatePd(ctx1);
    private final Gid gid1 = mock.queryGid(ctx1, 1, 0);

    private record Qp(long handle, int qpn, long sendCq, long recvCq, long mr) {
    }

    private Qp srd(MockVerbsProvider on, long ctx, long pd, int cqe, int rnrRetry) {
        long scq = on.createCq(ctx, cqe);
        long rcq = on.createCq(ctx, cqe);
        QueuePairNumbers q = on.efa().createSrdQp(pd, scq, rcq, 8, 8);
        on.efa().activateSrdQp(q.handle(), 1, 7, rnrRetry);
        long mr = on.registerMemory(pd, ByteBuffer.allocateDirect(16384));
        return new Qp(q.handle(), q.qpn(), scq, rcq, mr);
    }

    private Qp ud(MockVerbsProvider on, long ctx, long pd, int cqe) {
        long scq = on.createCq(ctx, cqe);
        long rcq = on.createCq(ctx, cqe);
        QueuePairNumbers q = on.createUdQp(pd, scq, rcq, 8, 8);
        on.activateUdQp(q.handle(), 1, 0, 7);
        long mr = on.registerMemory(pd, ByteBuffer.allocateDirect(16384));
        return new Qp(q.handle(), q.qpn(), scq, rcq, mr);
    }

    private static WorkCompletion[] holders(int n) {
        WorkCompletion[] w = new WorkCompletion[n];
        for (int i = 0; i < n; i++) {
            w[i] = new WorkCompletion();
        }
        return w;
    }

    /** test_qp_ex_srd_send, with tests/utils.py's read offset: 0 on SRD, where UD reads at 40. */
    @Test
    void srdTrafficLandsAtOffsetZeroAndByteLenIsThePayload() {
        Qp a = srd(mock, ctx0, pd0, 16, EfaVerbs.RNR_RETRY_DEVICE_DEFAULT);
        Qp b = srd(mock, ctx1, pd1, 16, EfaVerbs.RNR_RETRY_DEVICE_DEFAULT);
        CreatedAh toB = mock.createAh(pd0, AddressHandleAttributes.forGid(gid1));
        mock.postReceive(b.handle(), b.mr(), 0, 64, 10);
        mock.postSend(a.handle(), toB.handle(), b.qpn(), 7, a.mr(), 0, 64, 1);
        WorkCompletion[] wc = holders(1);
        assertEquals(1, mock.pollCq(b.recvCq(), wc));
        assertEquals(WorkCompletion.SUCCESS, wc[0].status);
        assertEquals(64, wc[0].byteLength);
        assertEquals(10, wc[0].wrId);
    }

    /** test_qp_ex_srd_zero_size: a 0-byte SRD send completes into a 0-byte receive. */
    @Test
    void aZeroByteSrdSendCompletesIntoAZeroByteReceive() {
        Qp a = srd(mock, ctx0, pd0, 16, EfaVerbs.RNR_RETRY_DEVICE_DEFAULT);
        Qp b = srd(mock, ctx1, pd1, 16, EfaVerbs.RNR_RETRY_DEVICE_DEFAULT);
        CreatedAh toB = mock.createAh(pd0, AddressHandleAttributes.forGid(gid1));
        mock.postReceive(b.handle(), b.mr(), 0, 0, 10);
        mock.postSend(a.handle(), toB.handle(), b.qpn(), 7, a.mr(), 0, 0, 1);
        WorkCompletion[] wc = holders(1);
        assertEquals(1, mock.pollCq(b.recvCq(), wc));
        assertEquals(WorkCompletion.SUCCESS, wc[0].status);
        assertEquals(0, wc[0].byteLength);
        assertEquals(1, mock.pollCq(a.sendCq(), wc));
        assertEquals(WorkCompletion.SUCCESS, wc[0].status);
    }

    /** efadv_query_device (test_efadv_query), and efadv_create_cq's check of CQ_WITH_SGID. */
    @Test
    void queryDeviceReportsTheCapsAndACqWithTheSgidNeedsItsCap() {
        EfaDeviceAttributes attributes = mock.efa().queryDevice(ctx0);
        assertTrue(attributes.supportsRnrRetry());
        assertTrue(attributes.supportsCqWithSgid());
        assertTrue(attributes.maxSqWr() > 0 && attributes.maxRqWr() > 0);
        MockVerbsProvider old = new MockVerbsProvider(MockConfig.builder().efaDeviceCaps(0).build());
        long ctx = old.openDevice("efa_0");
        VerbsException e = assertThrows(VerbsException.class, () -> old.efa().createCqWithSourceGid(ctx, 8));
        assertEquals(Errno.EOPNOTSUPP, e.errno());
    }

    /** The kernel's efa_modify_qp: IB_QP_RNR_RETRY only with the capability. */
    @Test
    void rnrRetryIsRefusedWithoutTheCapability() {
        MockVerbsProvider old = new MockVerbsProvider(MockConfig.builder().efaDeviceCaps(0).build());
        long ctx = old.openDevice("efa_0");
        long pd = old.allocatePd(ctx);
        long cq = old.createCq(ctx, 8);
        QueuePairNumbers q = old.efa().createSrdQp(pd, cq, cq, 8, 8);
        VerbsException e = assertThrows(VerbsException.class, () -> old.efa().activateSrdQp(q.handle(), 1, 7, 3));
        assertEquals(Errno.EOPNOTSUPP, e.errno());
        old.efa().activateSrdQp(q.handle(), 1, 7, EfaVerbs.RNR_RETRY_DEVICE_DEFAULT);
    }

    @Test
    void aFiniteRnrRetryFailsTheSendAndSevenKeepsItInFlightUntilAReceiveIsPosted() {
        Qp finite = srd(mock, ctx0, pd0, 16, 3);
        Qp forever = srd(mock, ctx0, pd0, 16, 7);
        Qp b = srd(mock, ctx1, pd1, 16, EfaVerbs.RNR_RETRY_DEVICE_DEFAULT);
        CreatedAh toB = mock.createAh(pd0, AddressHandleAttributes.forGid(gid1));
        WorkCompletion[] wc = holders(4);
        mock.postSend(finite.handle(), toB.handle(), b.qpn(), 7, finite.mr(), 0, 8, 1);
        assertEquals(1, mock.pollCq(finite.sendCq(), wc));
        assertEquals(WorkCompletion.RNR_RETRY_EXC_ERR, wc[0].status);
        assertEquals(EfaCompletionStatus.REMOTE_ERROR_RNR.code(), wc[0].vendorError);
        mock.postSend(forever.handle(), toB.handle(), b.qpn(), 7, forever.mr(), 0, 8, 2);
        assertEquals(0, mock.pollCq(forever.sendCq(), wc), "retrying without end: no completion");
        mock.postReceive(b.handle(), b.mr(), 0, 64, 20);
        assertEquals(1, mock.pollCq(forever.sendCq(), wc));
        assertEquals(WorkCompletion.SUCCESS, wc[0].status);
        assertEquals(2, wc[0].wrId);
        assertEquals(1, mock.pollCq(b.recvCq(), wc));
        assertEquals(20, wc[0].wrId);
    }

    /**
     * efa_wq_get_wrid_by_dev_req_id and efa_qp_init_indices: completions flushed before a RESET and
     * polled after it are named by slot, so the first reads the wr_id posted into that slot after
     * the reset, and the next breaks libefa's slot pool. rxe keeps the wr_id in the completion.
     */
    @Test
    void completionsFromBeforeAResetPolledAfterItReadANewWorkRequestsWrId() {
        Qp b = srd(mock, ctx1, pd1, 16, EfaVerbs.RNR_RETRY_DEVICE_DEFAULT);
        mock.postReceive(b.handle(), b.mr(), 0, 64, 10);
        mock.postReceive(b.handle(), b.mr(), 64, 64, 11);
        mock.moveQpToError(b.handle()); // both flushed into the receive CQ, not polled
        mock.resetQp(b.handle());
        mock.efa().activateSrdQp(b.handle(), 1, 7, EfaVerbs.RNR_RETRY_DEVICE_DEFAULT);
        mock.postReceive(b.handle(), b.mr(), 128, 64, 20);
        WorkCompletion[] wc = holders(1);
        assertEquals(1, mock.pollCq(b.recvCq(), wc));
        assertEquals(WorkCompletion.WR_FLUSH_ERR, wc[0].status);
        assertEquals(20, wc[0].wrId, "the flush of wr_id 10 reads the new receive's wr_id");
        IllegalStateException broken = assertThrows(IllegalStateException.class, () -> mock.pollCq(b.recvCq(), wc));
        assertTrue(broken.getMessage().contains("efa_wq_cqe_finalize"), broken.getMessage());

        MockVerbsProvider roce = new MockVerbsProvider(MockConfig.builder().efa(false).build());
        long ctx = roce.openDevice("roce_0");
        Qp r = ud(roce, ctx, roce.allocatePd(ctx), 16);
        roce.postReceive(r.handle(), r.mr(), 0, 128, 10);
        roce.postReceive(r.handle(), r.mr(), 128, 128, 11);
        roce.moveQpToError(r.handle());
        roce.resetQp(r.handle());
        roce.activateUdQp(r.handle(), 1, 0, 7);
        roce.postReceive(r.handle(), r.mr(), 256, 128, 20);
        WorkCompletion[] two = holders(2);
        assertEquals(2, roce.pollCq(r.recvCq(), two));
        assertEquals(10, two[0].wrId);
        assertEquals(11, two[1].wrId);
    }

    @Test
    void aCqThatOverrunsFailsEveryLaterPollAndOnRoceRaisesCqErr() {
        Qp a = ud(mock, ctx0, pd0, 2);
        CreatedAh toB = mock.createAh(pd0, AddressHandleAttributes.forGid(gid1));
        for (int i = 0; i < 3; i++) {
            mock.postSend(a.handle(), toB.handle(), 0x999, 7, a.mr(), 0, 8, i);
        }
        VerbsException e = assertThrows(VerbsException.class, () -> mock.pollCq(a.sendCq(), holders(4)));
        assertEquals(Errno.EIO, e.errno());
        assertTrue(e.getMessage().contains("overrun"), e.getMessage());

        MockVerbsProvider roce = new MockVerbsProvider(MockConfig.builder().efa(false).build());
        long ctx = roce.openDevice("roce_0");
        long events = roce.openAsyncEvents(ctx);
        long pd = roce.allocatePd(ctx);
        Qp r = ud(roce, ctx, pd, 2);
        CreatedAh ah = roce.createAh(pd, AddressHandleAttributes.builder().dgid(Gid.parse("fe80::99")).sgidIndex(0)
                .build());
        for (int i = 0; i < 3; i++) {
            roce.postSend(r.handle(), ah.handle(), 0x999, 7, r.mr(), 0, 8, i);
        }
        List<AsyncEvent> raised = roce.awaitAsyncEvents(events, 1000);
        assertEquals(List.of(DeviceEvent.Kind.CQ_ERR.value()), raised.stream().map(AsyncEvent::eventType).toList());
        assertEquals(Errno.EIO, assertThrows(VerbsException.class, () -> roce.pollCq(r.sendCq(), holders(4))).errno());
        roce.closeAsyncEvents(events);
    }

    /** efa_modify_qp in the kernel: EFA has port 1 and pkey_index 0 only, anything else EOPNOTSUPP. */
    @Test
    void modifyQpWithAnotherPortOrPkeyIndexIsEopnotsupp() {
        long cq = mock.createCq(ctx0, 8);
        QueuePairNumbers q = mock.createUdQp(pd0, cq, cq, 8, 8);
        assertEquals(Errno.EOPNOTSUPP,
                assertThrows(VerbsException.class, () -> mock.activateUdQp(q.handle(), 2, 0, 7)).errno());
        assertEquals(Errno.EOPNOTSUPP,
                assertThrows(VerbsException.class, () -> mock.activateUdQp(q.handle(), 1, 1, 7)).errno());
        mock.activateUdQp(q.handle(), 1, 0, 7);
    }

    /** efa_post_send copies the AHN unchecked: another PD's AH fails in the completion, not at post. */
    @Test
    void aSendWithAnotherPdsAhFailsAtCompletionNotAtPost() {
        Qp a = ud(mock, ctx0, pd0, 8);
        long otherPd = mock.allocatePd(ctx0);
        CreatedAh foreign = mock.createAh(otherPd, AddressHandleAttributes.forGid(gid1));
        mock.postSend(a.handle(), foreign.handle(), 0x999, 7, a.mr(), 0, 8, 5);
        WorkCompletion[] wc = holders(1);
        assertEquals(1, mock.pollCq(a.sendCq(), wc));
        assertEquals(5, wc[0].wrId);
        assertEquals(EfaCompletionStatus.LOCAL_ERROR_INVALID_AH.ibvStatus(), wc[0].status);
        assertEquals(EfaCompletionStatus.LOCAL_ERROR_INVALID_AH.code(), wc[0].vendorError);
    }

    /**
     * efa_post_send_validate and efa_post_recv_validate read the state libefa cached at its last
     * modify (test_post_send_qp_state_bad_flow, test_post_receive_qp_state_bad_flow): a QP the user
     * moved to ERR or RESET refuses posts with EINVAL; one the device put in error reads RTS there,
     * accepts them and flushes them.
     */
    @Test
    void aQpTheUserMovedToErrRefusesPostsAndOneTheDeviceErroredAcceptsThem() {
        Qp user = ud(mock, ctx0, pd0, 8);
        CreatedAh toB = mock.createAh(pd0, AddressHandleAttributes.forGid(gid1));
        mock.moveQpToError(user.handle());
        assertEquals(Errno.EINVAL, assertThrows(VerbsException.class,
                () -> mock.postSend(user.handle(), toB.handle(), 0x999, 7, user.mr(), 0, 8, 1)).errno());
        assertEquals(Errno.EINVAL, assertThrows(VerbsException.class,
                () -> mock.postReceive(user.handle(), user.mr(), 0, 128, 1)).errno());
        mock.resetQp(user.handle());
        assertEquals(Errno.EINVAL, assertThrows(VerbsException.class,
                () -> mock.postReceive(user.handle(), user.mr(), 0, 128, 1)).errno());

        Qp a = ud(mock, ctx0, pd0, 8);
        Qp b = ud(mock, ctx1, pd1, 8);
        mock.postReceive(b.handle(), b.mr(), 0, 100, 1); // too small for what comes: the device errors the QP
        mock.postSend(a.handle(), toB.handle(), b.qpn(), 7, a.mr(), 0, 1000, 1);
        assertEquals(QueuePairState.ERR, mock.queryQpState(b.handle()));
        mock.postReceive(b.handle(), b.mr(), 0, 2000, 2);
        CreatedAh back = mock.createAh(pd1, AddressHandleAttributes.forGid(mock.queryGid(ctx0, 1, 0)));
        mock.postSend(b.handle(), back.handle(), a.qpn(), 7, b.mr(), 0, 8, 3);
        WorkCompletion[] wc = holders(4);
        assertEquals(2, mock.pollCq(b.recvCq(), wc));
        assertEquals(WorkCompletion.LOC_QP_OP_ERR, wc[0].status);
        assertEquals(WorkCompletion.WR_FLUSH_ERR, wc[1].status);
        assertEquals(2, wc[1].wrId);
        assertEquals(1, mock.pollCq(b.sendCq(), wc));
        assertEquals(WorkCompletion.WR_FLUSH_ERR, wc[0].status);
        assertEquals(3, wc[0].wrId);
    }

    /** efa_process_cqe fills status, opcode, wr_id and qp_num for a send, nothing of a receive's fields. */
    @Test
    void aSendCompletionCarriesNoReceiveFields() {
        Qp a = ud(mock, ctx0, pd0, 8);
        CreatedAh toB = mock.createAh(pd0, AddressHandleAttributes.forGid(gid1));
        WorkCompletion[] wc = holders(1);
        wc[0].byteLength = 77;
        wc[0].srcQp = 77;
        wc[0].slid = 77;
        wc[0].wcFlags = 77;
        mock.postSend(a.handle(), toB.handle(), 0x999, 7, a.mr(), 0, 64, 9);
        assertEquals(1, mock.pollCq(a.sendCq(), wc));
        assertEquals(List.of(0, 0, 0, 0), List.of(wc[0].byteLength, wc[0].srcQp, wc[0].slid, wc[0].wcFlags));
        assertEquals(a.qpn(), wc[0].qpNum);
    }
}
