package org.efaah.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.efaah.verbs.spi.CreatedAh;
import org.efaah.verbs.spi.QueuePairNumbers;
import org.efaah.verbs.spi.VerbsProvider;

/**
 * The SPI's rule for a null holder (DatagramVerbs.pollCq): a poll whose holder to be filled is null
 * throws NullPointerException and loses no completion, on each CQ kind a device has. Shared by the
 * mock's test and the native one (over the EFA double, and rxe in the VM).
 */
public final class NullHolderPolls {
    private static final int COUNT = 3;
    private static final int QKEY = 0x11111111;

    private NullHolderPolls() {
    }

    /** A CQ and how to poll it. */
    private interface Poll {
        int poll(WorkCompletion[] into);
    }

    /**
     * The caller's own checks, before the teardown: every completion was handed out, but for one
     * send completion a poll with a null holder left with the send CQ.
     */
    public interface Check {
        void after(long sendCq, long receiveCq);
    }

    /**
     * QP A (in one PD) sends {@link #COUNT} datagrams to QP B (in another, which holds no AH for A,
     * so that EFA reports the sender's GID), then each CQ is polled with a null first holder, the
     * poll that follows with a null second one, and then with whole holders: every send and every
     * receive completion comes out once, in order.
     *
     * @param efa whether the receive CQ is EFA's with the sender's GID ({@code createCqWithSourceGid})
     */
    public static void sendAndReceive(VerbsProvider p, boolean efa, int gidIndex, Check check) {
        long context = p.openDevice(p.deviceNames().get(0));
        List<Runnable> undo = new ArrayList<>();
        try {
            long pdA = p.allocatePd(context);
            undo.add(0, () -> p.deallocatePd(pdA));
            long pdB = p.allocatePd(context);
            undo.add(0, () -> p.deallocatePd(pdB));
            long sendCq = p.datagrams().createCq(context, 16);
            undo.add(0, () -> p.datagrams().destroyCq(sendCq));
            long unusedCq = p.datagrams().createCq(context, 16);
            undo.add(0, () -> p.datagrams().destroyCq(unusedCq));
            long receiveCq = efa ? p.efa().createCqWithSourceGid(context, 16) : p.datagrams().createCq(context, 16);
            undo.add(0, () -> p.datagrams().destroyCq(receiveCq));
            long mrA = p.datagrams().registerMemory(pdA, ByteBuffer.allocateDirect(4096));
            undo.add(0, () -> p.datagrams().deregisterMemory(mrA));
            long mrB = p.datagrams().registerMemory(pdB, ByteBuffer.allocateDirect(COUNT * 2048));
            undo.add(0, () -> p.datagrams().deregisterMemory(mrB));
            QueuePairNumbers a = p.datagrams().createUdQp(pdA, sendCq, unusedCq, 8, 8);
            undo.add(0, () -> p.datagrams().destroyQp(a.handle()));
            QueuePairNumbers b = p.datagrams().createUdQp(pdB, unusedCq, receiveCq, 8, 8);
            undo.add(0, () -> p.datagrams().destroyQp(b.handle()));
            p.datagrams().activateUdQp(a.handle(), 1, 0, QKEY);
            p.datagrams().activateUdQp(b.handle(), 1, 0, QKEY);
            Gid own = p.queryGid(context, 1, gidIndex);
            CreatedAh toB = p.createAh(pdA, AddressHandleAttributes.builder().dgid(own).sgidIndex(gidIndex).build());
            undo.add(0, () -> p.destroyAh(toB.handle()));
            for (int i = 0; i < COUNT; i++) {
                p.datagrams().postReceive(b.handle(), mrB, i * 2048, 2048, 11 + i);
            }
            for (int i = 0; i < COUNT; i++) {
                p.datagrams().postSend(a.handle(), toB.handle(), b.qpn(), QKEY, mrA, 0, 64, 1 + i);
            }
            List<WorkCompletion> sent = drain(into -> p.datagrams().pollCq(sendCq, into));
            assertEquals(List.of(1L, 2L, 3L), sent.stream().map(wc -> wc.wrId).toList(), "send completions");
            Poll receives = efa ? into -> p.efa().pollCqWithSourceGid(receiveCq, into)
                    : into -> p.datagrams().pollCq(receiveCq, into);
            List<WorkCompletion> received = drain(receives);
            assertEquals(List.of(11L, 12L, 13L), received.stream().map(wc -> wc.wrId).toList(), "receive completions");
            for (WorkCompletion wc : received) {
                assertEquals(WorkCompletion.SUCCESS, wc.status, wc.toString());
                if (efa) {
                    // B's PD holds no AH for A: EFA names the sender by its GID (efadv_wc_read_sgid)
                    assertTrue(wc.hasSourceGid, wc.toString());
                    assertEquals(own, Gid.of(wc.sourceGid.clone()), wc.toString());
                }
            }
            // One more send, its completion left with the send CQ by a poll with a null holder:
            // the teardown destroys the CQ with it.
            p.datagrams().postReceive(b.handle(), mrB, 0, 2048, 11 + COUNT);
            p.datagrams().postSend(a.handle(), toB.handle(), b.qpn(), QKEY, mrA, 0, 64, 1 + COUNT);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            for (boolean thrown = false; !thrown; ) {
                assertTrue(System.nanoTime() < deadline, "no send completion in 30 s");
                try {
                    assertEquals(0, p.datagrams().pollCq(sendCq, new WorkCompletion[] {null}));
                } catch (NullPointerException e) {
                    thrown = true;
                }
            }
            check.after(sendCq, receiveCq);
        } finally {
            undo.forEach(Runnable::run);
            p.closeDevice(context);
        }
    }

    /**
     * Polls until {@link #COUNT} completions came: first with a null first holder until a poll
     * throws for it (the first that takes any completion), then once with a null second holder
     * (thrown only if more than one is ready), then with whole holders, two at a time.
     */
    private static List<WorkCompletion> drain(Poll cq) {
        List<WorkCompletion> got = new ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        int stage = 0;
        while (got.size() < COUNT) {
            assertTrue(System.nanoTime() < deadline, () -> "only " + got.size() + " completions in 30 s");
            WorkCompletion[] into = {new WorkCompletion(), new WorkCompletion()};
            if (stage < 2) {
                into[stage] = null;
            }
            try {
                int n = cq.poll(into);
                assertTrue(stage != 0 || n == 0, "a poll with a null first holder filled " + n);
                for (int i = 0; i < n; i++) {
                    got.add(into[i]);
                }
                if (stage == 1) {
                    stage = 2;
                }
            } catch (NullPointerException e) {
                assertEquals("into[" + stage + "]", e.getMessage());
                stage++;
            }
        }
        assertEquals(0, cq.poll(new WorkCompletion[] {new WorkCompletion()}), "no completion is handed out twice");
        return got;
    }
}
