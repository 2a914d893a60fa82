package org.efaah.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

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
