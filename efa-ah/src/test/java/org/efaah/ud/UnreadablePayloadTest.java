package org.efaah.ud;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.efaah.cache.AddressHandle;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.QueuePairType;
import org.efaah.verbs.mock.MockConfig;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A payload whose memory is gone by the time the endpoint copies it into a send slot (a closed
 * arena's segment, Java 22 and later): the send or batch throws, nothing of it is posted, and no
 * slot nor AH reference is lost: the next sends go out and a flush ends. Before: the slots claimed
 * for the batch were never given back, and a flush waited out its whole timeout. On the mock's EFA
 * (SRD) and RoCE (UD) devices.
 */
class UnreadablePayloadTest {
    /** A 2-byte direct buffer over an arena already closed: its bounds read fine, its memory throws. */
    static ByteBuffer closedArenaBuffer() throws Exception {
        assumeTrue(Runtime.version().feature() >= 22, "java.lang.foreign.Arena is final from Java 22");
        Class<?> arenaType = Class.forName("java.lang.foreign.Arena");
        AutoCloseable arena = (AutoCloseable) arenaType.getMethod("ofShared").invoke(null);
        Object segment = arenaType.getMethod("allocate", long.class).invoke(arena, 2L);
        ByteBuffer b = (ByteBuffer) Class.forName("java.lang.foreign.MemorySegment").getMethod("asByteBuffer")
                .invoke(segment);
        arena.close();
        return b;
    }

    private static ByteBuffer[] payloads(int count) {
        ByteBuffer[] p = new ByteBuffer[count];
        for (int i = 0; i < count; i++) {
            p[i] = ByteBuffer.wrap(new byte[] {'P', (byte) i});
        }
        return p;
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void aPayloadThatCannotBeReadLosesNoSlot(boolean efa) throws Exception {
        ByteBuffer gone = closedArenaBuffer();
        try (MockEndpoints m = new MockEndpoints(MockConfig.builder().deviceCount(2).efa(efa).build())) {
            UdEndpoint.Options options = efa ? MockEndpoints.srd().withDepths(4, 64)
                    : UdEndpoint.Options.defaults().withTransport(QueuePairType.UD).withDepths(4, 64);
            UdEndpoint a = m.endpoint(m.pd(0), options);
            UdEndpoint b = m.endpoint(m.pd(1), options);
            try (AddressHandle toB = m.cache.acquire(a.pd(), AddressHandleAttributes.forGid(b.address().gid()))) {
                for (int round = 0; round < 3; round++) { // more rounds than slots: a lost slot would show
                    assertThrows(IllegalStateException.class, () -> a.send(toB, b.address(), gone));
                    ByteBuffer[] batch = payloads(4);
                    batch[2] = gone;
                    assertThrows(IllegalStateException.class, () -> a.sendBatch(toB, b.address(), batch, 0, 4));
                    assertEquals(2, batch[0].remaining(), "a payload consumed by a batch that posted nothing");
                    assertEquals(0, a.sendsInFlight(), "round " + round);
                    ByteBuffer[] good = payloads(4);
                    a.sendBatch(toB, b.address(), good, 0, 4);
                    assertTrue(a.flush(5, TimeUnit.SECONDS), "round " + round + ": every send completed");
                    List<Integer> got = new ArrayList<>();
                    while (got.size() < 4) {
                        assertTrue(b.receive(d -> got.add((int) d.payload().get(1)), 4 - got.size(), 5,
                                TimeUnit.SECONDS) > 0, "round " + round + ": so far " + got);
                    }
                    assertEquals(List.of(0, 1, 2, 3), got.stream().sorted().toList());
                }
                assertEquals(12, a.counters().sent(), a.counters().toString());
            }
        }
    }
}
