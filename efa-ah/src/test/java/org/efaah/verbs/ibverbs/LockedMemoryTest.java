package org.efaah.verbs.ibverbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Issue 12 case 12: ENOMEM/EPERM of a pinning verb names RLIMIT_MEMLOCK, its value and the bytes asked. */
class LockedMemoryTest {
    private static final List<String> LIMITS = List.of(
            "Limit                     Soft Limit           Hard Limit           Units     ",
            "Max open files            1024                 1048576              files     ",
            "Max locked memory         65536                65536                bytes     ");

    @Test
    void namesTheLimitInBytesAndKib() {
        String s = LockedMemory.explain(LIMITS);
        assertTrue(s.contains("RLIMIT_MEMLOCK, now 65536 bytes (64 KiB) (hard limit 65536 bytes (64 KiB))"), s);
        assertTrue(s.contains("CAP_IPC_LOCK") && s.contains("ulimit -l"), s);
        assertTrue(LockedMemory.explain(List.of("Max locked memory         8388608              unlimited            bytes"))
                .contains("now 8388608 bytes (8 MiB) (hard limit unlimited)"));
    }

    @Test
    void onlyEnomemAndEpermAreExplained() {
        assertEquals("cqe 16", LockedMemory.detail(-22, "cqe 16"));
        String d = LockedMemory.detail(-12, "65536 bytes asked");
        assertTrue(d.startsWith("65536 bytes asked; pinned memory counts against RLIMIT_MEMLOCK, now "), d);
        assertTrue(LockedMemory.detail(-1, "x").contains("RLIMIT_MEMLOCK"));
    }

    @Test
    void theMessageOfTheExceptionCarriesIt() {
        String m = NativeVerbsProvider.error("ibv_reg_mr", -12, LockedMemory.detail(-12, "65536 bytes asked"))
                .getMessage();
        assertTrue(m.startsWith("ibv_reg_mr failed: ENOMEM (12): 65536 bytes asked; pinned memory counts against "
                + "RLIMIT_MEMLOCK"), m);
    }
}
