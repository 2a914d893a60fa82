package org.efaah.ud;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.WorkCompletion;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Issue 33 section 2: a recovery whose {@code ibv_modify_qp} fails (the kernel's efa_modify_qp
 * checks the move against its cached state, RTS for a QP the device put in error, and the device
 * may refuse the command) destroys the QP and makes a new one, at once, instead of trying that
 * move again at every step: before, the flush bound never started and every send, receive and
 * flush threw the modify's EINVAL until close. And on EFA a recovery never resets its QP
 * (libefa's RESET keeps the send queue's phase): it is made anew even when ERR flushed everything;
 * elsewhere (rxe, mlx5) a drained QP is reset and keeps its QPN. On the mock's EFA and RoCE
 * devices, both of its error-state models (flush at ERR or at destroy).
 */
class RefusedMoveRecoveryTest {

    @ParameterizedTest(name = "efa={0} flushOnError={1} refused={2}")
    @CsvSource({
        "true, true, NONE", "false, true, NONE",
        "true, true, ERR", "true, false, ERR", "false, true, ERR", "false, false, ERR",
        "false, true, RESET", "false, true, INIT", "true, true, INIT", "false, true, INIT2", "false, false, INIT2"})
    void aRefusedMoveRemakesTheQpAndTheEndpointGoesOn(boolean efa, boolean flushOnError, String refused) {
        FaultyDatapath faulty = new FaultyDatapath(new MockVerbsProvider(MockConfig.builder().efa(efa)
                .flushOnError(flushOnError).deviceCount(2).build()));
        String prefix = efa ? "efa_" : "roce_";
        try (Device d0 = Device.open(faulty, prefix + "0");
             Device d1 = Device.open(faulty, prefix + "1");
             ProtectionDomain pd0 = d0.allocatePd();
             ProtectionDomain pd1 = d1.allocatePd();
             AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.PARANOID).build();
             UdEndpoint small = UdEndpoint.open(pd0, cache, UdEndpoint.Options.defaults().withMaxMessageSize(512));
             UdEndpoint big = UdEndpoint.open(pd1, cache, UdEndpoint.Options.defaults());
             AddressHandle toSmall = cache.acquire(pd1, AddressHandleAttributes.builder()
                     .dgid(small.address().gid()).build());
             AddressHandle toBig = cache.acquire(pd0, AddressHandleAttributes.builder()
                     .dgid(big.address().gid()).build())) {
            int qpn = small.address().qpn();
            switch (refused) {
                case "ERR" -> faulty.refuseError = true;
                case "RESET" -> faulty.refuseReset = true;
                case "INIT" -> faulty.refuseActivations.set(1); // the reset QP's, or on EFA the new QP's first try
                case "INIT2" -> faulty.refuseActivations.set(2); // RoCE: the reset QP's, then the new QP's
                default -> { }
            }
            int movesBefore = faulty.moves.get();
            big.send(toSmall, small.address(), ByteBuffer.allocate(1024));
            long start = System.nanoTime();
            WorkCompletionException e = assertThrows(WorkCompletionException.class,
                    () -> small.receive(5, TimeUnit.SECONDS));
            assertEquals(WorkCompletion.LOC_QP_OP_ERR, e.status(), e.getMessage());
            if ((efa && refused.equals("INIT")) || refused.equals("INIT2")) {
                // The remade QP's own activation was refused: that remake failed (riding on the
                // error) and ended the endpoint. Every later call says so, with the remake's
                // failure as its cause, and makes no QP again (before: each call remade it).
                assertEquals(1, e.getSuppressed().length, e.toString());
                int movesAtEnd = faulty.moves.get();
                for (int i = 0; i < 3; i++) {
                    VerbsException later = assertThrows(VerbsException.class,
                            () -> small.receive(10, TimeUnit.MILLISECONDS));
                    assertTrue(later.getMessage().contains("endpoint is ended"), later.getMessage());
                    assertNotNull(later.getCause(), "the remake's failure is the cause");
                    assertEquals(((VerbsException) later.getCause()).errno(), later.errno());
                    assertThrows(VerbsException.class, () -> small.send(toBig, big.address(), ByteBuffer.allocate(8)));
                    assertThrows(VerbsException.class, () -> small.flush(10, TimeUnit.MILLISECONDS));
                }
                assertEquals(movesAtEnd, faulty.moves.get(), "no remake tried after the one that failed");
                assertEquals(0, small.counters().qpsRemade());
                assertTrue(small.toString().contains("ended by its QP's remake: ibv_modify_qp failed: EINVAL"),
                        small.toString());
                return;
            } else {
                assertEquals(0, e.getSuppressed().length, "the recovery ended within the receive: "
                        + (e.getSuppressed().length > 0 ? e.getSuppressed()[0] : ""));
            }
            boolean remade = efa || !refused.equals("NONE") || !flushOnError;
            assertEquals(1, small.counters().recoveries());
            assertEquals(remade ? 1 : 0, small.counters().qpsRemade(), "QP remade");
            if (remade) {
                assertNotEquals(qpn, small.address().qpn(), "a new QP, a new QPN");
            } else {
                assertEquals(qpn, small.address().qpn(), "reset, the same QP");
            }
            if (refused.equals("ERR") && flushOnError) {
                // Refused ERR flushes nothing: the QP is remade at once, not past the bound.
                assertTrue(System.nanoTime() - start < UdEndpoint.DEFAULT_RECOVERY_FLUSH_NANOS / 2,
                        "waited for flushes that a refused ERR never makes: "
                                + (System.nanoTime() - start) / 1_000_000 + " ms");
            }
            int moves = faulty.moves.get() - movesBefore;
            // ERR once, then either RESET and the activation (2) or the new QP's activation (1),
            // and one more activation where the first was refused.
            int expected = 1 + (remade ? 1 : 2) + (refused.equals("INIT") ? 1 : 0)
                    + (refused.equals("RESET") || (refused.equals("INIT") && !efa) ? 1 : 0);
            assertEquals(expected, moves, "modify calls of the recovery: a refused move is not tried again");
            for (int i = 0; i < 300; i++) {
                // More than the 256 receives: every slot posted on the QP that came out of it.
                big.send(toSmall, small.address(), ByteBuffer.allocate(512).put(0, (byte) i));
                Datagram d = small.receive(5, TimeUnit.SECONDS);
                assertNotNull(d, "datagram " + i + " after the recovery");
                assertEquals((byte) i, d.payload()[0]);
            }
            small.send(toBig, big.address(), ByteBuffer.allocate(16).put(0, (byte) 7));
            assertTrue(small.flush(5, TimeUnit.SECONDS), "a send after the recovery completes");
            Datagram d = big.receive(5, TimeUnit.SECONDS);
            assertNotNull(d);
            assertEquals(small.address().qpn(), d.sourceQpn());
            assertTrue(big.flush(5, TimeUnit.SECONDS));
        }
    }
}
