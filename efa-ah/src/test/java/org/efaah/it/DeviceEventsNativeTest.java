package org.efaah.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.ud.UdEndpoint;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.DeviceEvent;
import org.efaah.verbs.Gid;
import org.efaah.verbs.ProtectionDomain;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Issue 10 item 4 at device level, in the soft-RoCE VM: the kernel's asynchronous events reach
 * the device's listeners. Needs root and the VM's veth0 (scripts/rxe-vm.d/guest.sh); skips
 * elsewhere saying why. The link-delete test runs last and puts rxe0 back.
 */
@Tag("native")
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class DeviceEventsNativeTest {
    private static final String NETDEV = "veth0";

    record Heard(DeviceEvent event, long nanos) {
    }

    private static void assumeVm() {
        NativeDevice.provider();
        Assumptions.assumeTrue(NativeDevice.inVm(), "changes the VM's network and rxe0: runs only in scripts/rxe-vm");
    }

    /** Runs a command, failing with its output unless it exits 0 within 60 s; returns its run time in ns. */
    static long run(String... command) throws IOException, InterruptedException {
        long t0 = System.nanoTime();
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError(String.join(" ", command) + " did not finish in 60 s");
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.exitValue(), String.join(" ", command) + ": " + out);
        return System.nanoTime() - t0;
    }

    private static Heard await(BlockingQueue<Heard> heard, DeviceEvent.Kind kind) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        for (;;) {
            Heard h = heard.poll(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            assertNotNull(h, "no " + kind + " within 20 s");
            if (h.event().kind() == kind) {
                return h;
            }
        }
    }

    @Test
    @Order(1)
    void addingAndRemovingAnAddressRaisesGidChange() throws Exception {
        assumeVm();
        BlockingQueue<Heard> heard = new LinkedBlockingQueue<>();
        try (Device device = NativeDevice.open(NativeDevice.provider())) {
            device.addEventListener(e -> heard.add(new Heard(e, System.nanoTime())));
            for (String verb : List.of("add", "del")) {
                heard.clear();
                long start = System.nanoTime();
                long ipNanos = run("ip", "addr", verb, "10.9.0.200/16", "dev", NETDEV);
                Heard h = await(heard, DeviceEvent.Kind.GID_CHANGE);
                assertEquals(1, h.event().portNum());
                NativeDevice.figure(String.format("GID_CHANGE on %s after `ip addr %s`: %.1f ms from the command's"
                        + " start (the command itself, exec included, took %.1f ms)", device.name(), verb,
                        (h.nanos() - start) / 1e6, ipNanos / 1e6));
            }
        }
    }

    /**
     * {@code rdma link delete rxe0} while this JVM holds the device with PDs, AHs and a UD QP: the
     * kernel waits for every context to close. The device hears it (rxe sends no event: the
     * reader sees its uverbs node gone and reports DEVICE_FATAL), closes everything on it
     * (close-on-fatal), and the delete completes. Before, it waited until the JVM closed the
     * device for its own reasons, and the JVM was told nothing. Puts rxe0 back afterwards.
     */
    @Test
    @Order(2)
    void deletingTheLinkUnderAHeldDeviceIsHeardAndCompletes() throws Exception {
        assumeVm();
        String name = System.getenv("EFA_AH_VM_DEVICE");
        BlockingQueue<Heard> heard = new LinkedBlockingQueue<>();
        Device device = NativeDevice.open(NativeDevice.provider());
        Process delete = null;
        try {
            device.setCloseOnFatal(true);
            device.addEventListener(e -> heard.add(new Heard(e, System.nanoTime())));
            ProtectionDomain pd = device.allocatePd();
            ProtectionDomain other = device.allocatePd();
            AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED).build();
            UdEndpoint endpoint = UdEndpoint.open(pd, cache, UdEndpoint.Options.defaults()
                    .withSgidIndex(NativeDevice.gidIndex()));
            List<AddressHandle> held = new ArrayList<>();
            for (Gid peer : NativeDevice.peers(16)) {
                held.add(cache.acquire(pd, AddressHandleAttributes.forGid(peer)));
                held.add(cache.acquire(other, AddressHandleAttributes.forGid(peer)));
            }
            endpoint.send(held.get(0), 1, UdEndpoint.DEFAULT_QKEY, ByteBuffer.wrap(new byte[16]));

            long start = System.nanoTime();
            delete = new ProcessBuilder("rdma", "link", "delete", name).redirectErrorStream(true).start();
            boolean completed = delete.waitFor(60, TimeUnit.SECONDS);
            long deleteNanos = System.nanoTime() - start;
            Heard fatal = heard.stream().filter(h -> h.event().kind() == DeviceEvent.Kind.DEVICE_FATAL).findFirst()
                    .orElse(null);
            NativeDevice.figure(String.format("rdma link delete %s with the device held (2 PDs, %d AHs, a UD QP): %s"
                    + " in %.1f ms; events heard: %s; DEVICE_FATAL at %s", name, held.size(),
                    completed ? "completed" : "NOT completed", deleteNanos / 1e6,
                    heard.stream().map(h -> h.event().kind().name()).toList(),
                    fatal == null ? "never" : String.format("%.1f ms", (fatal.nanos() - start) / 1e6)));
            assertTrue(completed, "rdma link delete did not complete within 60 s while the JVM held the device");
            assertNotNull(fatal, "the device heard of its removal");
            assertTrue(device.isClosed() && pd.isClosed() && other.isClosed(), "closed on DEVICE_FATAL");
            assertTrue(device.isFatal());
            // Everything refuses use, and closing what is left is harmless.
            org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class,
                    () -> endpoint.receive(1, TimeUnit.MILLISECONDS));
            endpoint.close();
            held.forEach(AddressHandle::close);
            cache.close();
        } finally {
            device.close();
            if (delete != null && delete.isAlive()) {
                delete.waitFor(60, TimeUnit.SECONDS);
            }
            restore(name);
        }
    }

    /** Adds rxe0 back on veth0 and waits until the VM's own GID is back at its index, as guest.sh does. */
    static void restore(String name) throws Exception {
        if (!Files.exists(Path.of("/sys/class/infiniband", name))) {
            run("rdma", "link", "add", name, "type", "rxe", "netdev", NETDEV);
        }
        Path gid = Path.of("/sys/class/infiniband", name, "ports/1/gids", String.valueOf(NativeDevice.gidIndex()));
        String want = Gid.parse("::ffff:" + System.getenv("EFA_AH_VM_LOCAL_IP")).toString();
        for (int i = 0; i < 400; i++) {
            if (Files.exists(gid) && Gid.parse(Files.readString(gid).trim()).toString().equals(want)) {
                return;
            }
            TimeUnit.MILLISECONDS.sleep(50);
        }
        throw new AssertionError(name + " came back without " + want + " at GID index " + NativeDevice.gidIndex());
    }
}
