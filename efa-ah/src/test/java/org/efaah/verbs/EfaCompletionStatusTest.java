package org.efaah.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.Map;
import org.junit.jupiter.api.Test;

class EfaCompletionStatusTest {
    /**
     * {@code enum efa_io_comp_status} of rdma-core's {@code providers/efa/efa_io_defs.h} and the
     * {@code ibv_wc_status} its {@code to_ibv_status} gives each, read from the source.
     */
    private static final Map<Integer, Integer> HEADER = Map.ofEntries(
            Map.entry(0, 0), Map.entry(1, 5), Map.entry(2, 2), Map.entry(3, 2), Map.entry(4, 2),
            Map.entry(5, 4), Map.entry(6, 1), Map.entry(7, 10), Map.entry(8, 16), Map.entry(9, 15),
            Map.entry(10, 13), Map.entry(11, 9), Map.entry(12, 7), Map.entry(13, 20), Map.entry(14, 11),
            Map.entry(15, 20), Map.entry(18, 9));

    @Test
    void everyStatusOfTheHeaderIsKnownWithItsVerbsStatus() {
        HEADER.forEach((code, ibv) -> {
            EfaCompletionStatus status = EfaCompletionStatus.of(code);
            assertEquals(code, status == null ? null : status.code(), "efa_io_comp_status " + code);
            assertEquals(ibv, status.ibvStatus(), status.headerName());
        });
        assertEquals(HEADER.size(), EfaCompletionStatus.values().length);
        assertEquals("EFA_IO_COMP_STATUS_REMOTE_ERROR_FEATURE_MISMATCH", EfaCompletionStatus.of(18).headerName());
    }

    @Test
    void codesTheHeaderDoesNotHaveAreUnknown() {
        for (int code : new int[] {-1, 16, 17, 19, 255, Integer.MAX_VALUE, Integer.MIN_VALUE}) {
            assertNull(EfaCompletionStatus.of(code), "code " + code);
        }
    }
}
