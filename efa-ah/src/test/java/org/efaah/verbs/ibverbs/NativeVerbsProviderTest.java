package org.efaah.verbs.ibverbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.bytedeco.javacpp.Loader;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Errno;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.spi.VerbsProviderFactory;
import org.efaah.verbs.VerbsProviders;
import org.efaah.verbs.WorkCompletion;
import org.junit.jupiter.api.Test;

/** The native provider where the JNI library is built, with or without a device. */
class NativeVerbsProviderTest {

    @Test
    void libraryLoadsWhereBuilt() {
        NativeLibrary.Probe probe = NativeTestSupport.assumeLoaded();
        assertNotNull(probe.libraryPath());
        assertTrue(probe.deviceCount() >= 0, "ibv_get_device_list must not fail: " + probe.cause());
    }

    @Test
    void noDeviceReadsAsUnavailableWithItsCause() {
        NativeTestSupport.assumeNoDevice();
        VerbsProviderFactory factory = new NativeVerbsProviderFactory();
        assertFalse(factory.isAvailable());
        assertEquals("no RDMA device: ibv_get_device_list returned none", factory.unavailabilityCause().getMessage());
        assertEquals(List.of(), new NativeVerbsProvider().deviceNames());
    }

    @Test
    void autoFallsBackToMockWithoutDevice() {
        NativeTestSupport.assumeNoDevice();
        assertEquals("mock", VerbsProviders.factory("auto").name());
    }

