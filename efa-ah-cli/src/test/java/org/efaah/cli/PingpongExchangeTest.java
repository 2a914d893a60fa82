package org.efaah.cli;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;

/**
 * Issue 12 case 6: the address exchange over TCP, as ibv_ud_pingpong does it, on loopback. On the
 * mock each process (here: each command) has its own fabric, so the exchange succeeds and the
 * datagrams then find no server: the client must fail, never report success. The datagram path
 * across the exchange is checked on a real device by {@code PingpongNativeTest}.
 */
class PingpongExchangeTest {

    /**
     * A server running on a thread; {@link #port()} once it listens. On the mock it has a mock of its
     * own, as in a process of its own: a server on the mock is otherwise refused, no client reaching it.
     */
    static final class Server implements AutoCloseable {
        final StringWriter out = new StringWriter();
        final StringWriter err = new StringWriter();
        final int[] exit = {-1};
        final Thread thread;

        Server(String... args) {
            this(new MockVerbsProvider(), args);
        }

        /** A server on {@code mock}, which the test may share to reach it. */
        Server(MockVerbsProvider mock, String... args) {
            thread = new Thread(() -> {
                exit[0] = Main.run(new PrintWriter(out, true), new PrintWriter(err, true), Map.of(), mock, args);
            }, "test-server");
            thread.start();
        }

        int port() throws InterruptedException {
            Pattern p = Pattern.compile("listening on TCP port (\\d+)");
            for (int i = 0; i < 600; i++) {
                Matcher m = p.matcher(out.toString());
                if (m.find()) {
                    return Integer.parseInt(m.group(1));
                }
                assertTrue(thread.isAlive(), () -> "server ended: " + out + err);
                Thread.sleep(50);
            }
            throw new AssertionError("server never listened: " + out + err);
        }

        @Override
        public void close() throws InterruptedException {
            thread.join(30_000);
        }
    }

    @Test
    void theClientGetsTheServersAddressOverTcpAndFailsHonestlyWithoutAFabric() throws Exception {
        try (Server server = new Server("pingpong", "--provider", "mock", "--server", "--port", "0", "--timeout", "3")) {
            int port = server.port();
            Cli c = Cli.run("pingpong", "--provider", "mock", "--connect", "127.0.0.1:" + port, "-n", "3",
                    "--timeout", "2").expect(1).oneLine("client");
            assertTrue(c.out().contains("at 127.0.0.1:" + port), c::toString);
            assertFalse(c.out().contains("verified"), c::toString);
            server.close();
            assertTrue(server.err.toString().contains("pingpong server: client fe80::"), server.err::toString);
        }
    }

    /** Issue 21 item 4: rdma-core's ibv_ud_pingpong as the client: 52 bytes first, then "done". */
    @Test
    void theServerCommandAnswersTheCToolsExchange() throws Exception {
        try (Server server = new Server("pingpong", "--provider", "mock", "--server", "--port", "0", "--timeout", "3")) {
            int port = server.port();
            byte[] answer;
            try (java.net.Socket s = new java.net.Socket("127.0.0.1", port)) {
                s.setSoTimeout(10_000);
                s.getOutputStream().write("0000:000456:a1b2c3:00000000000000000000ffff0a000007\0"
                        .getBytes(java.nio.charset.StandardCharsets.US_ASCII));
                answer = s.getInputStream().readNBytes(52);
                s.getOutputStream().write(new byte[] {'d', 'o', 'n', 'e', 0});
            }
            String text = new String(answer, java.nio.charset.StandardCharsets.US_ASCII);
            assertTrue(text.matches("0000:[0-9a-f]{6}:000000:fe80[0-9a-f]{28}\0"), text);
            server.close();
            assertTrue(server.err.toString().contains("pingpong server: client ::ffff:10.0.0.7/0x000456/0x11111111 from"),
                    server.err::toString);
            // 'done' and then the close: the normal end, not a client that went away.
            assertFalse(server.err.toString().contains("went away"), server.err::toString);
        }
    }

    /** Issue 21 item 4: rdma-core's ibv_ud_pingpong as the server: it reads 52 bytes, answers, reads "done". */
    @Test
    void theClientCommandSpeaksToTheCToolsServer() throws Exception {
        try (java.net.ServerSocket c = new java.net.ServerSocket(0)) {
            java.util.concurrent.CompletableFuture<String> seen = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                try (java.net.Socket s = c.accept()) {
                    s.setSoTimeout(10_000);
                    byte[] theirs = s.getInputStream().readNBytes(52);
                    s.getOutputStream().write("0000:1a2b3c:0f0f0f:fe800000000000000001000200030004\0"
                            .getBytes(java.nio.charset.StandardCharsets.US_ASCII));
                    byte[] done = s.getInputStream().readNBytes(5);
                    return new String(theirs, java.nio.charset.StandardCharsets.US_ASCII) + "|"
                            + new String(done, java.nio.charset.StandardCharsets.US_ASCII);
                } catch (java.io.IOException e) {
                    return e.toString();
                }
            });
            Cli client = Cli.run("pingpong", "--provider", "mock", "--connect", "127.0.0.1:" + c.getLocalPort(),
                    "-n", "2", "--timeout", "2").expect(1);
            String exchange = seen.get(10, java.util.concurrent.TimeUnit.SECONDS);
            assertTrue(exchange.matches("0000:[0-9a-f]{6}:000000:fe80[0-9a-f]{28}\0\\|done\0"), exchange);
            assertTrue(client.out().contains("fe80::1:2:3:4/0x1a2b3c"), client::toString);
        }
    }

    @Test
    void noServerAtTheTcpAddressIsOneLine() throws Exception {
        int closedPort;
        try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
            closedPort = s.getLocalPort();
        }
        Cli.run("pingpong", "--provider", "mock", "--connect", "127.0.0.1:" + closedPort, "--timeout", "2")
                .expect(1).oneLine("no pingpong server at 127.0.0.1:" + closedPort);
    }

    @Test
    void badTargetsAreUsageErrors() {
        Cli.run("pingpong", "--connect", "localhost:99999").expect(2).oneLine("--connect: port '99999'");
        Cli.run("pingpong", "--connect", "[::1").expect(2).oneLine("--connect:", "']'");
        Cli.run("pingpong", "--connect", "fe80::1/0x100").expect(2).oneLine("--connect:", "GID/QPN/QKEY");
    }

    @Test
    void targetForms() {
        assertTrue(AddressExchange.Target.parse("host", 18515).equals(new AddressExchange.Target("host", 18515)));
        assertTrue(AddressExchange.Target.parse("10.0.0.1:7", 18515).equals(new AddressExchange.Target("10.0.0.1", 7)));
        assertTrue(AddressExchange.Target.parse("[fe80::1]:9", 18515).equals(new AddressExchange.Target("fe80::1", 9)));
        assertTrue(AddressExchange.Target.parse("fe80::1", 18515).equals(new AddressExchange.Target("fe80::1", 18515)));
    }
}
