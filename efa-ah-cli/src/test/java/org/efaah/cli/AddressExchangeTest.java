package org.efaah.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.efaah.ud.EndpointAddress;
import org.efaah.ud.UdEndpoint;
import org.efaah.verbs.Gid;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 21 item 4: the TCP address exchange is {@code ibv_ud_pingpong}'s (rdma-core
 * {@code libibverbs/examples/ud_pingpong.c}), byte for byte and in its order, and the server
 * survives clients that send garbage, an endless line or nothing: each is dropped with one line
 * while other clients are served. The peers here are written as the C tool behaves.
 */
class AddressExchangeTest {
    private static final Pattern MESSAGE = Pattern.compile("[0-9a-f]{4}:[0-9a-f]{6}:[0-9a-f]{6}:[0-9a-f]{32}\0");
    private static final EndpointAddress SERVER = new EndpointAddress(Gid.parse("fe80::1:2:3:4"), 0x1a2b3c,
            UdEndpoint.DEFAULT_QKEY);
    private static final EndpointAddress CLIENT = new EndpointAddress(Gid.parse("::ffff:10.0.0.7"), 0x000456,
            UdEndpoint.DEFAULT_QKEY);
    /** What the C client writes for {@link #CLIENT}: sprintf("%04x:%06x:%06x:%s") of LID 0, a PSN, the wire GID. */
    private static final byte[] C_CLIENT_MESSAGE = ascii("0000:000456:a1b2c3:00000000000000000000ffff0a000007\0");

    private final List<EndpointAddress> clients = new CopyOnWriteArrayList<>();
    private final List<String> dropped = new CopyOnWriteArrayList<>();
    private AddressExchange.Server server;

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    private int serve(int timeoutMillis) throws IOException {
        server = new AddressExchange.Server(0, SERVER, timeoutMillis, (a, from) -> clients.add(a), dropped::add);
        return server.port();
    }

    @AfterEach
    void close() throws IOException {
        if (server != null) {
            server.close();
        }
    }

    private static byte[] readExactly(InputStream in, int n) throws IOException {
        byte[] b = in.readNBytes(n);
        assertEquals(n, b.length, "bytes before EOF");
        return b;
    }