    @Test
    void forcingNativeWithoutDeviceSaysWhy() {
        NativeTestSupport.assumeNoDevice();
        UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                () -> VerbsProviders.open("native"));
        assertNotNull(e.getCause());
        assertTrue(VerbsProviders.describe(e).contains("no RDMA device: ibv_get_device_list returned none"),
                VerbsProviders.describe(e));
    }

    @Test
    void factoryIsFoundByServiceLoaderAboveTheMock() {
        VerbsProviderFactory nativeFactory = VerbsProviders.factory("native");
        assertEquals(NativeVerbsProviderFactory.class, nativeFactory.getClass());
        assertEquals(100, nativeFactory.priority());
        assertTrue(nativeFactory.priority() > VerbsProviders.factory("mock").priority());
    }

    @Test
    void propertyDisablesNativeOutright() {
        NativeLibrary.Probe probe = NativeLibrary.probe(true);
        assertFalse(probe.available());
        assertTrue(probe.cause().getMessage().contains("efaah.native.disable=true"), probe.cause().getMessage());
    }

    @Test
    void jniLibraryNeedsLibibverbsButNotLibefa() throws Exception {
        NativeLibrary.Probe probe = NativeTestSupport.assumeLoaded();
        String dynamic = run("readelf", "-d", probe.libraryPath());
        assertTrue(dynamic.contains("Shared library: [libibverbs.so.1]"), dynamic);
        assertFalse(dynamic.contains("libefa"), "libefa must be dlopen()ed, never NEEDED:\n" + dynamic);
    }

    @Test
    void zeroHandlesGiveEinvalNotACrash() {
        NativeTestSupport.assumeLoaded();
        NativeVerbsProvider p = new NativeVerbsProvider();
        AddressHandleAttributes attributes = AddressHandleAttributes.forGid("fe80::1");
        List<Consumer<NativeVerbsProvider>> calls = List.of(
                v -> v.closeDevice(0), v -> v.queryDevice(0), v -> v.queryPort(0, 1), v -> v.queryGid(0, 1, 0),
                v -> v.allocatePd(0), v -> v.deallocatePd(0), v -> v.createAh(0, attributes), v -> v.destroyAh(0),
                v -> v.createCq(0, 16), v -> v.destroyCq(0), v -> v.registerMemory(0, ByteBuffer.allocateDirect(64)),
                v -> v.deregisterMemory(0), v -> v.createUdQp(0, 0, 0, 1, 1), v -> v.activateUdQp(0, 1, 0, 0x11111111),
                v -> v.destroyQp(0), v -> v.postSend(0, 0, 1, 0x11111111, 0, 0, 1, 7),
                v -> v.postReceive(0, 0, 0, 64, 7), v -> v.pollCq(0, holders(4)),
                v -> v.initAhFromWc(0, 1, new WorkCompletion(), 0, 0));
        for (Consumer<NativeVerbsProvider> call : calls) {
            VerbsException e = assertThrows(VerbsException.class, () -> call.accept(p));
            assertEquals(Errno.EINVAL, e.errno(), e.getMessage());
            assertTrue(e.operation().startsWith("ibv_"), e.operation());
        }
    }

    @Test
    void createAhFailureNamesTheCallAndTheDestination() {
        NativeTestSupport.assumeLoaded();
        VerbsException e = assertThrows(VerbsException.class,
                () -> new NativeVerbsProvider().createAh(0, AddressHandleAttributes.forGid("::ffff:10.0.0.5")));
        assertEquals("ibv_create_ah failed: EINVAL (22): dgid ::ffff:10.0.0.5 port 1 sgid_index 0", e.getMessage());
    }

    @Test
    void unknownDeviceIsEnodev() {
        NativeTestSupport.assumeLoaded();
        VerbsException e = assertThrows(VerbsException.class,
                () -> new NativeVerbsProvider().openDevice("efa-ah-no-such-device"));
        assertEquals(Errno.ENODEV, e.errno());
        assertEquals("ibv_open_device", e.operation());
    }

    @Test
    void badArgumentsAreRejectedBeforeNativeCode() {
        NativeTestSupport.assumeLoaded();
        NativeVerbsProvider p = new NativeVerbsProvider();
        assertThrows(NullPointerException.class, () -> p.openDevice(null));
        assertThrows(IllegalArgumentException.class, () -> p.openDevice(""));
        assertThrows(IllegalArgumentException.class, () -> p.openDevice("a\0b"));
        assertThrows(IllegalArgumentException.class, () -> p.openDevice("x".repeat(64)));
        assertThrows(IllegalArgumentException.class, () -> p.queryPort(1, 0));
        assertThrows(IllegalArgumentException.class, () -> p.queryPort(1, 256));
        assertThrows(IllegalArgumentException.class, () -> p.queryGid(1, 1, -1));
        assertThrows(NullPointerException.class, () -> p.createAh(1, null));
        // Handle 1 would crash the JVM if it reached C: each of these must be refused before.
        assertThrows(IllegalArgumentException.class, () -> p.createCq(1, 0));
        assertThrows(IllegalArgumentException.class, () -> p.createCq(1, 65537));
        assertThrows(NullPointerException.class, () -> p.registerMemory(1, null));
        assertThrows(IllegalArgumentException.class, () -> p.registerMemory(1, ByteBuffer.allocate(64)));
        assertThrows(IllegalArgumentException.class, () -> p.registerMemory(1, ByteBuffer.allocateDirect(0)));
        assertThrows(IllegalArgumentException.class, () -> p.createUdQp(1, 1, 1, 0, 1));
        assertThrows(IllegalArgumentException.class, () -> p.createUdQp(1, 1, 1, 1, 8193));
        assertThrows(IllegalArgumentException.class, () -> p.activateUdQp(1, 0, 0, 0));
        assertThrows(IllegalArgumentException.class, () -> p.activateUdQp(1, 1, 0x10000, 0));
        assertThrows(IllegalArgumentException.class, () -> p.postSend(1, 1, 0x1000000, 0, 1, 0, 1, 0));
        assertThrows(IllegalArgumentException.class, () -> p.postSend(1, 1, -1, 0, 1, 0, 1, 0));
        assertThrows(IllegalArgumentException.class, () -> p.postSend(1, 1, 1, 0, 1, -1, 1, 0));
        assertThrows(IllegalArgumentException.class, () -> p.postSend(1, 1, 1, 0, 1, 0, -1, 0));
        assertThrows(IllegalArgumentException.class, () -> p.postReceive(1, 1, -1, 64, 0));
        assertThrows(IllegalArgumentException.class, () -> p.postReceive(1, 1, 0, -1, 0));
        assertThrows(NullPointerException.class, () -> p.pollCq(1, null));
        assertEquals(0, p.pollCq(1, new WorkCompletion[0]), "nothing to fill: no native call");
        assertThrows(NullPointerException.class, () -> p.initAhFromWc(1, 1, null, 1, 0));
        assertThrows(IllegalArgumentException.class, () -> p.initAhFromWc(1, 0, new WorkCompletion(), 1, 0));
        assertThrows(IllegalArgumentException.class, () -> p.initAhFromWc(1, 1, new WorkCompletion(), 1, -1));
        WorkCompletion wc = new WorkCompletion();
        wc.slid = 0x10000;
        assertThrows(IllegalArgumentException.class, () -> p.initAhFromWc(1, 1, wc, 1, 0));
        wc.slid = 0;
        wc.sl = 16;
        assertThrows(IllegalArgumentException.class, () -> p.initAhFromWc(1, 1, wc, 1, 0));
        wc.sl = 0;
        wc.dlidPathBits = 256;
        assertThrows(IllegalArgumentException.class, () -> p.initAhFromWc(1, 1, wc, 1, 0));
        wc.dlidPathBits = 0;
        wc.pkeyIndex = 0x10000;
        assertThrows(IllegalArgumentException.class, () -> p.initAhFromWc(1, 1, wc, 1, 0));
    }

    @Test
    void completionLayoutInJavaMatchesTheStruct() {
        NativeTestSupport.assumeLoaded();
        assertEquals(NativeVerbs.Wc.SIZE, Loader.sizeof(NativeVerbs.Wc.class));
        assertEquals(NativeVerbs.Wc.WR_ID, Loader.offsetof(NativeVerbs.Wc.class, "wr_id"));
        assertEquals(NativeVerbs.Wc.STATUS, Loader.offsetof(NativeVerbs.Wc.class, "status"));
        assertEquals(NativeVerbs.Wc.OPCODE, Loader.offsetof(NativeVerbs.Wc.class, "opcode"));
        assertEquals(NativeVerbs.Wc.VENDOR_ERR, Loader.offsetof(NativeVerbs.Wc.class, "vendor_err"));
        assertEquals(NativeVerbs.Wc.BYTE_LEN, Loader.offsetof(NativeVerbs.Wc.class, "byte_len"));
        assertEquals(NativeVerbs.Wc.QP_NUM, Loader.offsetof(NativeVerbs.Wc.class, "qp_num"));
        assertEquals(NativeVerbs.Wc.SRC_QP, Loader.offsetof(NativeVerbs.Wc.class, "src_qp"));
        assertEquals(NativeVerbs.Wc.WC_FLAGS, Loader.offsetof(NativeVerbs.Wc.class, "wc_flags"));
        assertEquals(NativeVerbs.Wc.PKEY_INDEX, Loader.offsetof(NativeVerbs.Wc.class, "pkey_index"));
        assertEquals(NativeVerbs.Wc.SLID, Loader.offsetof(NativeVerbs.Wc.class, "slid"));
        assertEquals(NativeVerbs.Wc.SL, Loader.offsetof(NativeVerbs.Wc.class, "sl"));
        assertEquals(NativeVerbs.Wc.DLID_PATH_BITS, Loader.offsetof(NativeVerbs.Wc.class, "dlid_path_bits"));
        NativeVerbsProvider.Scratch scratch = NativeVerbsProvider.Scratch.get();
        assertEquals(NativeVerbsProvider.Scratch.CAPACITY * NativeVerbs.Wc.SIZE, scratch.view.capacity(),
                "the view spans the whole per-thread array");
        assertEquals(scratch.wc.address(), new org.bytedeco.javacpp.BytePointer(scratch.view).address());
        assertSame(scratch, NativeVerbsProvider.Scratch.get(), "one scratch per thread, made once");
    }

    private static WorkCompletion[] holders(int n) {
        WorkCompletion[] holders = new WorkCompletion[n];
        for (int i = 0; i < n; i++) {
            holders[i] = new WorkCompletion();
        }
        return holders;
    }

    @Test
    void stubConversionsThroughTheBinding() {
        NativeTestSupport.assumeLoaded();
        int[] expected = {0, 256, 512, 1024, 2048, 4096, 0};
        for (int mtu = 0; mtu < expected.length; mtu++) {
            assertEquals(expected[mtu], NativeVerbs.efa_ah_mtu_bytes(mtu), "ibv_mtu " + mtu);
        }
        assertEquals(-16, NativeVerbs.efa_ah_error_from_rc(16, 0));
        assertEquals(-12, NativeVerbs.efa_ah_error_from_rc(-1, 12));
        assertEquals(-5, NativeVerbs.efa_ah_error_from_rc(0, 0));
        int efadv = NativeVerbs.efa_ah_efadv_available();
        assertTrue(efadv == 0 || efadv == 1);
    }

    @Test
    void unbuiltLibraryReadsAsUnavailableWithTheReason() {
        VerbsProviderFactory factory = new NativeVerbsProviderFactory();
        if (NativeLibrary.libraryResource() != null) {
            // Built here: the unbuilt message is MissingPlatformJarTest's. Not a skip, whose surefire
            // summary is a WARNING line in a green build.
            assertTrue(factory.isAvailable() || factory.unavailabilityCause() != null, "unavailable without a reason");
            return;
        }
        assertFalse(factory.isAvailable());
        assertTrue(factory.unavailabilityCause().getMessage()
                .startsWith("efa-ah was built without the native library"), factory.unavailabilityCause().getMessage());
        assertEquals("mock", VerbsProviders.factory("auto").name());
        UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class, factory::create);
        assertTrue(VerbsProviders.describe(e).contains("no infiniband/verbs.h at build time"));
    }

    private static String run(String... command) throws IOException, InterruptedException {
        Process process;
        try {
            process = new ProcessBuilder(command).redirectErrorStream(true).start();
        } catch (IOException e) {
            assumeTrue(false, command[0] + " is not installed (binutils): " + e.getMessage());
            throw e;
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (InputStream in = process.getInputStream()) {
            in.transferTo(out);
        }
        assertTrue(process.waitFor(30, TimeUnit.SECONDS), command[0] + " did not finish");
        assertEquals(0, process.exitValue(), out.toString(StandardCharsets.UTF_8));
        return out.toString(StandardCharsets.UTF_8);
    }
}
