package org.efaah.verbs.mock;

import org.efaah.verbs.spi.CompletionChannelVerbs;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Errno;
import org.efaah.verbs.spi.QueuePairNumbers;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.spi.VerbsProvider;
import org.efaah.verbs.WorkCompletion;
import org.junit.jupiter.api.Test;

/**
 * The mock's completion-channel contract at the SPI (libibverbs {@code ibv_req_notify_cq},
 * {@code ibv_get_cq_event}, {@code ibv_destroy_comp_channel}; libefa {@code efa_create_cq_ex}):
 * no event unless armed, one per arm, none for completions queued before the arm.
 */
class MockCompletionChannelTest {
    private final MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().deviceCount(2).build());
    private final long ctx0 = mock.openDevice("efa_0");
    private final long ctx1 = mock.openDevice("efa_1");
    private final long pd0 = mock.allocatePd(ctx0);
    private final long pd1 = mock.allocatePd(ctx1);
    private final long channel = mock.createCompletionChannel(ctx1);
    private final long recvCq = mock.createCq(ctx1, 16, channel);
    private final long sendCq0 = mock.createCq(ctx0, 16);
    private final QueuePairNumbers sender = mock.createUdQp(pd0, sendCq0, sendCq0, 8, 8);
    private final QueuePairNumbers receiver = mock.createUdQp(pd1, mock.createCq(ctx1, 16), recvCq, 8, 8);
    private final long sendMr = mock.registerMemory(pd0, ByteBuffer.allocateDirect(4096));
    private final long recvMr = mock.registerMemory(pd1, ByteBuffer.allocateDirect(4096));
    private final long ah = mock.createAh(pd0, AddressHandleAttributes.forGid(mock.queryGid(ctx1, 1, 0))).handle();

    MockCompletionChannelTest() {
        mock.activateUdQp(sender.handle(), 1, 0, 7);
        mock.activateUdQp(receiver.handle(), 1, 0, 7);
        for (int i = 0; i < 8; i++) {
            mock.postReceive(receiver.handle(), recvMr, i * 100, 100, i);
        }
    }

    private void deliver() {
        mock.postSend(sender.handle(), ah, receiver.qpn(), 7, sendMr, 0, 8, 0);
        assertEquals(1, mock.pollCq(sendCq0, new WorkCompletion[] {new WorkCompletion()}));
    }

    @Test
    void noEventUnlessArmedAndOnePerArm() {
        deliver();
        assertEquals(0, mock.awaitCqEvents(channel, 10), "not armed: no event");
        mock.requestCqNotification(recvCq);
        assertEquals(0, mock.awaitCqEvents(channel, 10), "the completion queued before the arm gives none");
        deliver();
        deliver();
        assertEquals(1, mock.awaitCqEvents(channel, 10), "one event for the arm, however many completions");
        assertEquals(0, mock.awaitCqEvents(channel, 10));
        assertEquals(1, mock.eventsPosted(channel));
    }

    @Test
    void aStopEndsEveryWaitNowAndLater() {
        mock.stopCompletionChannel(channel);
        assertEquals(CompletionChannelVerbs.CHANNEL_STOPPED, mock.awaitCqEvents(channel, 10_000));
        assertEquals(CompletionChannelVerbs.CHANNEL_STOPPED, mock.awaitCqEvents(channel, 10_000));
    }

    @Test
    void aWakeEndsOneWait() {
        long t0 = System.nanoTime();
        mock.wakeCompletionChannel(channel);
        assertEquals(0, mock.awaitCqEvents(channel, 10_000), "woken: no event");
        assertTrue(System.nanoTime() - t0 < 5_000_000_000L, "the woken wait returned at once");
        assertEquals(0, mock.awaitCqEvents(channel, 10), "the wake was used up");
    }

    @Test
    void aChannelTakesOneCqAndOutlivesIt() {
        VerbsException second = assertThrows(VerbsException.class, () -> mock.createCq(ctx1, 16, channel));
        assertEquals(Errno.EBUSY, second.errno());
        VerbsException busy = assertThrows(VerbsException.class, () -> mock.destroyCompletionChannel(channel));
        assertEquals(Errno.EBUSY, busy.errno());
        assertEquals(-1, mock.completionChannelFd(channel));
    }

    @Test
    void efaWithoutCqNotificationsRefusesAChannel() {
        mock.cqNotifications(false);
        long other = mock.createCompletionChannel(ctx0);
        VerbsException e = assertThrows(VerbsException.class, () -> mock.createCq(ctx0, 16, other));
        assertEquals(Errno.EOPNOTSUPP, e.errno());
        VerbsException gid = assertThrows(VerbsException.class, () -> mock.efa().createCqWithSourceGid(ctx0, 16, other));
        assertEquals(Errno.EOPNOTSUPP, gid.errno());
        assertTrue(e.getMessage().contains("CQ notifications"), e.getMessage());
        mock.destroyCompletionChannel(other);
    }
}
