package org.efaah.ud;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.Gid;
import org.efaah.verbs.Grh;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** UD endpoints on the mock's in-memory fabric; the same tests run natively in the soft-RoCE VM. */
class UdEndpointTest {
    private final MockEndpoints f = new MockEndpoints(17);


    @AfterEach
    void closeAll() throws Exception {
        f.close();
        assertEquals(0, f.cache.stats().leaksReported(), "every handle was closed");
    }

    @Test
    void tenThousandDatagramsOfEverySizeArriveIntactAndComeBackOnTheReturnPath() {
        UdEndpoint a = f.endpoint(f.pd(0), UdEndpoint.Options.defaults());
        UdEndpoint b = f.endpoint(f.pd(1), UdEndpoint.Options.defaults());
        int mtu = a.maxMessageSize();
        assertEquals(a.pd().device().port(1).maxMessageSize(), mtu, "EFA: the port's max_msg_sz");
        SplittableRandom random = new SplittableRandom(1);
        try (AddressHandle toB = f.cache.acquire(a.pd(), AddressHandleAttributes.forGid(b.address().gid()))) {
            for (int i = 0; i < 10_000; i++) {
                int size = i < mtu ? i + 1 : 1 + random.nextInt(mtu);
                ByteBuffer sent = TestDatagrams.pattern(size, i);
                a.send(toB, b.address(), sent.duplicate());
                Datagram d = b.receive(5, TimeUnit.SECONDS);
                assertNotNull(d, "datagram " + i);
                assertArrayEquals(sent.duplicate().array(), d.payload(), "payload of datagram " + i);
                assertEquals(a.address().qpn(), d.sourceQpn());
                assertEquals(a.address().gid(), d.sourceGid());
                b.reply(d, ByteBuffer.wrap(d.payload()));
                Datagram echo = a.receive(5, TimeUnit.SECONDS);
                assertNotNull(echo, "echo " + i);
                assertArrayEquals(sent.array(), echo.payload());
            }
            assertTrue(a.flush(5, TimeUnit.SECONDS));
            assertTrue(b.flush(5, TimeUnit.SECONDS));
        }
        // One AH each way, however many messages: 10,000 look-ups of the return path were hits.
        assertEquals(2, f.cache.stats().hardwareCreates());
        assertTrue(f.cache.stats().hits() >= 9_999, "hits " + f.cache.stats().hits());
    }

    @Test
    void aServerAnswersSixteenClientsWithSixteenReturnPathAhs() {
        UdEndpoint server = f.endpoint(f.pd(0), UdEndpoint.Options.defaults());
        List<UdEndpoint> clients = new ArrayList<>();
        List<AddressHandle> toServer = new ArrayList<>();
        for (int c = 1; c <= 16; c++) {
            UdEndpoint client = f.endpoint(f.pd(c), UdEndpoint.Options.defaults());
            clients.add(client);
            toServer.add(f.cache.acquire(client.pd(), AddressHandleAttributes.forGid(server.address().gid())));
        }
        long createsBefore = f.cache.stats().hardwareCreates();
        for (int round = 0; round < 20; round++) {
            for (int c = 0; c < 16; c++) {
                clients.get(c).send(toServer.get(c), server.address(), ByteBuffer.wrap(new byte[] {(byte) c, (byte) round}));
            }
            for (int i = 0; i < 16; i++) {
                Datagram d = server.receive(5, TimeUnit.SECONDS);
                assertNotNull(d);
                server.reply(d, ByteBuffer.wrap(new byte[] {d.payload()[0], d.payload()[1], 42}));
            }
            for (int c = 0; c < 16; c++) {
                Datagram answer = clients.get(c).receive(5, TimeUnit.SECONDS);
                assertNotNull(answer, "client " + c + " round " + round);
                assertArrayEquals(new byte[] {(byte) c, (byte) round, 42}, answer.payload());
            }
        }
        assertEquals(16, f.cache.stats().hardwareCreates() - createsBefore, "16 return-path AHs, not 320");
        assertTrue(server.flush(5, TimeUnit.SECONDS));
        toServer.forEach(AddressHandle::close);
    }

    @Test
    void theAhOutlivesItsHandleWhileASendIsInFlight() {
        UdEndpoint a = f.endpoint(f.pd(0), UdEndpoint.Options.defaults());
        UdEndpoint b = f.endpoint(f.pd(1), UdEndpoint.Options.defaults());
        AddressHandle ah = f.cache.acquire(a.pd(), AddressHandleAttributes.forGid(b.address().gid()));
        a.send(ah, b.address(), ByteBuffer.wrap(new byte[] {1, 2, 3}));
        ah.close();
        assertEquals(1, a.sendsInFlight());
        assertEquals(1, f.mock.counters().liveAhs(), "the endpoint still holds the AH for the send in flight");
        assertTrue(a.flush(5, TimeUnit.SECONDS));
        assertEquals(0, f.mock.counters().liveAhs(), "released once the send completed");
        assertArrayEquals(new byte[] {1, 2, 3}, b.receive(5, TimeUnit.SECONDS).payload());
    }

