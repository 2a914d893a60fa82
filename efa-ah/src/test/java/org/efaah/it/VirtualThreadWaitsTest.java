package org.efaah.it;

import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Issue 35 item 4 on the mock: receives on virtual threads wait without holding a carrier (see
 * {@link VirtualThreadWaits}). The mock's channel waited on a monitor, which keeps the carrier on
 * Java 21 to 23 (JEP 491 lets it go from 24); it waits on a j.u.c condition now.
 */
@Tag("timing")
class VirtualThreadWaitsTest {
    @Test
    void receivesOnVirtualThreadsLeaveTheCarriersToOthers() throws Exception {
        VirtualThreadWaits.runInChild("mock", Map.of());
    }

    /** A send waiting for a slot, a flush and a close, each kept waiting by RNR (see {@link VirtualThreadSendWaits}). */
    @ParameterizedTest(name = "{0}, RNR kept by the {1}")
    @CsvSource({"send, device", "send, resends", "flush, device", "flush, resends", "close, device"})
    void sendSideWaitsOnVirtualThreadsLeaveTheCarriersToOthers(String kind, String policy) throws Exception {
        VirtualThreadSendWaits.runInChild("mock", Map.of(), kind, policy);
    }
}
