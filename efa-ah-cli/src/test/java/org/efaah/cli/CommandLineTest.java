package org.efaah.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class CommandLineTest {

    @Test
    void devicesListsTheMockDevice() {
        Cli c = Cli.run("devices", "--provider", "mock", "--mock-devices", "2", "-v").expect(0);
        assertTrue(c.out().contains("provider: mock"), c::toString);
        assertTrue(c.out().contains("hca_id:\tefa_1"), c::toString);
        assertTrue(c.out().contains("\tvendor_id:\t\t\t0x1d0f\n"), c::toString);
        // As ibv_devinfo -v prints an EFA (IB-type) GID: eight groups of four hex digits.
        assertTrue(c.out().contains("GID[  0]:\t\tfe80:0000:0000:0000:"), c::toString);
    }

    @Test
    void demoMakesOneHardwareAhPerPdAndGid() {
        Cli c = Cli.run("demo", "--provider", "mock", "-t", "4", "-r", "40", "--pds", "2", "-n", "2000",
                "--create-latency-us", "20").expect(0);
        assertEquals(80, c.number("hardware AHs created:"));
        assertEquals(4 * 80 + 4 * 2000, c.number("logical AH requests:"));
        assertEquals(0, c.number("duplicates refused"));
        assertEquals(0, c.number("failed connects:"));
        assertEquals(0, c.number("failed look-ups:"));
    }

    @Test
    void demoWithoutTheCacheOnTheDefaultDeviceMeetsTheKernelsAhCache() {
        // Issue 27: the default mock is a current EFA host; without efa-ah every create is a system call
        // the kernel's AH cache answers, shown beside an efa-ah hit.
        Cli c = Cli.run("demo", "--provider", "mock", "-t", "4", "-r", "10", "--no-cache", "--create-latency-us", "0")
                .expect(0);
        assertTrue(c.out().contains("(mock: kernel-cached, create 0.0 µs, system call 1.3 µs,"), c::toString);
        assertEquals(40, c.number("AHs created (ibv_create_ah succeeded):"));
        assertEquals(10, c.number("device: hardware creates"));
        assertEquals(30, c.number("kernel-cache hits"));
        assertTrue(c.out().contains("answered by the kernel's AH cache (AHN of a live AH): p50 "), c::toString);
        assertTrue(c.out().contains("(30 samples)"), c::toString);
        assertTrue(c.out().contains("an efa-ah hit instead (acquire+close, no system call"), c::toString);
        assertEquals("", c.err(), c::toString);
        Cli json = Cli.run("demo", "--provider", "mock", "-t", "4", "-r", "10", "--no-cache", "--json").expect(0);
        assertTrue(json.out().contains("\"kernel_cache_create_latency\":{\"count\":30,"), json::toString);
        assertTrue(json.out().contains("\"efa_ah_hit_latency\":{\"count\":100000,"), json::toString);
    }

    @Test
    void demoWithoutTheCacheShowsTheDeviceRefusingDuplicates() {
        // Issue 17 case 8: without the cache a strict device refuses 30 creates, and the exit says so.
        Cli c = Cli.run("demo", "--provider", "mock", "-t", "4", "-r", "10", "--no-cache", "--create-latency-us", "0",
                "--behaviour", "strict").expect(1);
        assertTrue(c.err().contains("30 of 40 creates failed without the cache {EINVAL=30}"), c::toString);
        assertFalse(c.out().contains("look-ups per worker"), "no look-ups promised:\n" + c);
        assertEquals(10, c.number("AHs created (ibv_create_ah succeeded):"));
        assertEquals(30, c.number("duplicates refused"));
        c = Cli.run("demo", "--provider", "mock", "-t", "4", "-r", "10", "--no-cache", "--behaviour", "legacy",
                "--create-latency-us", "0").expect(0);
        assertEquals(40, c.number("AHs created (ibv_create_ah succeeded):"));
        assertEquals(30, c.number("duplicate AHs made"));
    }

    @Test
    void demoWithoutTheCacheOnAnOlderKernelMeetsTheLibrarysMaxAh() {
        // Issue 34: the CLI's mock had max_ah 65,536, the library's 1,024, so 8 workers x 256 peers without
        // the cache on a legacy device made 2,048 AHs here and failed in a test. One default now, and at it
        // half the creates fail with ENOMEM, as on a device without the kernel's AH cache.
        Cli c = Cli.run("demo", "--provider", "mock", "--no-cache", "--behaviour", "legacy", "--create-latency-us", "0")
                .expect(1);
        assertTrue(c.out().contains("max_ah " + org.efaah.verbs.mock.MockConfig.DEFAULT_MAX_AH + ")"), c::toString);
        assertEquals(1024, c.number("AHs created (ibv_create_ah succeeded):"));
        assertTrue(c.err().contains("1,024 of 2,048 creates failed without the cache {ENOMEM=1024}: max_ah 1,024 "
                + "reached, 2,048 creates for 256 distinct (PD, GID) pairs; through the cache they take 256 AHs"),
                c::toString);
        Cli.run("demo", "--provider", "mock", "--create-latency-us", "0", "-n", "10").expect(0);
        assertTrue(Cli.run("demo", "--help").expect(0).out().replaceAll("\\s+", " ")
                .contains("Mock max_ah per device, 1..65536 (default: 1024, what an EFA device reports"), "demo --help");
    }

    @Test
    void stressReportsNoViolations() {
        Cli c = Cli.run("stress", "-t", "4", "--duration", "2", "--fault-probability", "0.05", "--seed", "7").expect(0);
        assertEquals(0, c.number("violations:"));
        assertTrue(c.number("injected create failures seen") > 0, c::toString);
    }

    @Test
    void pingpongVerifiesEveryEchoThroughOneCachedAh() {
        Cli c = Cli.run("pingpong", "--provider", "mock", "-n", "300", "-s", "4096").expect(0);
        assertTrue(c.out().contains("300 round trips of 4096 bytes"), c::toString);
        assertTrue(c.out().contains("every echo from the server and every payload verified"), c::toString);
        assertEquals(1, c.number("AHs:"));
        // The mock's EFA port reports max_msg_sz 8928, EFA's jumbo-frame MTU, as efa_query_port does.
        Cli.run("pingpong", "--provider", "mock", "-s", "8929").expect(2).oneLine("--size: 8929 bytes", "max_msg_sz");
    }

    @Test
    void pingpongSpinsAsLongAsToldBeforeItSleeps() {
        Cli c = Cli.run("pingpong", "--provider", "mock", "-n", "200", "--spin", "1000000").expect(0);
        assertTrue(c.out().contains("200 round trips of"), c::toString);
        Cli.run("pingpong", "--provider", "mock", "--spin", "-1").expect(2).oneLine("--spin: -1 µs is out of range",
                "0..1000000");
    }

    @Test
    void badOptionsAreRejected() {
        Cli c = Cli.run("demo", "--threads", "0").expect(2).oneLine("--threads: 0 is out of range; valid 1..1024");
        assertTrue(!c.out().contains("hardware AHs"), c::toString);
        Cli.run("demo", "--provider", "nonsense").expect(2).oneLine("provider: 'nonsense' is unknown");
        Cli.run("demo", "--threads", "x").expect(2).oneLine("--threads", "'x'");
    }

    @Test
    void pingpongRunsOverSrdWhenAskedAndRefusesAnUnknownTransport() {
        Cli c = Cli.run("pingpong", "--provider", "mock", "--transport", "srd", "-n", "200", "-s", "1000").expect(0);
        assertTrue(c.out().contains("200 round trips of 1000 bytes"), c::toString);
        assertTrue(c.out().contains("every payload verified"), c::toString);
        Cli.run("pingpong", "--provider", "mock", "--transport", "rc").expect(2).oneLine("--transport", "rc", "ud, srd");
    }
}
