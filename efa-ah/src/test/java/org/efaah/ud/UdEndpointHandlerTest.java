package org.efaah.ud;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.efaah.cache.AddressHandle;
import org.efaah.verbs.AddressHandleAttributes;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The zero-copy receive (issue 21): {@link UdEndpoint#receive(Consumer, int, long, TimeUnit)}
 * and {@link UdEndpoint#poll}, a {@link DatagramView} valid only during its handler call, and the
 * sends that share one AH reference.
 */
class UdEndpointHandlerTest {
    private final MockEndpoints f = new MockEndpoints(3);

    @AfterEach
    void closeAll() throws Exception {
        f.close();
        assertEquals(0, f.cache.stats().leaksReported(), "every handle was closed");
    }

    private static ByteBuffer bytes(int... values) {
        ByteBuffer b = ByteBuffer.allocate(values.length);
        for (int v : values) {
            b.put((byte) v);
        }
        return b.flip();
    }

    private static byte[] array(ByteBuffer b) {
        byte[] a = new byte[b.remaining()];
        b.get(a);
        return a;
    }

    @Test
    void aHandlerReadsEachDatagramInPlaceInOrderUpToItsLimitAndEchoesIt() {
        UdEndpoint a = f.endpoint(f.pd(0), UdEndpoint.Options.defaults());
        UdEndpoint b = f.endpoint(f.pd(1), UdEndpoint.Options.defaults());
        try (AddressHandle toB = f.cache.acquire(a.pd(), AddressHandleAttributes.forGid(b.address().gid()))) {
            for (int i = 0; i < 5; i++) {
                a.send(toB, b.address(), bytes(i, 7, 7, i));
            }
            List<byte[]> seen = new ArrayList<>();
            Consumer<DatagramView> echo = d -> {
                assertEquals(4, d.length());
                assertEquals(a.address().qpn(), d.sourceQpn());
                assertEquals(a.address().gid(), d.sourceGid());
                assertEquals(SourceOrigin.COMPLETION_GID, d.origin(), "B has no AH to A when these arrive");
                assertTrue(d.payload().isReadOnly(), "the handler reads, it does not write the ring");
                seen.add(array(d.payload()));
                b.reply(d, d.payload());
            };
            assertEquals(3, b.receive(echo, 3, 5, TimeUnit.SECONDS), "up to the limit");
            assertEquals(2, b.poll(echo, 16), "the rest, without waiting");
            assertEquals(0, b.poll(echo, 16), "none left");
            for (int i = 0; i < 5; i++) {
                assertArrayEquals(new byte[] {(byte) i, 7, 7, (byte) i}, seen.get(i), "in arrival order");
                Datagram back = a.receive(5, TimeUnit.SECONDS);
                assertNotNull(back, "echo " + i);
                assertArrayEquals(seen.get(i), back.payload());
            }
            assertEquals(5, b.counters().received());
        }
    }

    @Test
    void aViewKeptPastItsCallRefusesUseAndACopyKeepsEverything() {
        UdEndpoint a = f.endpoint(f.pd(0), UdEndpoint.Options.defaults());
        UdEndpoint b = f.endpoint(f.pd(1), UdEndpoint.Options.defaults());
        try (AddressHandle toB = f.cache.acquire(a.pd(), AddressHandleAttributes.forGid(b.address().gid()))) {
            a.send(toB, b.address(), bytes(1, 2, 3));
            DatagramView[] kept = new DatagramView[1];
            Datagram[] copied = new Datagram[1];
            assertEquals(1, b.receive(d -> {
                kept[0] = d;
                copied[0] = d.copy();
            }, 1, 5, TimeUnit.SECONDS));
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> kept[0].payload());
            assertTrue(e.getMessage().contains("after its handler returned"), e.getMessage());
            assertThrows(IllegalStateException.class, () -> kept[0].sourceQpn());
            assertArrayEquals(new byte[] {1, 2, 3}, copied[0].payload());
            assertEquals(a.address().gid(), copied[0].sourceGid());
            assertEquals(a.address().qpn(), copied[0].sourceQpn());
            b.reply(copied[0], ByteBuffer.wrap(copied[0].payload()));
            assertArrayEquals(new byte[] {1, 2, 3}, a.receive(5, TimeUnit.SECONDS).payload());
        }
    }

    @Test
    void aHandlerThatThrowsLosesNothingAfterItAndTheSlotsGoBackToTheRing() {
        UdEndpoint.Options small = UdEndpoint.Options.defaults().withDepths(64, 8);
        UdEndpoint a = f.endpoint(f.pd(0), UdEndpoint.Options.defaults());
        UdEndpoint b = f.endpoint(f.pd(1), small);
        try (AddressHandle toB = f.cache.acquire(a.pd(), AddressHandleAttributes.forGid(b.address().gid()))) {
            for (int i = 0; i < 4; i++) {
                a.send(toB, b.address(), bytes(i));
            }
            List<Integer> seen = new ArrayList<>();
            RuntimeException thrown = new IllegalStateException("handler failed");
            RuntimeException e = assertThrows(RuntimeException.class, () -> b.receive(d -> {
                seen.add((int) d.payload().get(0));
                if (seen.size() == 2) {
                    throw thrown;
                }
            }, 16, 5, TimeUnit.SECONDS));
            assertSame(thrown, e);
            assertEquals(2, b.poll(d -> seen.add((int) d.payload().get(0)), 16), "the two after it, kept");
            assertEquals(List.of(0, 1, 2, 3), seen);
            // Every one of the 8 slots is back in the ring: 3 rounds of 8 arrive whole.
            for (int round = 0; round < 3; round++) {
                for (int i = 0; i < 8; i++) {
                    a.send(toB, b.address(), bytes(i));
                }
                int[] got = {0};
                while (got[0] < 8) {
                    assertTrue(b.receive(d -> got[0]++, 16, 5, TimeUnit.SECONDS) > 0, "round " + round);
                }
            }
        }
    }

    @Test
    void aLimitBelowOneIsRefusedBeforeAnythingIsPolled() {
        UdEndpoint b = f.endpoint(f.pd(1), UdEndpoint.Options.defaults());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> b.poll(d -> { }, 0));
        assertEquals("limit: 0; valid 1..2147483647", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> b.receive(d -> { }, -1, 1, TimeUnit.SECONDS));
        assertThrows(NullPointerException.class, () -> b.poll(null, 1));
    }

    @Test
    void sendsThroughOneAhHoldOneReferenceUntilTheLastCompletes() {
        UdEndpoint a = f.endpoint(f.pd(0), UdEndpoint.Options.defaults());
        UdEndpoint b = f.endpoint(f.pd(1), UdEndpoint.Options.defaults());
        UdEndpoint c = f.endpoint(f.pd(2), UdEndpoint.Options.defaults());
        AddressHandle toB = f.cache.acquire(a.pd(), AddressHandleAttributes.forGid(b.address().gid()));
        AddressHandle toC = f.cache.acquire(a.pd(), AddressHandleAttributes.forGid(c.address().gid()));
        for (int i = 0; i < 10; i++) {
            a.send(i % 2 == 0 ? toB : toC, i % 2 == 0 ? b.address() : c.address(), bytes(i));
        }
        toB.close();
        toC.close();
        assertEquals(10, a.sendsInFlight());
        assertEquals(2, f.mock.counters().liveAhs(), "both AHs held for their sends in flight");
        assertTrue(a.flush(5, TimeUnit.SECONDS));
        assertEquals(0, f.mock.counters().liveAhs(), "released once the last send through each completed");
        int[] got = {0};
        while (got[0] < 5) {
            assertTrue(b.receive(d -> got[0]++, 16, 5, TimeUnit.SECONDS) > 0);
        }
        assertEquals(5, c.poll(d -> { }, 16));
    }
}
