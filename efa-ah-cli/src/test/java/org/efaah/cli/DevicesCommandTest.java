package org.efaah.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.efaah.verbs.Errno;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;

/**
 * Issue 12 case 7: devices -d NAME and -v, port state as ibv_devinfo prints it. Issue 17 case 7:
 * every field ibv_devinfo [-v] prints from ibv_device_attr and ibv_port_attr, under its name, in
 * its form and order, tabs included (the mock's EFA device, as efa_query_device/efa_query_port
 * fill them); -i/--ib-port as ibv_devinfo's.
 */
class DevicesCommandTest {
    /** What ibv_devinfo prints for the mock's EFA device without -v (print_hca_cap), after our mock line. */
    private static final List<String> BASIC = List.of(
            "hca_id:\tefa_0",
            "\tmock:\t\t\tyes: simulated by efa-ah's mock provider, no hardware",
            "\ttransport:\t\t\tunspecified (4)",
            "\tfw_ver:\t\t\t\t0.0.0.0",
            "\tnode_guid:\t\t\t0200:00ff:fe00:0000",
            "\tsys_image_guid:\t\t\t0000:0000:0000:0000",
            "\tvendor_id:\t\t\t0x1d0f",
            "\tvendor_part_id:\t\t\t61347",
            "\thw_ver:\t\t\t\t0xEFA3",
            "\tphys_port_cnt:\t\t\t1");
    private static final List<String> PORT = List.of(
            "\t\tport:\t1",
            "\t\t\tstate:\t\t\tPORT_ACTIVE (4)",
            "\t\t\tmax_mtu:\t\t4096 (5)",
            "\t\t\tactive_mtu:\t\t4096 (5)",
            "\t\t\tsm_lid:\t\t\t0",
            "\t\t\tport_lid:\t\t0",
            "\t\t\tport_lmc:\t\t0x01",
            "\t\t\tlink_layer:\t\tUnspecified");
    /** ibv_devinfo -v's ibv_device_attr lines, up to where its ibv_query_device_ex part begins. */
    private static final List<String> DEVICE_V = List.of(
            "\tmax_mr_size:\t\t\t0x1800000000",
            "\tpage_size_cap:\t\t\t0xfffff000",
            "\tmax_qp:\t\t\t\t256",
            "\tmax_qp_wr:\t\t\t8192",
            "\tdevice_cap_flags:\t\t0x00000000",
            "\tmax_sge:\t\t\t1",
            "\tmax_sge_rd:\t\t\t1",
            "\tmax_cq:\t\t\t\t512",
            "\tmax_cqe:\t\t\t32768",
            "\tmax_mr:\t\t\t\t262144",
            "\tmax_pd:\t\t\t\t256",
            "\tmax_qp_rd_atom:\t\t\t0",
            "\tmax_ee_rd_atom:\t\t\t0",
            "\tmax_res_rd_atom:\t\t0",
            "\tmax_qp_init_rd_atom:\t\t0",
            "\tmax_ee_init_rd_atom:\t\t0",
            "\tatomic_cap:\t\t\tATOMIC_NONE (0)",
            "\tmax_ee:\t\t\t\t0",
            "\tmax_rdd:\t\t\t0",
            "\tmax_mw:\t\t\t\t0",
            "\tmax_raw_ipv6_qp:\t\t0",
            "\tmax_raw_ethy_qp:\t\t0",
            "\tmax_mcast_grp:\t\t\t0",
            "\tmax_mcast_qp_attach:\t\t0",
            "\tmax_total_mcast_qp_attach:\t0",
            "\tmax_ah:\t\t\t\t" + MockConfig.DEFAULT_MAX_AH, // the library's mock's: what an EFA device reports
            "\tmax_fmr:\t\t\t0",
            "\tmax_srq:\t\t\t0",
            "\tmax_pkeys:\t\t\t1",
            "\tlocal_ca_ack_delay:\t\t0");
    /** ibv_devinfo -v's ibv_port_attr lines; no phys_state, as EFA's transport is not InfiniBand. */
    private static final List<String> PORT_V = List.of(
            "\t\t\tmax_msg_sz:\t\t0x22e0",
            "\t\t\tport_cap_flags:\t\t0x00000000",
            "\t\t\tport_cap_flags2:\t0x0000",
            "\t\t\tmax_vl_num:\t\t1 (1)",
            "\t\t\tbad_pkey_cntr:\t\t0x0",
            "\t\t\tqkey_viol_cntr:\t\t0x0",
            "\t\t\tsm_sl:\t\t\t0",
            "\t\t\tpkey_tbl_len:\t\t1",
            "\t\t\tgid_tbl_len:\t\t1",
            "\t\t\tsubnet_timeout:\t\t0",
            "\t\t\tinit_type_reply:\t0",
            "\t\t\tactive_width:\t\t4X (2)",
            "\t\t\tactive_speed:\t\t25.0 Gbps (32)",
            "\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:0200:00ff:fe00:0000",
            "");

    private static List<String> lines(Cli c) {
        List<String> all = Arrays.asList(c.out().split("\n", -1));
        assertEquals("provider: mock", all.get(0), c::toString);
        return all.subList(1, all.size() - 1); // the last is what follows the final newline
    }

