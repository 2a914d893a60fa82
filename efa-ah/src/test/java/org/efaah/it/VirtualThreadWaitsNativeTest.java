package org.efaah.it;

import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Issue 35 item 4 through the native provider (over the EFA double here, a device elsewhere):
 * receives on virtual threads park while the library's poller thread waits for their channels'
 * fds (see {@link VirtualThreadWaits}). They slept in poll(2) before, each holding its carrier: on
 * two carriers the ticker made 0 ticks, and the receives were RUNNABLE, never parked. The child
 * keeps the mode of the run (with or without CQ notifications: without, waits park in short steps).
 */
@Tag("native")
@Tag("timing")
class VirtualThreadWaitsNativeTest {
    @Test
    void receivesOnVirtualThreadsParkAndThePollerUnparksThem() throws Exception {
        VirtualThreadWaits.runInChild("native", Map.of());
    }
}
