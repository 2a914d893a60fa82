package org.efaah.ud;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.efaah.cache.AddressHandle;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.mock.MockConfig;
import org.junit.jupiter.api.Test;

/**
 * Issue 35 item 2, the receive path's completions: a poll's holder is handed to its slot's view
 * (no copy), and the view keeps a sender it was asked for until the next question. Each view of a
 * chain one poll lent must still show its own datagram while the handler reads it, after every
 * other completion of that poll was decoded, and a slot that takes a datagram of another sender
 * must name that sender, not the one named for its last datagram. Written with the swap; it guards
 * the rule the swap relies on (a slot is not posted while its view is lent, so no completion
 * names it meanwhile), which held before as well.
 */
class ReceiveHoldersTest {
    private static final long WAIT_SECONDS = 5;
    private static final int DEPTH = 4;

    @Test
    void onEfaEachViewOfAChainShowsItsOwnDatagramAndSenderAsSlotsChangeSenders() throws Exception {
        check(true);
    }

    @Test
    void onRoceEachViewOfAChainShowsItsOwnDatagramAndSenderAsSlotsChangeSenders() throws Exception {
        check(false);
    }

    /*
     * A backlog of DEPTH datagrams: each call takes the two oldest and two more are sent into the
     * slots they freed, so every poll that brings the new two (into the poll's holders) comes while
     * two older views are filled and not yet read; the senders alternate so that each slot's sender
     * changes as the ring turns.
     */
    private static void check(boolean efa) throws Exception {
        try (MockEndpoints f = new MockEndpoints(MockConfig.builder().deviceCount(3).efa(efa).build())) {
            ProtectionDomain pdR = f.pd(0);
            UdEndpoint receiver = f.endpoint(pdR, UdEndpoint.Options.defaults().withDepths(16, DEPTH));
            UdEndpoint[] senders = {f.endpoint(f.pd(1), UdEndpoint.Options.defaults()),
                f.endpoint(f.pd(2), UdEndpoint.Options.defaults())};
            try (AddressHandle toA = f.cache.acquire(pdR, to(senders[0]));
                 AddressHandle toB = f.cache.acquire(pdR, to(senders[1]))) {
                List<String> expected = new ArrayList<>();
                List<String> seen = new ArrayList<>();
                int tag = 0;
                for (; tag < DEPTH; tag++) {
                    send(senders, tag, receiver, expected);
                }
                for (int call = 0; call < 20; call++) {
                    int before = seen.size();
                    // Every sender asked: the one named for a slot's last datagram must not answer for its next.
                    int got = receiver.receive(v -> seen.add(v.payload().getInt(0) + " " + qpn(v.sourceQpn())
                            + " " + v.sourceGid()), 2, WAIT_SECONDS, TimeUnit.SECONDS);
                    assertEquals(2, got, "call " + call);
                    assertEquals(expected.subList(0, seen.size()), seen, "call " + call);
                    for (int i = before; i < seen.size(); i++, tag++) {
                        send(senders, tag, receiver, expected);
                    }
                }
            }
        }
    }

    /** Datagram {@code tag}, from the sender {@code tag / 3 % 2} (so that a slot's sender changes as the ring turns). */
    private static void send(UdEndpoint[] senders, int tag, UdEndpoint receiver, List<String> expected) {
        UdEndpoint from = senders[tag / 3 % 2];
        from.send(receiver.address(), ByteBuffer.allocate(8).putInt(tag).putInt(0).flip());
        expected.add(tag + " " + qpn(from) + " " + from.address().gid());
    }

    private static String qpn(UdEndpoint e) {
        return qpn(e.address().qpn());
    }

    private static String qpn(int qpn) {
        return "qpn 0x" + Integer.toHexString(qpn);
    }

    private static AddressHandleAttributes to(UdEndpoint peer) {
        return AddressHandleAttributes.builder().dgid(peer.address().gid()).build();
    }
}