    @Test
    void wrongPdOversizedPayloadAndClosedHandlesAreRefused() {
        UdEndpoint a = f.endpoint(f.pd(0), UdEndpoint.Options.defaults());
        ProtectionDomain other = f.pd(1);
        try (AddressHandle foreign = f.cache.acquire(other, AddressHandleAttributes.forGid(a.address().gid()))) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> a.send(foreign, a.address(), ByteBuffer.allocate(1)));
            assertTrue(e.getMessage().contains("another PD"), e.getMessage());
        }
        AddressHandle ah = f.cache.acquire(a.pd(), AddressHandleAttributes.forGid(a.address().gid()));
        int max = a.maxMessageSize();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> a.send(ah, a.address(), ByteBuffer.allocate(max + 1)));
        assertTrue(e.getMessage().startsWith("payload: " + (max + 1) + " bytes; valid 0.." + max), e.getMessage());
        ah.close();
        assertThrows(IllegalStateException.class, () -> a.send(ah, a.address(), ByteBuffer.allocate(1)));
        assertEquals(0, a.sendsInFlight());
    }

    @Test
    void thePortIsChosenByWithPortNumAndCheckedWholeThenAgainstTheDevice() {
        // Issue 17 item 8: -i/--ib-port needs a public way to choose the port.
        assertEquals(1, UdEndpoint.Options.defaults().withPortNum(1).portNum());
        assertEquals(255, UdEndpoint.Options.defaults().withPortNum(255).portNum());
        for (int bad : new int[] {0, -1, 256, Integer.MIN_VALUE, Integer.MAX_VALUE}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> UdEndpoint.Options.defaults().withPortNum(bad));
            assertEquals("port_num: " + bad + " is out of range; valid 1..255", e.getMessage());
        }
        // The mock's devices have port 1 only (phys_port_cnt 1).
        UdEndpoint.Options port2 = UdEndpoint.Options.defaults().withPortNum(2);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> f.endpoint(f.pd(0), port2));
        assertEquals("port_num: 2 is not a port of efa_0, which has 1 port (valid 1..1)", e.getMessage());
    }

    @Test
    void aWrongQkeyIsDroppedSilentlyAsOnTheWire() {
        UdEndpoint a = f.endpoint(f.pd(0), UdEndpoint.Options.defaults());
        UdEndpoint b = f.endpoint(f.pd(1), UdEndpoint.Options.defaults().withQkey(0x1234));
        try (AddressHandle ah = f.cache.acquire(a.pd(), AddressHandleAttributes.forGid(b.address().gid()))) {
            a.send(ah, b.address().qpn(), 0x4321, ByteBuffer.allocate(8));
            assertNull(b.receive(50, TimeUnit.MILLISECONDS));
            a.send(ah, b.address(), ByteBuffer.allocate(8));
            assertNotNull(b.receive(5, TimeUnit.SECONDS));
            assertTrue(a.flush(5, TimeUnit.SECONDS));
        }
    }

    @Test
    void addressesRoundTripAsTextAndBytes() {
        UdEndpoint a = f.endpoint(f.pd(0), UdEndpoint.Options.defaults());
        EndpointAddress address = a.address();
        assertEquals(address, EndpointAddress.parse(address.toText()));
        assertEquals(address, EndpointAddress.fromBytes(address.toBytes()));
        assertThrows(IllegalArgumentException.class, () -> EndpointAddress.parse("fe80::1/12"));
        assertThrows(IllegalArgumentException.class, () -> new EndpointAddress(address.gid(), 1 << 24, 0));
        assertThrows(IllegalArgumentException.class, () -> EndpointAddress.parse("fe80::1/0x1/0x80000000"));
    }

    @Test
    void closingTheEndpointReleasesEverythingAndTheDeviceCanClose() {
        ProtectionDomain pd = f.pd(0);
        UdEndpoint a = UdEndpoint.open(pd, f.cache, UdEndpoint.Options.defaults());
        AddressHandle ah = f.cache.acquire(pd, AddressHandleAttributes.forGid(a.address().gid()));
        a.send(ah, a.address(), ByteBuffer.allocate(3));
        ah.close();
        a.close();
        a.close();
        assertEquals(0, f.mock.counters().liveAhs());
        assertThrows(IllegalStateException.class, () -> a.receive(1, TimeUnit.MILLISECONDS));
        pd.close(); // no QP, MR or AH left to keep it busy
    }

    @Test
    void theSourceGidComesFromAnIpv6GrhOrFromTheIpv4HeaderOfRoceV2() {
        Gid source = Gid.parse("fe80::1234:5678");
        byte[] ipv6 = new byte[UdEndpoint.GRH_BYTES];
        ipv6[0] = 0x60;
        System.arraycopy(source.toBytes(), 0, ipv6, 8, Gid.LENGTH);
        assertEquals(source, Grh.sourceGid(ipv6));

        // RoCE v2 over IPv4 as rxe writes it: 20 zero bytes, then the IPv4 header from 10.9.0.11 to 10.9.0.1.
        byte[] ipv4 = new byte[UdEndpoint.GRH_BYTES];
        System.arraycopy(ipv4Header(new byte[] {10, 9, 0, 11}, new byte[] {10, 9, 0, 1}), 0, ipv4, 20, 20);
        assertEquals(Gid.parse("::ffff:10.9.0.11"), Grh.sourceGid(ipv4));

        // Stale IPv6 bytes in front (other RoCE NICs leave them undefined): the valid IPv4 header wins.
        byte[] stale = ipv4.clone();
        System.arraycopy(ipv6, 0, stale, 0, 20);
        assertEquals(Gid.parse("::ffff:10.9.0.11"), Grh.sourceGid(stale));

        // With an IPv6 version and a bad IPv4 checksum, bytes 20..39 are just the IPv6 addresses.
        byte[] notIpv4 = stale.clone();
        notIpv4[30] ^= 1;
        byte[] expected = new byte[Gid.LENGTH];
        System.arraycopy(notIpv4, 8, expected, 0, Gid.LENGTH);
        assertEquals(Gid.of(expected), Grh.sourceGid(notIpv4));
    }

    /** A 20-byte IPv4 header (UDP, TTL 64) with its checksum, written out by hand. */
    private static byte[] ipv4Header(byte[] from, byte[] to) {
        byte[] h = {0x45, 0, 0, 60, 0, 0, 0x40, 0, 64, 17, 0, 0, from[0], from[1], from[2], from[3], to[0], to[1],
            to[2], to[3]};
        int sum = 0;
        for (int i = 0; i < h.length; i += 2) {
            sum += ((h[i] & 0xFF) << 8) | (h[i + 1] & 0xFF);
        }
        while ((sum >>> 16) != 0) {
            sum = (sum & 0xFFFF) + (sum >>> 16);
        }
        h[10] = (byte) (~sum >>> 8);
        h[11] = (byte) ~sum;
        return h;
    }

    @Test
    void overRoceV2Ipv4TheSourceIsTheIpv4MappedSenderAndTheReplyReachesIt() {
        Gid server = Gid.parse("::ffff:10.9.0.1");
        Gid client = Gid.parse("::ffff:10.9.0.11");
        MockVerbsProvider roce = new MockVerbsProvider(MockConfig.builder().efa(false).deviceCount(1).gidTableLength(4)
                .gids(List.of(Gid.parse("fe80::1"), server, client)).build());
        try (Device device = Device.openFirst(roce);
             ProtectionDomain pd = device.allocatePd();
             AddressHandleCache roceCache = AddressHandleCache.builder().leakDetection(LeakDetection.PARANOID).build()) {
            try (UdEndpoint s = UdEndpoint.open(pd, roceCache, UdEndpoint.Options.defaults().withSgidIndex(1));
                 UdEndpoint c = UdEndpoint.open(pd, roceCache, UdEndpoint.Options.defaults().withSgidIndex(2));
                 AddressHandle toServer = roceCache.acquire(pd,
                         AddressHandleAttributes.builder().dgid(server).sgidIndex(2).build())) {
                c.send(toServer, s.address(), ByteBuffer.wrap(new byte[] {1, 2, 3}));
                Datagram d = s.receive(5, TimeUnit.SECONDS);
                assertNotNull(d);
                assertEquals(0, d.grh()[0], "the IPv4 layout, not an IPv6 header");
                assertEquals(client, d.sourceGid());
                AddressHandleAttributes back = s.replyAttributes(d);
                assertEquals(client, back.dgid());
                assertEquals(1, back.sgidIndex(), "answered from the GID it was sent to");
                s.reply(d, ByteBuffer.wrap(new byte[] {4}));
                Datagram answer = c.receive(5, TimeUnit.SECONDS);
                assertNotNull(answer);
                assertArrayEquals(new byte[] {4}, answer.payload());
                assertEquals(server, answer.sourceGid());
                assertTrue(s.flush(5, TimeUnit.SECONDS));
                assertTrue(c.flush(5, TimeUnit.SECONDS));
            }
        }
    }
}
