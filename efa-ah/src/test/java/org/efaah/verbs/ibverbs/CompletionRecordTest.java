package org.efaah.verbs.ibverbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.efaah.verbs.WorkCompletion;
import org.junit.jupiter.api.Test;

/**
 * The Java half of the completion record of efa_ah_native.h (the C half, efa_ah_cqe_pack, is
 * checked by test_efa_ah_native's completion_records_hold_every_field): every field read back
 * at its extremes, none bleeding into its neighbour.
 */
class CompletionRecordTest {

    private static ByteBuffer record(int index, long w0, long w1, long w2, long w3) {
        ByteBuffer b = ByteBuffer.allocateDirect(2 * NativeVerbs.CQE_WORDS * Long.BYTES).order(ByteOrder.nativeOrder());
        int base = index * NativeVerbs.CQE_WORDS * Long.BYTES;
        b.putLong(base, w0).putLong(base + 8, w1).putLong(base + 16, w2).putLong(base + 24, w3);
        return b;
    }

    @Test
    void everyFieldAtItsExtremes() {
        // byte_len 2^32 - 1, status 21, opcode 129, wc_flags 0xFFFF; qp_num and src_qp 24 bits, slid (the AHN) 0xFFFE;
        // vendor_err 2^32 - 1, pkey_index 0xFFFF, dlid_path_bits 0xFF, sl 15, the GID valid bit.
        long w1 = 0xFFFFFFFFL | 21L << 32 | 129L << 40 | 0xFFFFL << 48;
        long w2 = 0xFFFFFFL | 0xFFFFFEL << 24 | 0xFFFEL << 48;
        long w3 = 0xFFFFFFFFL | 0xFFFFL << 32 | 0xFFL << 48 | 15L << 56 | 1L << 63;
        WorkCompletion wc = new WorkCompletion();
        assertTrue(NativeVerbsProvider.readRecord(record(1, -2L, w1, w2, w3), 1, wc));
        assertEquals(-2L, wc.wrId);
        assertEquals(0xFFFFFFFF, wc.byteLength, "byte_len, unsigned 32 bits as the int's bits");
        assertEquals(21, wc.status);
        assertEquals(129, wc.opcode);
        assertEquals(0xFFFF, wc.wcFlags);
        assertEquals(0xFFFFFF, wc.qpNum);
        assertEquals(0xFFFFFE, wc.srcQp);
        assertEquals(0xFFFE, wc.slid);
        assertEquals(0xFFFFFFFF, wc.vendorError);
        assertEquals(0xFFFF, wc.pkeyIndex);
        assertEquals(0xFF, wc.dlidPathBits);
        assertEquals(15, wc.sl);
    }

    @Test
    void zerosReadAsZeros() {
        WorkCompletion wc = new WorkCompletion();
        wc.status = 5;
        wc.slid = 7;
        wc.sl = 3;
        assertFalse(NativeVerbsProvider.readRecord(record(0, 0, 0, 0, 0), 0, wc));
        assertEquals(0, wc.status);
        assertEquals(0, wc.slid);
        assertEquals(0, wc.sl);
        assertEquals(0, wc.byteLength);
    }
}
