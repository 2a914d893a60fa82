package org.efaah.it;

import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

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
}
