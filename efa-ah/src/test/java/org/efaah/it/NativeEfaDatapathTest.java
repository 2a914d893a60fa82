package org.efaah.it;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.HexFormat;
import java.util.concurrent.TimeUnit;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.ud.Datagram;
import org.efaah.ud.SourceOrigin;
import org.efaah.ud.TestDatagrams;
import org.efaah.ud.UdEndpoint;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.DeviceAttributes;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.QueuePairType;
import org.efaah.verbs.WorkCompletion;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Issue 9 item 6, on an EFA host only (vendor 0x1d0f; skipped elsewhere, saying why): a UD and an
 * SRD exchange between two endpoints on one EFA device, printing the figures that settle what
 * efa-datapath.md leaves unverified: {@code byte_len} and the first 64 bytes of a receive
 * buffer for a known payload, {@code slid} for an unknown and a known sender, and the GID read
 * from the completion.
 */
@Tag("native")
class NativeEfaDatapathTest {
    private Device device;
    private ProtectionDomain serverPd;
    private ProtectionDomain clientPd;
    private AddressHandleCache cache;

    @BeforeEach
    void open() {
        device = NativeDevice.open(NativeDevice.provider());
        Assumptions.assumeTrue(device.attributes().vendorId() == DeviceAttributes.AMAZON_VENDOR_ID,
                "EFA-only: " + device.name() + " has vendor id 0x" + Integer.toHexString(device.attributes().vendorId())
                        + ", not 0x1d0f");
        serverPd = device.allocatePd();
        clientPd = device.allocatePd();
        cache = AddressHandleCache.create(LeakDetection.PARANOID);
    }

    @AfterEach
    void close() {
        if (cache != null) {
            cache.close();
        }
        if (serverPd != null) {
            serverPd.close();
            clientPd.close();
        }
        if (device != null) {
            device.close();
        }
    }

    @ParameterizedTest
    @EnumSource(QueuePairType.class)
    void anExchangeOnEfaShowsTheReceiveLayoutAndHowSendersAreNamed(QueuePairType transport) {
        UdEndpoint.Options options = UdEndpoint.Options.defaults().withTransport(transport);
        byte[] known = new byte[64];
        for (int i = 0; i < known.length; i++) {
            known[i] = (byte) (0xA0 + i);
        }
        // Two PDs: the server's PD holds no AH for the client until it replies.
        try (UdEndpoint server = UdEndpoint.open(serverPd, cache, options);
             UdEndpoint client = UdEndpoint.open(clientPd, cache, options);
             AddressHandle toServer = cache.acquire(clientPd, AddressHandleAttributes.forGid(server.address().gid()))) {
            client.send(toServer, server.address(), ByteBuffer.wrap(known));
            Datagram first = server.receive(10, TimeUnit.SECONDS);
            assertNotNull(first);
            WorkCompletion wc = TestDatagrams.completion(first);
            byte[] head = new byte[64];
            System.arraycopy(TestDatagrams.area(first), 0, head, 0, 40);
            System.arraycopy(first.payload(), 0, head, 40, 24);
            NativeDevice.figure(String.format("EFA %s: byte_len %d for a %d-byte payload; wc_flags 0x%x; first 64 "
                            + "bytes of the receive buffer %s", transport, wc.byteLength, known.length, wc.wcFlags,
                    HexFormat.of().formatHex(head)));
            NativeDevice.figure(String.format("EFA %s: unknown sender: slid 0x%x, GID read %s (origin %s)", transport,
                    wc.slid, first.sourceGid(), first.origin()));
            assertEquals(client.address().gid(), first.sourceGid());
            assertArrayEquals(known, first.payload());
            try (AddressHandle back = server.acquireReplyAh(first)) {
                client.send(toServer, server.address(), ByteBuffer.wrap(known));
                Datagram second = server.receive(10, TimeUnit.SECONDS);
                assertNotNull(second);
                NativeDevice.figure(String.format("EFA %s: known sender: slid 0x%x (the server's AHN %d), origin %s",
                        transport, TestDatagrams.completion(second).slid, back.ahn(), second.origin()));
                assertEquals(SourceOrigin.AHN, second.origin());
                assertEquals(back.ahn(), second.sourceAhn());
                server.send(back, client.address(), ByteBuffer.wrap(new byte[] {1}));
                assertNotNull(client.receive(10, TimeUnit.SECONDS));
            }
            assertTrue(client.flush(10, TimeUnit.SECONDS));
            assertTrue(server.flush(10, TimeUnit.SECONDS));
        }
    }
}
