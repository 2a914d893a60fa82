package org.efaah.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.efaah.verbs.spi.VerbsProvider;
import org.efaah.verbs.VerbsProviders;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Issue 21 item 4 on a real device (rxe0 in scripts/rxe-vm): {@code efa-ah pingpong} against
 * rdma-core's own {@code ibv_ud_pingpong}, both ways. rdma-core's tool as the server, efa-ah as the
 * client: both complete every iteration, and the client checks every echo (source QPN and GID, and
 * every byte). efa-ah as the server, rdma-core's as the client ({@code -c}: it checks the buffer it
 * got back last): both complete every iteration. Skips without a device or the tool, except in the VM.
 */
@Tag("native")
class PingpongInteropNativeTest {
    private static final int ITERATIONS = 200;
    private String device;
    private int gidIndex;

    /*
     * In the VM everything missing is a failure; elsewhere only a missing device under
     * efaah.test.requireDevice: a host without the tool or without the soft-RoCE device the
     * exchange is written for (an EFA host; the EFA double, one process) skips, saying why.
     */
    @BeforeEach
    void requireDeviceAndTool() {
        boolean inVm = "1".equals(System.getenv("EFA_AH_VM"));
        device = System.getenv().getOrDefault("EFA_AH_VM_DEVICE", "rxe0");
        if (!VerbsProviders.factory("native").isAvailable()) {
            if (inVm || Boolean.getBoolean("efaah.test.requireDevice")) {
                fail("no verbs device");
            }
            Assumptions.abort("no verbs device");
        }
        String why = !Files.isExecutable(Path.of("/usr/bin/ibv_ud_pingpong")) ? "no /usr/bin/ibv_ud_pingpong (ibverbs-utils)"
                : !deviceListed(device) ? "no device " + device + " (the soft-RoCE device this exchange is written for)"
                : null;
        if (why != null) {
            if (inVm) {
                fail(why);
            }
            Assumptions.abort(why);
        }
        String v = System.getenv("EFA_AH_VM_GID_INDEX");
        gidIndex = v == null ? 0 : Integer.parseInt(v.trim());
    }

