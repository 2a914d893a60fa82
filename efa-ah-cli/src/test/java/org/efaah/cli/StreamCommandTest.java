package org.efaah.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** Issue 21 item 3: the streaming mode, on the mock (both sides in one process, where the mock joins them). */
class StreamCommandTest {

    @Test
    void loopbackSendsAWindowAndTheReceiverCountsWhatArrived() {
        Cli c = Cli.run("stream", "--provider", "mock", "-n", "20000", "-s", "256", "--window", "32", "--timeout", "5")
                .expect(0);
        assertTrue(c.out().contains("sent 20,000 datagrams of 256 bytes"), c::toString);
        Matcher m = Pattern.compile("received ([\\d,]+) datagrams of 20,000 sent, ([\\d,]+) bytes").matcher(c.out());
        assertTrue(m.find(), c::toString);
        long received = Long.parseLong(m.group(1).replace(",", ""));
        assertTrue(received > 0 && received <= 20_000, c::toString);
        assertEquals(received * 256, Long.parseLong(m.group(2).replace(",", "")), c::toString);
        assertTrue(c.out().contains("messages/s") && c.out().contains("MB/s"), c::toString);
        System.out.println("FIGURE stream on the mock:\n" + c.out().strip());
    }

    @Test
    void jsonHasTheRatesOfBothSides() {
        Cli c = Cli.run("stream", "--provider", "mock", "-n", "2000", "--json", "--timeout", "5").expect(0);
        for (String key : new String[] {"\"send_messages_per_s\"", "\"send_mb_per_s\"", "\"receive_messages_per_s\"",
            "\"receive_mb_per_s\"", "\"received\"", "\"announced\":2000", "\"send_sleeps\"", "\"receive_sleeps\""}) {
            assertTrue(c.out().contains(key), () -> key + " missing:\n" + c);
        }
    }

    @Test
    void aBusySpinningStreamSleepsNeverAndSaysSo() {
        Cli c = Cli.run("stream", "--provider", "mock", "-n", "5000", "--spin", "1000000", "--timeout", "5").expect(0);
        assertTrue(c.out().contains("0.000 sleeps per datagram"), c::toString);
    }

    @Test
    void badValuesAreUsageErrors() {
        Cli.run("stream", "--window", "0").expect(2).oneLine("--window", "1..8192");
        Cli.run("stream", "-n", "0").expect(2).oneLine("--count");
        Cli.run("stream", "--spin", "1000001").expect(2).oneLine("--spin", "0..1000000");
        Cli.run("stream", "--provider", "mock", "-s", "100000").expect(2).oneLine("--size", "path MTU");
    }

    @Test
    void aReceiverWithNoSenderSaysSoOnOneLine() throws Exception {
        try (PingpongExchangeTest.Server server = new PingpongExchangeTest.Server("stream", "--provider", "mock",
                "--server", "--port", "0", "--timeout", "1")) {
            server.close();
            assertEquals(1, server.exit[0], server.out::toString);
            assertTrue(server.err.toString().contains("receiver: no datagram in 1 s"), server.err::toString);
        }
    }

    /**
     * Issue 29 item 7: --transport ud|srd as pingpong has it, on the mock in one process as UD. SRD
     * delivers each datagram once or fails its send, where the receiver had no receive posted
     * (RNR): every datagram is accounted for, and the stream goes on past such failures as UD goes
     * on past its drops.
     */
    @Test
    void srdStreamsInOneProcessOnTheMockAndAccountsForEveryDatagram() {
        Cli c = Cli.run("stream", "--provider", "mock", "--transport", "srd", "-n", "20000", "-s", "1000",
                "--timeout", "5").expect(0);
        assertTrue(c.out().contains("sent 20,000 datagrams of 1000 bytes"), c::toString);
        Matcher m = Pattern.compile("received ([\\d,]+) datagrams of 20,000 sent").matcher(c.out());
        assertTrue(m.find(), c::toString);
        long received = Long.parseLong(m.group(1).replace(",", ""));
        Matcher f = Pattern.compile("([\\d,]+) sends failed: receiver not ready").matcher(c.out());
        long failed = f.find() ? Long.parseLong(f.group(1).replace(",", "")) : 0;
        assertEquals(20_000, received + failed, c::toString);
        System.out.println("FIGURE stream --transport srd on the mock:\n" + c.out().strip());
        assertTrue(c.out().contains("(efa_0, SRD)"), c::toString);
        assertTrue(Pattern.compile("\n[\\d,]+ RNR resends \\(").matcher(c.out()).find(), c::toString);
        Cli json = Cli.run("stream", "--provider", "mock", "--transport", "SRD", "-n", "100", "--json").expect(0);
        assertTrue(json.out().contains("\"transport\":\"srd\""), json::toString);
        assertTrue(json.out().matches("(?s).*\"send_rnr_resends\":\\d+.*"), json::toString);
        Cli ud = Cli.run("stream", "--provider", "mock", "-n", "100").expect(0);
        assertTrue(ud.out().contains("(efa_0, UD)"), ud::toString);
        assertTrue(!ud.out().contains("RNR resends"), "UD has no RNR:\n" + ud);
    }

    /** The same option as pingpong's, refused the same way in both commands, before any device opens. */
    @Test
    void anUnknownTransportOrSrdOnADeviceThatIsNotEfaIsAUsageError() {
        for (String command : new String[] {"stream", "pingpong"}) {
            Cli.run(command, "--provider", "mock", "--transport", "rc").expect(2).oneLine("--transport", "rc", "ud, srd");
            org.efaah.verbs.mock.MockVerbsProvider roce = new org.efaah.verbs.mock.MockVerbsProvider(
                    org.efaah.verbs.mock.MockConfig.builder().efa(false).build());
            Cli.runOn(roce, command, "--provider", "mock", "--transport", "srd", "-n", "10").expect(2)
                    .oneLine("--transport: srd", "roce_0", "EFA");
        }
    }
}
