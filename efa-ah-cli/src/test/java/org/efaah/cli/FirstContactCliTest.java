package org.efaah.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.efaah.verbs.VerbsProviders;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Issue 17, the command line's cases 4 (pingpong's server), 7 (devices), 8 (consistency) and 9 (ranges). */
class FirstContactCliTest {

    @AfterEach
    void clear() {
        System.clearProperty("efaah.mock.failureErrno");
    }

    private static boolean nativeAvailable() {
        return VerbsProviders.factory("native").isAvailable();
    }

    // ---- 4: pingpong's server

    @Test
    void aServerWaitsForItsFirstClientBeyondTheOldTenSecondsAndCtrlCEndsIt130() throws Exception {
        try (PingpongExchangeTest.Server server = new PingpongExchangeTest.Server("pingpong", "--provider", "mock",
                "--server", "--port", "0", "--progress-every", "0.5")) {
            server.port();
            Thread.sleep(11_500);
            assertTrue(server.thread.isAlive(), () -> "gave up without a client:\n" + server.out + server.err);
            server.thread.interrupt();
            server.close();
            assertEquals(Main.INTERRUPTED, server.exit[0], () -> server.out + "\n" + server.err);
            assertTrue(server.out.toString().contains("interrupted after answering 0 datagrams"), server.out::toString);
            // It counts what it knows: datagrams answered, never the client's -n.
            assertTrue(server.err.toString().contains("pingpong server: 0 datagrams answered"), server.err::toString);
            assertFalse(server.err.toString().contains(" of 10,000"), server.err::toString);
        }
    }

