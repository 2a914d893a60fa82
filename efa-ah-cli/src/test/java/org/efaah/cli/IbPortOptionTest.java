package org.efaah.cli;

import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * Issue 17 item 8: {@code -i/--ib-port} wherever {@code -d/--ib-dev} picks a device whose port a
 * command uses, as rdma-core's tools have it: checked whole (1..255) before any provider opens,
 * then against the device, naming it and its port count (the mock's devices have port 1 only).
 */
class IbPortOptionTest {

    @Test
    void pingpongTakesThePort() {
        Cli c = Cli.run("pingpong", "--provider", "mock", "-i", "1", "-n", "10").expect(0);
        assertTrue(c.out().contains("10 round trips"), c::toString);
        Cli.run("pingpong", "--provider", "mock", "--ib-port", "2").expect(2)
                .oneLine("--ib-port: port 2 is not a port of efa_0 (it has 1 port, 1..1)");
        Cli.run("pingpong", "--provider", "mock", "-i", "0").expect(2).oneLine("--ib-port: 0 is out of range; valid 1..255");
        Cli.run("pingpong", "--provider", "mock", "-i", "4294967297").expect(2).oneLine("--ib-port", "4294967297");
    }

    @Test
    void streamTakesTheDeviceAndThePort() {
        Cli c = Cli.run("stream", "--provider", "mock", "-d", "efa_0", "-i", "1", "-n", "100").expect(0);
        assertTrue(c.out().contains("100"), c::toString);
        Cli.run("stream", "--provider", "mock", "--mock-devices", "2", "-d", "efa_1", "-i", "2").expect(2)
                .oneLine("--ib-port: port 2 is not a port of efa_1 (it has 1 port, 1..1)");
        Cli.run("stream", "--provider", "mock", "-i", "256").expect(2).oneLine("--ib-port: 256 is out of range; valid 1..255");
        Cli.run("stream", "--provider", "mock", "-d", "mlx5_0").expect(2)
                .oneLine("--ib-dev: 'mlx5_0' is not a device of the mock provider", "present: efa_0");
    }
}