    /** The C client: its 52 bytes in one write, the server's 52, then "done" and a NUL. */
    private static byte[] actAsTheCClient(int port) throws IOException {
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(10_000);
            s.getOutputStream().write(C_CLIENT_MESSAGE);
            byte[] answer = readExactly(s.getInputStream(), 52);
            s.getOutputStream().write(ascii("done\0"));
            return answer;
        }
    }

    private void awaitClients(int n) throws InterruptedException {
        for (int i = 0; i < 200 && clients.size() < n; i++) {
            Thread.sleep(25);
        }
        assertEquals(n, clients.size(), "clients served; dropped: " + dropped);
    }

    private void awaitDropped(int n) throws InterruptedException {
        for (int i = 0; i < 400 && dropped.size() < n; i++) {
            Thread.sleep(25);
        }
        assertEquals(n, dropped.size(), dropped::toString);
    }

    @Test
    void theServerSpeaksTheCToolsFormatInItsOrder() throws Exception {
        int port = serve(5_000);
        byte[] answer = actAsTheCClient(port);
        assertTrue(MESSAGE.matcher(new String(answer, StandardCharsets.US_ASCII)).matches(),
                new String(answer, StandardCharsets.US_ASCII));
        assertEquals("0000:1a2b3c:000000:fe800000000000000001000200030004\0", new String(answer, StandardCharsets.US_ASCII));
        awaitClients(1);
        assertEquals(CLIENT, clients.get(0));
        assertEquals(List.of(), dropped);
    }

    @Test
    void theClientSpeaksTheCToolsFormatInItsOrder() throws Exception {
        try (ServerSocket c = new ServerSocket(0)) {
            CompletableFuture<byte[][]> cServer = CompletableFuture.supplyAsync(() -> {
                try (Socket s = c.accept()) {
                    s.setSoTimeout(10_000);
                    byte[] theirs = readExactly(s.getInputStream(), 52); // the C server reads first
                    s.getOutputStream().write(ascii("0000:1a2b3c:0f0f0f:fe800000000000000001000200030004\0"));
                    byte[] done = readExactly(s.getInputStream(), 5);
                    return new byte[][] {theirs, done, s.getInputStream().readAllBytes()};
                } catch (IOException e) {
                    throw new IllegalStateException(e);
                }
            });
            EndpointAddress got = AddressExchange.connect(new AddressExchange.Target("127.0.0.1", c.getLocalPort()),
                    CLIENT, 10_000);
            assertEquals(SERVER, got);
            byte[][] seen = cServer.get(10, TimeUnit.SECONDS);
            assertEquals("0000:000456:000000:00000000000000000000ffff0a000007\0",
                    new String(seen[0], StandardCharsets.US_ASCII));
            assertArrayEquals(ascii("done\0"), seen[1]);
            assertEquals(0, seen[2].length, "nothing after 'done'");
        }
    }

    @Test
    void garbageIsDroppedWithOneLine() throws Exception {
        int port = serve(5_000);
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.getOutputStream().write(ascii("GET / HTTP/1.1\r\nHost: x\r\n\r\n" + "x".repeat(30)));
            awaitDropped(1);
        }
        assertTrue(dropped.get(0).contains("not an ibv_ud_pingpong address") && dropped.get(0).contains("'GET / HTTP"),
                dropped::toString);
        actAsTheCClient(port);
        awaitClients(1);
        assertEquals(1, dropped.size());
    }

    @Test
    void anEndlessLineCostsFiftyTwoBytesAndOneLine() throws Exception {
        int port = serve(5_000);
        try (Socket s = new Socket("127.0.0.1", port)) {
            OutputStream out = s.getOutputStream();
            byte[] chunk = ascii("A".repeat(65536));
            long sent = 0;
            try {
                for (int i = 0; i < 1024; i++) { // up to 64 MiB, no newline
                    out.write(chunk);
                    sent += chunk.length;
                }
            } catch (IOException closedByServer) {
                // the server stopped reading after 52 bytes and closed
            }
            awaitDropped(1);
            assertTrue(sent < 64L << 20 || dropped.size() == 1, "sent " + sent);
        }
        assertTrue(dropped.get(0).contains("'AAAAAAAAAAAAAAAAAAAAAAAA'..."), dropped::toString);
        actAsTheCClient(port);
        awaitClients(1);
    }

    @Test
    void aSilentClientHoldsUpNoOtherAndIsDroppedAtTheDeadline() throws Exception {
        int port = serve(1_500);
        try (Socket silent = new Socket("127.0.0.1", port)) {
            Thread.sleep(100);
            long t0 = System.nanoTime();
            actAsTheCClient(port);
            awaitClients(1);
            assertTrue(System.nanoTime() - t0 < TimeUnit.MILLISECONDS.toNanos(1_000),
                    "the second client waited behind the silent one");
            awaitDropped(1);
            assertTrue(dropped.get(0).contains("no address in time (0 of 52 bytes came)"), dropped::toString);
            assertEquals(-1, silent.getInputStream().read(), "the server closed the silent connection");
        }
    }

    @Test
    void aClientThatStopsAfterItsAddressOrSendsNoDoneIsDropped() throws Exception {
        int port = serve(5_000);
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.getOutputStream().write(C_CLIENT_MESSAGE);
            readExactly(s.getInputStream(), 52);
            s.getOutputStream().write(ascii("nope\0"));
            awaitDropped(1);
        }
        assertTrue(dropped.get(0).contains("'nope\\x00' where 'done'"), dropped::toString);
        assertEquals(List.of(), clients);
    }
}