    private static boolean deviceListed(String name) {
        try (VerbsProvider p = VerbsProviders.open("native")) {
            return p.deviceNames().contains(name);
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /** A child process whose merged output is collected; {@link #awaitLine} waits for a line of it. */
    private static final class Child {
        final Process process;
        final StringBuilder output = new StringBuilder();
        final CompletableFuture<Void> reader;

        Child(List<String> command) throws IOException {
            process = new ProcessBuilder(command).redirectErrorStream(true).start();
            reader = CompletableFuture.runAsync(() -> {
                try (var r = process.inputReader()) {
                    for (String line; (line = r.readLine()) != null; ) {
                        synchronized (output) {
                            output.append(line).append('\n');
                        }
                    }
                } catch (IOException e) {
                    // the process went
                }
            });
        }

        String output() {
            synchronized (output) {
                return output.toString();
            }
        }

        Matcher awaitLine(Pattern p) throws InterruptedException {
            for (int i = 0; i < 2400; i++) {
                Matcher m = p.matcher(output());
                if (m.find()) {
                    return m;
                }
                if (!process.isAlive() && reader.isDone()) {
                    break;
                }
                Thread.sleep(50);
            }
            throw new AssertionError("no line matching " + p + " in:\n" + output());
        }

        int exit(int seconds) throws InterruptedException {
            if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                fail("still running after " + seconds + " s:\n" + output());
            }
            reader.join();
            return process.exitValue();
        }
    }

    private List<String> cTool(int size, int port, String... more) {
        List<String> c = new ArrayList<>(List.of("/usr/bin/ibv_ud_pingpong", "-d", device, "-g",
                String.valueOf(gidIndex), "-s", String.valueOf(size), "-n", String.valueOf(ITERATIONS), "-p",
                String.valueOf(port)));
        c.addAll(List.of(more));
        return c;
    }

    @Test
    void efaAhClientAgainstIbvUdPingpongServer() throws Exception {
        for (int size : new int[] {64, 1024}) {
            int port = freePort();
            Child server = new Child(cTool(size, port));
            awaitListening(port, server); // its stdout is a pipe, so it prints nothing until it exits
            StringWriter out = new StringWriter();
            StringWriter err = new StringWriter();
            int exit = Main.run(new PrintWriter(out, true), new PrintWriter(err, true), java.util.Map.of(), "pingpong",
                    "--provider", "native", "--device", device, "--connect", "127.0.0.1:" + port, "-n",
                    String.valueOf(ITERATIONS), "-s", String.valueOf(size), "--timeout", "30", "--sgid-index",
                    String.valueOf(gidIndex));
            int serverExit = server.exit(120);
            assertEquals(0, exit, () -> out + "\n" + err + "\nibv_ud_pingpong:\n" + server.output());
            assertEquals(0, serverExit, server::output);
            assertTrue(out.toString().contains(ITERATIONS + " round trips of " + size + " bytes")
                    && out.toString().contains("every echo from the server and every payload verified"), out::toString);
            assertTrue(server.output().contains(ITERATIONS + " iters in"), server::output);
            figure("efa-ah pingpong client against ibv_ud_pingpong server, " + size + " B:\n  " + out.toString().strip()
                    .replace("\n", "\n  ") + "\n  ibv_ud_pingpong: " + lastLine(server.output()));
        }
    }

    @Test
    void ibvUdPingpongClientAgainstEfaAhServer() throws Exception {
        for (int size : new int[] {64, 1024}) {
            int port = freePort();
            List<String> java = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
            String cacheDir = System.getProperty("org.bytedeco.javacpp.cachedir");
            if (cacheDir != null) {
                java.add("-Dorg.bytedeco.javacpp.cachedir=" + cacheDir);
            }
            java.addAll(List.of("-cp", System.getProperty("java.class.path"), "org.efaah.cli.Main", "pingpong",
                    "--provider", "native", "--device", device, "--server", "--port", String.valueOf(port),
                    "--timeout", "120", "--sgid-index", String.valueOf(gidIndex), "-n", String.valueOf(ITERATIONS)));
            Child server = new Child(java);
            try {
                server.awaitLine(Pattern.compile("listening on TCP port " + port));
                Child client = new Child(cTool(size, port, "-c", "127.0.0.1"));
                int clientExit = client.exit(300);
                assertEquals(0, clientExit, () -> client.output() + "\nefa-ah server:\n" + server.output());
                assertTrue(client.output().contains(ITERATIONS + " iters in"), client::output);
                assertTrue(!client.output().contains("invalid data"), client::output);
                server.awaitLine(Pattern.compile("pingpong server: client \\S+/0x[0-9a-f]+/0x11111111 from"));
                // Issue 27: given -n, the server ends after that many round trips with 0, as the C tool's
                // does; its client sends no goodbye (the server waited --timeout for one, then exited 1).
                assertEquals(0, server.exit(30), server::output);
                assertTrue(server.output().contains("server: answered " + ITERATIONS + " datagrams"), server::output);
                figure("ibv_ud_pingpong -c client against the efa-ah pingpong server, " + size + " B: "
                        + lastLine(client.output()));
            } finally {
                server.process.destroy();
                server.process.waitFor(30, TimeUnit.SECONDS);
            }
        }
    }

    /**
     * Waits until something listens on TCP {@code port}, read from /proc/net/tcp{,6}: a probe
     * connection would take the C server's one accept().
     */
    private static void awaitListening(int port, Child child) throws Exception {
        String local = String.format(":%04X ", port);
        for (int i = 0; i < 3000; i++) {
            for (String table : new String[] {"/proc/net/tcp", "/proc/net/tcp6"}) {
                Path p = Path.of(table);
                if (Files.exists(p) && Files.readAllLines(p).stream().anyMatch(l -> {
                    String[] f = l.trim().split("\\s+");
                    return f.length > 3 && (f[1] + " ").endsWith(local) && f[3].equals("0A");
                })) {
                    return;
                }
            }
            if (!child.process.isAlive()) {
                break;
            }
            Thread.sleep(50);
        }
        throw new AssertionError("nothing listens on TCP port " + port + ":\n" + child.output());
    }

    private static String lastLine(String text) {
        String[] lines = text.strip().split("\n");
        return lines[lines.length - 1];
    }

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
}
