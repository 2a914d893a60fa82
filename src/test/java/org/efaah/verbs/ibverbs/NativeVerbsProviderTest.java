package org.efaah.verbs.ibverbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Errno;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.VerbsProviderFactory;
import org.efaah.verbs.VerbsProviders;
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
                v -> v.initAhFromWc(0, 1, 0, 0, 0, 0, 0, null));
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
        assertThrows(IllegalArgumentException.class, () -> p.initAhFromWc(1, 1, NativeVerbs.WC_GRH, 0, 0, 0, 0, null));
        assertThrows(IllegalArgumentException.class,
                () -> p.initAhFromWc(1, 1, NativeVerbs.WC_GRH, 0, 0, 0, 0, new byte[39]));
        assertThrows(IllegalArgumentException.class, () -> p.initAhFromWc(1, 1, 0, 0, 0x10000, 0, 0, null));
        assertThrows(IllegalArgumentException.class, () -> p.initAhFromWc(1, 1, 0, 0, 0, 16, 0, null));
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
        assumeTrue(NativeLibrary.libraryResource() == null, "the JNI library is built: checked elsewhere");
        VerbsProviderFactory factory = new NativeVerbsProviderFactory();
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
