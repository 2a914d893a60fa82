package org.efaah.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * docs/native-hosts.md's claim that {@code scripts/efa-host-report} on a machine without an EFA device says
 * so in one line and exits 0, checked against fake sysfs trees (the script reads
 * {@code $EFA_AH_SYSFS/class/infiniband/}).
 */
class EfaHostReportScriptTest {
    private static final Path SCRIPT = Path.of("..", "scripts", "efa-host-report");

    @TempDir
    Path sysfs;

    @Test
    void noRdmaDeviceAtAll() throws Exception {
        assertOneLineNoEfa(run(sysfs));
    }

    @Test
    void onlyDevicesOfOtherVendors() throws Exception {
        for (String[] device : new String[][] {{"mlx5_0", "0x15b3"}, {"rxe0", ""}}) {
            Path dir = Files.createDirectories(sysfs.resolve("class/infiniband/" + device[0] + "/device"));
            if (!device[1].isEmpty()) {
                Files.writeString(dir.resolve("vendor"), device[1] + "\n");
            }
        }
        assertOneLineNoEfa(run(sysfs));
    }

    private void assertOneLineNoEfa(Result result) {
        assertEquals(0, result.exit(), result.output());
        assertEquals("efa-host-report: no EFA device on this host (no RDMA device with PCI vendor 0x1d0f in "
                + sysfs + "/class/infiniband); nothing to report\n", result.output());
    }

    private record Result(int exit, String output) {
    }

    private static Result run(Path sysfs) throws IOException, InterruptedException {
        assumeTrue(Files.isExecutable(SCRIPT), "run from the efa-ah module directory: no " + SCRIPT);
        ProcessBuilder builder = new ProcessBuilder("bash", SCRIPT.toString()).redirectErrorStream(true);
        builder.environment().put("EFA_AH_SYSFS", sysfs.toString());
        Process process = builder.start();
        String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(process.waitFor(30, TimeUnit.SECONDS), "the script did not finish");
        return new Result(process.exitValue(), out);
    }
}