    /**
     * Issue 17 item 4, "notices the client's TCP connection closing": a client that has the
     * server's address and closes (or resets) its connection before 'done' went away; the server
     * says so at once, long before its --timeout, and waits for the next client; when none comes it
     * does not claim that no client came. ('done' and then the close is the normal end: see
     * PingpongExchangeTest.theServerCommandAnswersTheCToolsExchange.)
     */
    @Test
    void aClientThatEndsItsConnectionBeforeDoneWentAwayAndTheServerSaysSoAtOnce() throws Exception {
        try (PingpongExchangeTest.Server server = new PingpongExchangeTest.Server("pingpong", "--provider", "mock",
                "--server", "--port", "0", "--timeout", "20")) {
            int port = server.port();
            long start = System.nanoTime();
            exchangeAndLeave(port, "0000:000456:000000:00000000000000000000ffff0a000007\0", false);
            awaitErr(server, "pingpong server: the client ::ffff:10.0.0.7/0x000456/0x11111111 from /127.0.0.1:");
            exchangeAndLeave(port, "0000:000457:000000:00000000000000000000ffff0a000008\0", true);
            awaitErr(server, "pingpong server: the client ::ffff:10.0.0.8/0x000457/0x11111111 from /127.0.0.1:");
            long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start);
            assertTrue(seconds < 10, "took " + seconds + " s, as if waiting out --timeout 20");
            assertTrue(server.thread.isAlive(), () -> "the server should wait for the next client:\n" + server.err);
            String err = server.err.toString();
            assertTrue(err.contains("went away before 'done': the connection closed after 0 of the 5 bytes of 'done'")
                    && err.contains("went away before 'done': the connection was reset after 0 of the 5 bytes"), err);
            assertEquals(2, err.lines().filter(l -> l.contains("went away")).count(), err);
            server.thread.interrupt();
            server.close();
            assertEquals(Main.INTERRUPTED, server.exit[0], () -> server.out + "\n" + server.err);
        }
        // With a shorter --timeout, the wait for the next client ends without saying no client came.
        try (PingpongExchangeTest.Server server = new PingpongExchangeTest.Server("pingpong", "--provider", "mock",
                "--server", "--port", "0", "--timeout", "2")) {
            exchangeAndLeave(server.port(), "0000:000456:000000:00000000000000000000ffff0a000007\0", false);
            server.close();
            assertEquals(1, server.exit[0], () -> server.out + "\n" + server.err);
            String err = server.err.toString();
            assertTrue(err.contains("no other client came in 2 s (--timeout) after the client ::ffff:10.0.0.7/0x000456/"
                    + "0x11111111 from /127.0.0.1:"), err);
            assertFalse(err.contains("no client came"), err);
        }
    }

    /** ibv_ud_pingpong's client up to the server's answer; then a close, or a reset, instead of 'done'. */
    private static void exchangeAndLeave(int port, String address, boolean reset) throws Exception {
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(10_000);
            s.getOutputStream().write(address.getBytes(StandardCharsets.US_ASCII));
            assertEquals(52, s.getInputStream().readNBytes(52).length);
            if (reset) {
                s.setSoLinger(true, 0); // close() sends a RST
            }
        }
    }

    private static void awaitErr(PingpongExchangeTest.Server server, String text) throws InterruptedException {
        for (int i = 0; i < 200 && !server.err.toString().contains(text); i++) {
            Thread.sleep(25);
        }
        assertTrue(server.err.toString().contains(text), () -> "no '" + text + "' in:\n" + server.err);
    }

    /**
     * After a client's exchange ('done' included) the server waits at most --timeout for its
     * datagrams, then names the client it heard nothing from; it never says no client came. (After
     * 'done' the close of the connection says nothing: ibv_ud_pingpong's client closes it right
     * after 'done', as ours does.)
     */
    @Test
    void aServerWhoseClientSendsNothingNamesItAndNeverSaysNoClientCame() throws Exception {
        try (PingpongExchangeTest.Server server = new PingpongExchangeTest.Server("pingpong", "--provider", "mock",
                "--server", "--port", "0", "--timeout", "3")) {
            int port = server.port();
            // On the mock no datagram reaches another process (here each command's mock even gives the two
            // endpoints one address): the client fails, and the server hears nothing from it.
            Cli.run("pingpong", "--provider", "mock", "--connect", "127.0.0.1:" + port, "-n", "3", "--timeout", "1")
                    .expect(1).oneLine("mock provider joins the endpoints of one process");
            server.close();
            assertFalse(server.thread.isAlive(), "the server still waits for a client that sent nothing");
            assertEquals(1, server.exit[0], () -> server.out + "\n" + server.err);
            String err = server.err.toString();
            assertTrue(err.contains("no datagram in 3 s after 0 from the client"), err);
            assertFalse(err.contains("no client came"), err);
        }
    }

    @Test
    void helpSaysWhichPingpongFormsRunOnTheMock() {
        String help = Cli.run("pingpong", "--help").expect(0).out().replaceAll("\\s+", " ");
        assertTrue(help.contains("On the mock provider only the one-process form (neither --server nor --connect) "
                + "can work"), help);
    }

    // ---- 7: devices

    @Test
    void autoWithoutADeviceSaysNoRdmaDevicesInsteadOfListingTheMocks() {
        assumeFalse(nativeAvailable(), "this host has an RDMA device");
        Cli c = Cli.run("devices").expect(1).oneLine("no RDMA devices", "native unavailable", "--provider mock");
        assertFalse(c.out().contains("efa_0"), c::toString);
    }

    @Test
    void everyMockDeviceIsMarkedOnItsOwnLineAndMtusReadAsIbvDevinfo() {
        Cli c = Cli.run("devices", "--provider", "mock", "--mock-devices", "3").expect(0);
        assertEquals(3, c.out().split("hca_id:\t", -1).length - 1, c::toString);
        assertEquals(3, c.out().split("\n\tmock:\t\t\tyes", -1).length - 1, c::toString);
        assertTrue(c.out().matches("(?s).*active_mtu:\t\t\\d+ \\([1-5]\\)\n.*"), c::toString);
        assertEquals("1024 (3)", DevicesCommand.mtu(1024));
        assertEquals("4096 (5)", DevicesCommand.mtu(4096));
        assertEquals("8928", DevicesCommand.mtu(8928));
    }

    @Test
    void gidsReadAsIbvDevinfoPrintsThemWithTheirType() {
        org.efaah.verbs.Gid roce = org.efaah.verbs.Gid.parse("::ffff:10.9.0.1");
        int ethernet = org.efaah.verbs.PortAttributes.LINK_LAYER_ETHERNET;
        assertEquals("::ffff:10.9.0.1, RoCE v2", DevicesCommand.gidLine(roce, org.efaah.verbs.GidType.ROCE_V2, ethernet));
        assertEquals("0000:0000:0000:0000:0000:ffff:0a09:0001, RoCE v1",
                DevicesCommand.gidLine(roce, org.efaah.verbs.GidType.ROCE_V1, ethernet));
        assertEquals("fe80:0000:0000:0000:0200:00ff:fe00:0000", DevicesCommand.gidLine(
                org.efaah.verbs.Gid.parse("fe80::200:ff:fe00:0"), org.efaah.verbs.GidType.IB,
                org.efaah.verbs.PortAttributes.LINK_LAYER_UNSPECIFIED));
        Cli c = Cli.run("devices", "--provider", "mock", "-v").expect(0);
        assertTrue(c.out().matches("(?s).*GID\\[  0\\]:\t\t[0-9a-f]{4}(:[0-9a-f]{4}){7}\n.*"), c::toString);
    }

    // ---- 8: one consistent command line

    @Test
    void theMockReasonComesOnceAndShortUnlessVerbose() {
        assumeFalse(nativeAvailable(), "this host has an RDMA device");
        Cli c = Cli.run(Map.of(), "demo", "-t", "1", "-r", "1", "-n", "1", "--quiet").expect(0);
        String all = c.out() + c.err();
        assertEquals(1, all.split("native unavailable", -1).length - 1, c::toString);
        Matcher m = Pattern.compile("provider (mock \\(native unavailable: [^\\n]*\\)), device").matcher(c.out());
        assertTrue(m.find() && m.group(1).length() < 200, c::toString);
        Cli v = Cli.run(Map.of(), "demo", "-t", "1", "-r", "1", "-n", "1", "--quiet", "--verbose").expect(0);
        // The provider lines only: the rest holds measured figures, whose widths vary from run to run.
        assertTrue(v.out().lines().findFirst().orElseThrow().length() > c.out().lines().findFirst().orElseThrow().length()
                && !v.out().contains("--verbose says more"), () -> c + "\n" + v);
        Cli chosen = Cli.run("demo", "--provider", "mock", "-t", "1", "-r", "1", "-n", "1", "--quiet").expect(0);
        assertFalse(chosen.out().contains("unavailable"), chosen::toString);
    }

    @Test
    void eachHelpListsOnlyTheSettingsItsCommandHonoursUnwrapped() {
        for (String command : new String[] {"devices", "demo", "stress", "pingpong"}) {
            String help = Cli.run(command, "--help").expect(0).out();
            for (String line : help.split("\n")) {
                assertTrue(line.length() <= 80, () -> command + ": a line beyond 80 columns: " + line);
            }
            Matcher m = Pattern.compile("(?m)^  (--[a-z-]+)$").matcher(help.substring(help.indexOf("Settings:")
                    < 0 ? help.length() : help.indexOf("Settings:")));
            while (m.find()) {
                String option = m.group(1);
                assertTrue(help.substring(0, help.indexOf("Settings:")).contains(option),
                        () -> command + " lists " + option + " among its settings but has no such option");
            }
        }
        String stress = Cli.run("stress", "--help").expect(0).out();
        // stress makes its own strict mock: the provider setting only, none of the mock's.
        assertFalse(stress.contains("EFA_AH_MOCK_BEHAVIOUR") || stress.contains("EFA_AH_MOCK_MAX_AH"), stress);
    }

    @Test
    void shortOptionsAsRdmaCoresToolsAndOneExitCodeForAMissingDevice() {
        Cli.run("devices", "--provider", "mock", "-d", "mlx5_0").expect(2).oneLine("--ib-dev: 'mlx5_0'", "efa_0");
        Cli.run("pingpong", "--provider", "mock", "-d", "mlx5_0", "-g", "0", "-s", "64", "-n", "1")
                .expect(2).oneLine("--ib-dev: 'mlx5_0'", "efa_0");
        Cli c = Cli.run("pingpong", "--provider", "mock", "--ib-dev", "efa_0", "--gid-idx", "0", "--iters", "20",
                "-s", "32", "--quiet").expect(0);
        assertTrue(c.out().contains("20 round trips of 32 bytes"), c::toString);
        Cli.run("stress", "-d", "1").expect(2).oneLine("-d");
    }

    @Test
    void noJavaNamesInMessages() {
        Cli c = Cli.run("demo", "--provider", "mock", "--behaviour", "bogus").expect(2)
                .oneLine("--behaviour", "'bogus' is unknown; valid: legacy, strict, kernel-cached");
        assertFalse(c.err().contains("DuplicatePolicy"), c::toString);
        System.setProperty("efaah.mock.failureErrno", "EBOGUS");
        c = Cli.run("demo", "--provider", "mock", "-t", "1", "-r", "1", "-n", "1");
        assertFalse(c.err().contains("No enum constant") || c.err().contains("org.efaah."), c::toString);
    }

    @Test
    void ctrlCPrintsTheSummarySoFarAndExits130() throws Exception {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int[] exit = {-1};
        Thread t = new Thread(() -> exit[0] = Main.run(new PrintWriter(out, true), new PrintWriter(err, true),
                Map.of(), "demo", "--provider", "mock", "-t", "2", "-r", "8", "-n", "4000000000",
                "--progress-every", "0.2"));
        t.start();
        // Interrupted once the look-ups run, as Ctrl-C in the middle of a long run.
        long deadline = System.nanoTime() + 120_000_000_000L;
        while (!err.toString().matches("(?s).*look-ups [1-9].*") && t.isAlive() && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        t.interrupt();
        t.join(30_000);
        assertEquals(Main.INTERRUPTED, exit[0], () -> out + "\n" + err);
        assertTrue(out.toString().contains("logical AH requests:") && out.toString().contains("hit ratio:"),
                out::toString);
        assertTrue(err.toString().contains("demo: interrupted after 16 connects and "), err::toString);
    }

    @Test
    void ctrlCStopsStressWithItsChecksAndExits130() throws Exception {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int[] exit = {-1};
        Thread t = new Thread(() -> exit[0] = Main.run(new PrintWriter(out, true), new PrintWriter(err, true),
                Map.of(), "stress", "-t", "2", "--duration", "600", "--progress-every", "0.2"));
        t.start();
        long deadline = System.nanoTime() + 120_000_000_000L;
        while (!err.toString().matches("(?s).*stress: [1-9][\\d,]* operations.*") && t.isAlive()
                && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        t.interrupt();
        t.join(60_000);
        assertEquals(Main.INTERRUPTED, exit[0], () -> out + "\n" + err);
        assertTrue(out.toString().contains("violations: 0"), out::toString);
        assertTrue(err.toString().contains("stress: interrupted after "), err::toString);
    }

    @Test
    void stressOperationsAreItsAcquiresFailedAcquiresAndCloses() {
        Cli c = Cli.run("stress", "-t", "2", "--duration", "120", "--ops", "3000", "--fault-probability", "0.2", "--quiet")
                .expect(0);
        Matcher m = Pattern.compile("operations ([\\d,]+) \\(acquires ([\\d,]+), failed acquires ([\\d,]+), "
                + "closes ([\\d,]+)\\)").matcher(c.out());
        assertTrue(m.find(), c::toString);
        long[] n = new long[5];
        for (int i = 1; i <= 4; i++) {
            n[i] = Long.parseLong(m.group(i).replace(",", ""));
        }
        assertEquals(n[1], n[2] + n[3] + n[4], c::toString);
        assertTrue(n[3] > 0, "faults were injected: " + c);
    }

    // ---- 9: ranges on the whole value

    @Test
    void aQpnBeyond24BitsIsAUsageErrorNotAWaitForQpn0x101() {
        Cli.run("pingpong", "--provider", "mock", "--connect", "fe80::1/0x100000101/0x11111111", "--timeout", "1")
                .expect(2).oneLine("--connect: qpn: 0x100000101 is out of range; valid 0x0..0xffffff");
    }
}
