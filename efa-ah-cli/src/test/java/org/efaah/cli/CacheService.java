package org.efaah.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.DeviceEvent;
import org.efaah.verbs.Errno;
import org.efaah.verbs.Gid;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;

/**
 * A service in its own JVM for the JMX tests: a mock device (max_ah from the first argument), a
 * cache registered as {@code org.efaah:type=AddressHandleCache,name=svc}, driven by lines on
 * standard input ({@code hold N}, {@code release}, {@code fail}, {@code port STATE}, {@code fatal},
 * {@code quit}); answers each with {@code ok} on standard output.
 */
public final class CacheService {
    private CacheService() {
    }

    /** A service started by {@link #start}: its JMX address and the lines to and from it. */
    record Running(Process process, PrintWriter to, BufferedReader from, String jmx, Path log) implements AutoCloseable {
        /** Sends {@code command}; asserts the service answered {@code ok}. */
        void tell(String command) throws IOException {
            to.println(command);
            assertEquals("ok", from.readLine(), command);
        }

        /** Tells the service to quit, then kills it if it has not ended within 20 s. */
        @Override
        public void close() throws InterruptedException {
            to.println("quit");
            if (!process.waitFor(20, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        }
    }

    /**
     * Starts the service in a JVM of its own with a JMX port on 127.0.0.1 (its RMI connector on the
     * same port) and {@code jmxFlags} (authentication, SSL), its log in {@code dir}; returns once it
     * said ready.
     */
    static Running start(Path dir, int maxAh, String... jmxFlags) throws IOException {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"),
                "-Dcom.sun.management.jmxremote.port=" + port, "-Dcom.sun.management.jmxremote.rmi.port=" + port,
                "-Dcom.sun.management.jmxremote.host=127.0.0.1", "-Djava.rmi.server.hostname=127.0.0.1"));
        command.addAll(List.of(jmxFlags));
        command.addAll(List.of("-Dlogback.configurationFile=logback-test.xml", CacheService.class.getName(),
                Integer.toString(maxAh)));
        Path log = dir.resolve("service.log");
        Process p = new ProcessBuilder(command).redirectError(log.toFile()).start();
        Running r = new Running(p, new PrintWriter(p.getOutputStream(), true, StandardCharsets.UTF_8),
                new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8)),
                "127.0.0.1:" + port, log);
        assertEquals("ready", r.from().readLine(), () -> "service log: " + read(log));
        return r;
    }

    private static String read(Path f) {
        try {
            return Files.readString(f);
        } catch (IOException e) {
            return e.toString();
        }
    }

    public static void main(String[] args) throws Exception {
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().maxAh(Integer.parseInt(args[0])).build());
        Device device = Device.openFirst(mock);
        ProtectionDomain pd = device.allocatePd();
        AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED).build();
        cache.inspection().registerMXBean("org.efaah:type=AddressHandleCache,name=svc");
        List<AddressHandle> held = new ArrayList<>();
        int next = 1;
        System.out.println("ready");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            String[] w = line.trim().split(" ");
            switch (w[0]) {
                case "hold" -> {
                    for (int i = 0, n = Integer.parseInt(w[1]); i < n; i++) {
                        held.add(cache.acquire(pd, AddressHandleAttributes.forGid(Gid.of(0xfe80L << 48, next++))));
                    }
                }
                case "release" -> {
                    held.forEach(AddressHandle::close);
                    held.clear();
                }
                case "fail" -> {
                    mock.failNextCreates(1, Errno.EIO);
                    try {
                        cache.acquire(pd, AddressHandleAttributes.forGid(Gid.of(0xfe80L << 48, next++))).close();
                    } catch (VerbsException expected) {
                        // The failure is what the health report is to show.
                    }
                }
                case "port" -> mock.setPortState(device.name(), Integer.parseInt(w[1]));
                case "fatal" -> {
                    mock.raiseEvent(device.name(), DeviceEvent.Kind.DEVICE_FATAL, 0);
                    while (!device.isFatal()) {
                        Thread.sleep(5);
                    }
                }
                case "quit" -> {
                    held.forEach(AddressHandle::close);
                    cache.close();
                    device.close();
                    System.out.println("ok");
                    return;
                }
                default -> throw new IllegalArgumentException(line);
            }
            System.out.println("ok");
        }
    }
}
