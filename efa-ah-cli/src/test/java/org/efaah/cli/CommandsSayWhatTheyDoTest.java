package org.efaah.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.ud.Datagram;
import org.efaah.ud.EndpointAddress;
import org.efaah.ud.UdEndpoint;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.VerbsProviders;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** Issue 27, "Why" 5: the commands say what they do. */
class CommandsSayWhatTheyDoTest {

    private static void assumeNoDevice() {
        Assumptions.assumeFalse(VerbsProviders.factory("native").isAvailable(), "this host has an RDMA device");
    }

    @Test
    void aDeviceThatIsNotThereIsAUsageErrorInEveryCommand() {
        for (String command : new String[] {"devices", "pingpong", "stream", "health"}) {
            Cli.run(command, "--provider", "mock", "-d", "nosuch").expect(2)
                    .oneLine("--ib-dev: 'nosuch' is not a device of the mock provider; present: efa_0");
        }
    }

    @Test
    void underAutoTheFirstLineSaysTheMockRunsAndWhy() {
        assumeNoDevice();
        String[][] commands = {{"pingpong", "-n", "1"}, {"stream", "-n", "1"}, {"health"},
            {"demo", "-t", "1", "-r", "1", "-n", "1"}};
        for (String[] command : commands) {
            Cli c = Cli.run(command);
            String first = c.out().lines().findFirst().orElse("");
            assertTrue(first.startsWith("provider mock (native unavailable: "), c::toString);
            String[] json = java.util.Arrays.copyOf(command, command.length + 1);
            json[command.length] = "--json";
            Cli j = Cli.run(json);
            assertTrue(j.out().startsWith("{"), j::toString);
            assertTrue(j.err().startsWith("efa-ah " + command[0] + ": provider mock (native unavailable: "), j::toString);
        }
    }

    @Test
    void aServerOnTheMockRefusesOnOneLine() {
        assumeNoDevice();
        for (String command : new String[] {"pingpong", "stream"}) {
            Cli.run(command, "--server", "--port", "0").expect(2).oneLine("--server: nothing outside this process can "
                    + "reach a server on the mock provider (native unavailable: ", "without --server");
            Cli.run(command, "--provider", "mock", "--server", "--port", "0").expect(2)
                    .oneLine("--server: nothing outside this process can reach a server on the mock provider;");
        }
    }

    @Test
    void aRateOverTooShortATimeIsReportedSoNotInvented() {
        // One datagram has no time between arrivals: the receiver's rate was 1,000,000,000 messages/s.
        Cli c = Cli.run("stream", "--provider", "mock", "-n", "1").expect(0);
        assertFalse(c.out().contains("1,000,000,000"), c::toString);
        assertTrue(c.out().contains("received 1 datagrams of 1 sent, 64 bytes, in 0.000 s: too short for a rate"),
                c::toString);
        Cli j = Cli.run("stream", "--provider", "mock", "-n", "1", "--json").expect(0);
        assertTrue(j.out().contains("\"receive_messages_per_s\":null,\"receive_mb_per_s\":null"), j::toString);
        assertNull(Rates.perSecond(1, 0));
        assertNull(Rates.perSecond(1, Rates.MIN_NANOS - 1));
        assertEquals(1000.0, Rates.perSecond(1, Rates.MIN_NANOS));
        assertEquals("too short for a rate (1 round trip(s) in 45.2 µs; a rate needs at least 1 ms)",
                Rates.tooShort(45_200, "1 round trip(s)"));
    }

    /**
     * A server given -n ends after that many round trips with 0, as ibv_ud_pingpong's does: its
     * client (here, its datagrams: it sends no goodbye) stops at -n. The server waited --timeout for a
     * goodbye, then exited 1.
     */
    @Test
    void aServerGivenNEndsAfterThatManyRoundTrips() throws Exception {
        MockVerbsProvider mock = new MockVerbsProvider();
        try (PingpongExchangeTest.Server server = new PingpongExchangeTest.Server(mock, "pingpong", "--provider", "mock",
                "--server", "--port", "0", "-n", "5", "--timeout", "20")) {
            server.port();
            EndpointAddress address = serverAddress(server);
            try (Device d = Device.openFirst(mock); AddressHandleCache cache = AddressHandleCache.create()) {
                ProtectionDomain pd = d.allocatePd();
                try (UdEndpoint client = UdEndpoint.open(pd, cache, UdEndpoint.Options.defaults());
                     AddressHandle ah = cache.acquire(pd, AddressHandleAttributes.forGid(address.gid()))) {
                    for (int i = 0; i < 5; i++) {
                        client.send(ah, address, ByteBuffer.wrap(new byte[] {0x7b, (byte) i}));
                        Datagram echo = client.receive(10, TimeUnit.SECONDS);
                        assertNotNull(echo, "no echo of " + i);
                    }
                }
                cache.close();
                pd.close();
            }
            long start = System.nanoTime();
            server.thread.join(10_000);
            long waited = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start);
            assertEquals(0, server.exit[0], () -> server.out + "\n" + server.err);
            assertTrue(waited < 5, () -> "ended after " + waited + " s, not after the 5th round trip");
            assertTrue(server.out.toString().contains("server: answered 5 datagrams"), server.out::toString);
        }
    }

    /** Without -n, one client's goodbye ends its session: the server ends with 0 at once. */
    @Test
    void aClientsGoodbyeEndsItsSession() throws Exception {
        MockVerbsProvider mock = new MockVerbsProvider();
        try (PingpongExchangeTest.Server server = new PingpongExchangeTest.Server(mock, "pingpong", "--provider", "mock",
                "--server", "--port", "0", "--timeout", "20")) {
            int port = server.port();
            Cli.runOn(mock, "pingpong", "--provider", "mock", "--connect", "127.0.0.1:" + port, "-n", "7").expect(0);
            server.thread.join(10_000);
            assertEquals(0, server.exit[0], () -> server.out + "\n" + server.err);
            assertTrue(server.out.toString().contains("server: answered 7 datagrams"), server.out::toString);
        }
    }

    /**
     * Ctrl-C interrupts the command's thread (Main's shutdown hook): a client waiting for the
     * server's address over TCP stops at once with 130. A plain socket's read ignored the interrupt
     * until --timeout.
     */
    @Test
    void ctrlCEndsAWaitForTheServersAddressAtOnce() throws Exception {
        try (java.net.ServerSocket silent = new java.net.ServerSocket(0)) { // takes the connection, never answers
            for (String command : new String[] {"pingpong", "stream"}) {
                Cli[] result = new Cli[1];
                Thread t = new Thread(() -> result[0] = Cli.run(command, "--provider", "mock", "--connect",
                        "127.0.0.1:" + silent.getLocalPort(), "--timeout", "60"), "test-client");
                t.start();
                Thread.sleep(1000);
                t.interrupt();
                t.join(3000);
                assertFalse(t.isAlive(), command + " still waits 3 s after the interrupt");
                result[0].expect(Main.INTERRUPTED).oneLine("interrupted");
            }
        }
    }

    private static EndpointAddress serverAddress(PingpongExchangeTest.Server server) {
        Matcher m = Pattern.compile("server address: (\\S+)").matcher(server.out.toString());
        assertTrue(m.find(), server.out::toString);
        return EndpointAddress.parse(m.group(1));
    }
}
