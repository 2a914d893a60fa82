package org.efaah.verbs;

import org.efaah.verbs.spi.VerbsProvider;
import org.efaah.verbs.spi.VerbsProviderFactory;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class VerbsProvidersTest {

    @AfterEach
    void clearProperty() {
        System.clearProperty(VerbsProviders.PROPERTY);
    }

    @Test
    void autoFallsBackToTheMockWhereNativeIsUnavailable() {
        VerbsProviderFactory nativeFactory = VerbsProviders.factories().stream()
                .filter(f -> f.name().equals("native")).findFirst().orElse(null);
        if (nativeFactory != null && nativeFactory.isAvailable()) {
            assertEquals("native", VerbsProviders.factory("auto").name());
        } else {
            try (VerbsProvider p = VerbsProviders.open("auto")) {
                assertEquals("mock", p.name());
            }
        }
    }

    // Issue 12 case 10: where the kernel lists RDMA devices, auto does not quietly run the mock.
    @Test
    void autoFailsWhenTheKernelListsDevicesTheNativeProviderCannotUse(@TempDir Path sysfs) throws Exception {
        VerbsProviderFactory nativeFactory = VerbsProviders.factory("native");
        assumeFalse(nativeFactory.isAvailable(), "the native provider is available on this host");
        Files.createDirectory(sysfs.resolve("rxe0"));
        UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                () -> VerbsProviders.factory("auto", sysfs));
        assertTrue(e.getMessage().contains("RDMA device(s) rxe0") && e.getMessage().contains("native provider cannot")
                && e.getMessage().contains(VerbsProviders.describe(nativeFactory.unavailabilityCause()))
                && e.getMessage().contains("--provider mock"), e.getMessage());
        assertEquals("mock", VerbsProviders.factory("mock", sysfs).name(), "an explicit choice allows the mock");
        System.setProperty("efaah.native.disable", "true");
        try {
            assertEquals("mock", VerbsProviders.factory("auto", sysfs).name(), "so does switching native off");
        } finally {
            System.clearProperty("efaah.native.disable");
        }
    }

    // Issue 27 case 2: a wrapper that quotes its cause (JavaCPP's load error) printed it twice.
    @Test
    void describeSaysAQuotedCauseOnce() {
        Throwable jdk = new IllegalCallerException("Illegal native access from an unnamed module");
        Throwable wrapped = new IllegalStateException("native library failed to load: " + jdk.getMessage(),
                new UnsatisfiedLinkError(jdk.getMessage()).initCause(jdk));
        assertEquals("native library failed to load: Illegal native access from an unnamed module",
                VerbsProviders.describe(wrapped));
        assertEquals("outer <- inner", VerbsProviders.describe(new RuntimeException("outer", new RuntimeException("inner"))));
    }

    @Test
    void autoTakesTheMockQuietlyWhereTheKernelListsNoDevice(@TempDir Path sysfs) {
        assumeFalse(VerbsProviders.factory("native").isAvailable(), "the native provider is available on this host");
        assertEquals("mock", VerbsProviders.factory("auto", sysfs).name());
        assertEquals("mock", VerbsProviders.factory("auto", sysfs.resolve("missing")).name());
    }

    @Test
    void mockIsSelectableByNameAndProperty() {
        try (VerbsProvider p = VerbsProviders.open("MOCK")) {
            assertEquals("mock", p.name());
        }
        System.setProperty(VerbsProviders.PROPERTY, "mock");
        assertEquals("mock", VerbsProviders.configuredChoice());
        try (VerbsProvider p = VerbsProviders.open()) {
            assertEquals("mock", p.name());
        }
    }

    @Test
    void unknownNamesAreRejectedWithTheValidChoices() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> VerbsProviders.open("rdma"));
        assertTrue(e.getMessage().contains("'rdma' is unknown; valid: auto,"), e.getMessage());
        assertTrue(e.getMessage().contains("mock"), e.getMessage());
    }

    @Test
    void errnoNamesRoundTrip() {
        assertEquals(Errno.ENOMEM, Errno.of(-12));
        assertEquals(Errno.ETIME, Errno.of(62));
        assertEquals(Errno.UNKNOWN, Errno.of(4095));
        VerbsException e = new VerbsException("ibv_create_ah", -4095, null);
        assertEquals("ibv_create_ah failed: errno (4095)", e.getMessage());
        assertEquals(4095, e.errnoValue());
    }
}
