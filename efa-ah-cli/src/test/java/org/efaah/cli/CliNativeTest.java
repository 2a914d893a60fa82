package org.efaah.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.efaah.verbs.Device;
import org.efaah.verbs.Gid;
import org.efaah.verbs.spi.VerbsProvider;
import org.efaah.verbs.spi.VerbsProviderFactory;
import org.efaah.verbs.VerbsProviders;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The command line on a real device: rxe0 in scripts/rxe-vm, or an EFA host (issue 12 cases 6
 * and 12, and the demo). Skips without a device, saying why; fails instead in the VM or under
 * {@code -Defaah.test.requireDevice=true} (the native-it profile).
 */
@Tag("native")
class CliNativeTest {
    private int gidIndex;

    @BeforeEach
    void requireDevice() {
        VerbsProviderFactory factory = VerbsProviders.factory("native");
        if (!factory.isAvailable()) {
            String why = "no verbs device: " + VerbsProviders.describe(factory.unavailabilityCause());
            if (Boolean.getBoolean("efaah.test.requireDevice") || inVm()) {
                fail(why);
            }
            Assumptions.abort(why);
        }
        String v = System.getenv("EFA_AH_VM_GID_INDEX");
        gidIndex = v == null ? 0 : Integer.parseInt(v.trim());
    }

    private static boolean inVm() {
        return "1".equals(System.getenv("EFA_AH_VM"));
    }

    /** Prints a measured figure and appends it to $EFA_AH_VM_OUT/figures.txt when there is one. */
    private static void figure(String text) {
        System.out.println("FIGURE " + text);
        String out = System.getenv("EFA_AH_VM_OUT");
        if (out != null) {
            try {
                Files.writeString(Path.of(out, "figures.txt"), text + System.lineSeparator(),
                        StandardOpenOption.CREATE, StandardOpenOption.APPEND);
            } catch (IOException e) {
                System.err.println("could not record figure: " + e);
            }
        }
    }

    /** GID index of a second local address in the VM, so that client and server differ; else ours. */
    private int clientGidIndex() {
        String clients = System.getenv("EFA_AH_VM_CLIENT_IPS");
        if (clients == null || clients.isBlank()) {
            return gidIndex;
        }
        Gid wanted = Gid.parse("::ffff:" + clients.trim().split("\\s+")[0]);
        try (VerbsProvider p = VerbsProviders.open("native"); Device d = Device.openFirst(p)) {
            for (int i = 0; i < d.port(1).gidTableLength(); i++) {
                try {
                    if (d.gid(1, i).equals(wanted)) {
                        return i;
                    }
                } catch (RuntimeException emptySlot) {
                    // newer kernels answer an unused slot with an error
                }
            }
        }
        return gidIndex;
    }

    @Test
    void theDemoRunsOnTheNativeProvider() {
        Assumptions.assumeTrue(inVm(), "the demo's peers need the VM's neighbour entries");
        Cli c = Cli.run(Map.of(), "demo", "--provider", "native", "-t", "4", "-r", "200", "-n", "2000",
                "--first-peer", "::ffff:10.9.1.1", "--sgid-index", String.valueOf(gidIndex)).expect(0);
        assertTrue(c.out().contains("provider native"), c::toString);
        assertEquals(200, c.number("hardware AHs created:"));
        figure("demo on the native provider:\n" + c.out().strip());
    }

    @Test
    void pingpongAcrossTheTcpAddressExchange() throws Exception {
        StringWriter serverOut = new StringWriter();
        int[] serverExit = {-1};
        Thread server = new Thread(() -> serverExit[0] = Main.run(new PrintWriter(serverOut, true), "pingpong",
                "--provider", "native", "--server", "--port", "0", "--timeout", "60",
                "--sgid-index", String.valueOf(gidIndex)), "server");
        server.start();
        int port = -1;
        Pattern p = Pattern.compile("listening on TCP port (\\d+)");
        for (int i = 0; i < 1200 && port < 0 && server.isAlive(); i++) {
            Matcher m = p.matcher(serverOut.toString());
            if (m.find()) {
                port = Integer.parseInt(m.group(1));
            }
            Thread.sleep(50);
        }
        assertTrue(port > 0, () -> "the server did not listen: " + serverOut);
        StringWriter clientOut = new StringWriter();
        int exit = Main.run(new PrintWriter(clientOut, true), "pingpong", "--provider", "native", "--connect",
                "127.0.0.1:" + port, "-n", "500", "-s", "256", "--timeout", "20",
                "--sgid-index", String.valueOf(clientGidIndex()));
        server.join(60_000);
        assertEquals(0, exit, () -> clientOut + "\nserver:\n" + serverOut);
        assertEquals(0, serverExit[0], serverOut::toString);
        assertTrue(clientOut.toString().contains("500 round trips of 256 bytes")
                && clientOut.toString().contains("every echo from the server"), clientOut::toString);
        figure("pingpong over the TCP exchange:\n" + clientOut.toString().strip());
    }

    /**
     * With CAP_IPC_LOCK dropped and a 64 KiB RLIMIT_MEMLOCK, registering the receive ring fails;
     * the one-line failure names the limit, its value and the bytes asked for.
     */
    @Test
    void aLowLockedMemoryLimitIsNamed() throws Exception {
        Assumptions.assumeTrue(new ProcessBuilder("id", "-u").start().inputReader().readLine().equals("0"),
                "dropping CAP_IPC_LOCK with setpriv needs root here");
        Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/bin/setpriv")) && Files.isExecutable(
                Path.of("/usr/bin/prlimit")), "needs setpriv and prlimit (util-linux)");
        List<String> command = new ArrayList<>(List.of("setpriv", "--bounding-set", "-ipc_lock", "--inh-caps",
                "-ipc_lock", "prlimit", "--memlock=65536:65536", "--",
                Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        // The JNI library comes from the platform jar here: the child extracts it where this JVM does.
        String cacheDir = System.getProperty("org.bytedeco.javacpp.cachedir");
        if (cacheDir != null) {
            command.add("-Dorg.bytedeco.javacpp.cachedir=" + cacheDir);
        }
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), "org.efaah.cli.Main", "pingpong",
                "--provider", "native", "-n", "10", "--timeout", "10", "--sgid-index", String.valueOf(gidIndex)));
        Process child = new ProcessBuilder(command).redirectErrorStream(true).start();
        // Less the JVM's own notes ("Picked up JAVA_TOOL_OPTIONS: ..." where the environment sets options).
        String output = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8).lines()
                .filter(line -> !line.startsWith("Picked up ")).collect(java.util.stream.Collectors.joining("\n"));
        assertTrue(child.waitFor(120, TimeUnit.SECONDS), "child still running");
        assertEquals(1, child.exitValue(), output);
        assertTrue(output.contains("ENOMEM") && output.contains("bytes asked")
                && output.contains("RLIMIT_MEMLOCK, now 65536 bytes (64 KiB)"), output);
        figure("RLIMIT_MEMLOCK 64 KiB without CAP_IPC_LOCK: " + output.strip());
    }
}
