package org.efaah.cli;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Issue 12 case 7: devices -d NAME and -v, port state as ibv_devinfo prints it. */
class DevicesCommandTest {

    @Test
    void portStateReadsAsIbvDevinfo() {
        Cli c = Cli.run("devices", "--provider", "mock").expect(0);
        assertTrue(c.out().contains("state:\t\t\tPORT_ACTIVE (4)"), c::toString);
        assertFalse(c.out().contains("GID["), "GIDs only with -v:\n" + c);
    }

    @Test
    void oneDeviceByName() {
        Cli c = Cli.run("devices", "--provider", "mock", "--mock-devices", "3", "-d", "efa_1").expect(0);
        assertTrue(c.out().contains("hca_id: efa_1"), c::toString);
        assertFalse(c.out().contains("efa_0") || c.out().contains("efa_2"), c::toString);
        Cli.run("devices", "--provider", "mock", "--mock-devices", "2", "-d", "mlx5_0")
                .expect(2).oneLine("--ib-dev: 'mlx5_0' is not a device of the mock provider", "present: efa_0, efa_1");
    }

    @Test
    void verboseListsGidsAndMaxPd() {
        Cli c = Cli.run("devices", "--provider", "mock", "-v").expect(0);
        assertTrue(c.out().contains("GID[  0]:") && c.out().contains("max_pd:") && c.out().contains("gid_tbl_len:"),
                c::toString);
    }
}