    @Test
    void everyFieldOfIbvDevinfoInItsFormAndOrder() {
        List<String> expected = new ArrayList<>(BASIC);
        expected.add("\tmax_ah:\t\t\t\t" + MockConfig.DEFAULT_MAX_AH); // ours, without -v: the figure this tool is about
        expected.addAll(PORT);
        expected.add("");
        assertEquals(expected, lines(Cli.run("devices", "--provider", "mock").expect(0)));
    }

    @Test
    void verboseAddsEveryFieldOfIbvDevinfoVInItsFormAndOrder() {
        List<String> expected = new ArrayList<>(BASIC);
        expected.addAll(DEVICE_V);
        expected.addAll(PORT);
        expected.addAll(PORT_V);
        assertEquals(expected, lines(Cli.run("devices", "--provider", "mock", "-v").expect(0)));
    }

    @Test
    void formsOfIbvDevinfo() {
        assertEquals("0123:4567:89ab:cdef", Devinfo.guid(0x0123_4567_89ab_cdefL));
        assertEquals("ffff:0000:0000:0001", Devinfo.guid(0xffff_0000_0000_0001L));
        // Known bits by name in bit order, the rest as one hex figure, as print_device_cap_flags does.
        assertEquals(List.of("RESIZE_MAX_WR", "SYS_IMAGE_GUID", "MEM_WINDOW", "Unknown flags: 0x18000"),
                Devinfo.deviceCapFlags(1 | 1 << 11 | 1 << 15 | 1 << 16 | 1 << 17));
        assertEquals("MANAGED_FLOW_STEERING", Devinfo.deviceCapFlags(1 << 29).get(0));
        assertEquals("Unknown flags: 0x80000000", Devinfo.deviceCapFlags(1 << 31).get(0));
        assertEquals("10.0 Gbps", Devinfo.speed(8));
        assertEquals("invalid speed", Devinfo.speed(3));
        assertEquals("12", Devinfo.width(8));
        assertEquals("15", Devinfo.maxVlNum(5));
        assertEquals("LINK_UP", Devinfo.physState(5));
        assertEquals("ATOMIC_HCA", Devinfo.atomicCap(1));
        assertEquals("invalid state", Devinfo.portState(0));
    }

    @Test
    void onePortByNumberAsIbvDevinfoDashI() {
        Cli c = Cli.run("devices", "--provider", "mock", "-i", "1").expect(0);
        assertTrue(c.out().contains("\t\tport:\t1\n"), c::toString);
        Cli.run("devices", "--provider", "mock", "--mock-devices", "2", "--ib-port", "2").expect(2)
                .oneLine("--ib-port: port 2 is not a port of efa_0 (it has 1 port, 1..1)");
        Cli.run("devices", "--provider", "mock", "-i", "0").expect(2).oneLine("--ib-port: 0 is out of range; valid 1..255");
        Cli.run("devices", "--provider", "mock", "-i", "256").expect(2).oneLine("--ib-port: 256 is out of range; valid 1..255");
    }

    @Test
    void portStateReadsAsIbvDevinfo() {
        Cli c = Cli.run("devices", "--provider", "mock").expect(0);
        assertTrue(c.out().contains("\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"), c::toString);
        assertFalse(c.out().contains("GID["), "GIDs only with -v:\n" + c);
    }

    @Test
    void oneDeviceByName() {
        Cli c = Cli.run("devices", "--provider", "mock", "--mock-devices", "3", "-d", "efa_1").expect(0);
        assertTrue(c.out().contains("hca_id:\tefa_1"), c::toString);
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

    /**
     * Issue 29 item 7: on a libibverbs without ibv_query_gid_ex (rdma-core older than 32) -v prints
     * every GID without its type, as ibv_devinfo did before it printed types (rdma-core 28's
     * print_all_port_gids: eight groups of four hex digits, nothing after them), and exits 0.
     */
    @Test
    void withoutIbvQueryGidExTheGidTypeIsLeftOut() {
        MockVerbsProvider roce = new MockVerbsProvider(MockConfig.builder().efa(false).build());
        String typed = Cli.runOn(roce, "devices", "--provider", "mock", "-v").expect(0).out();
        assertTrue(typed.contains(", RoCE v2\n"), typed);
        MockVerbsProvider old = new MockVerbsProvider(MockConfig.builder().efa(false).build());
        old.lackQueryGidEx(true);
        Cli c = Cli.runOn(old, "devices", "--provider", "mock", "-v").expect(0);
        assertTrue(c.out().matches("(?s).*\t\t\tGID\\[  0\\]:\t\t([0-9a-f]{4}:){7}[0-9a-f]{4}\n.*"), c::toString);
        assertFalse(c.out().contains("RoCE v"), c::toString);
        assertTrue(c.err().isEmpty(), c::toString);
    }

    /** EOPNOTSUPP, the provider's one "unsupported" answer, is "cannot tell"; other errnos are not. */
    @Test
    void eopnotsuppMeansTheTypeIsUnknown() {
        assertTrue(DevicesCommand.typeUnknown(new VerbsException("ibv_query_gid_ex", Errno.EOPNOTSUPP, "")));
        assertFalse(DevicesCommand.typeUnknown(new VerbsException("ibv_query_gid_ex", Errno.ENODATA, "empty")));
    }
}
