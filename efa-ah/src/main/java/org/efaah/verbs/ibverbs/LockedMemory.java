package org.efaah.verbs.ibverbs;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.efaah.verbs.Errno;

/**
 * Explains ENOMEM and EPERM from verbs that pin memory ({@code ibv_reg_mr}, and the rings of
 * {@code ibv_create_cq} and {@code ibv_create_qp}): the kernel counts pinned pages against
 * {@code RLIMIT_MEMLOCK} unless the process has {@code CAP_IPC_LOCK}, and containers often allow
 * only 8 MiB (64 KiB in older defaults). The limit is read from {@code /proc/self/limits}.
 */
final class LockedMemory {
    private static final Path LIMITS = Path.of("/proc/self/limits");

    private LockedMemory() {
    }

    /**
     * The detail for a failed pinning verb: {@code asked} as given, and when the errno is ENOMEM
     * or EPERM the current RLIMIT_MEMLOCK and how to raise it.
     *
     * @param rc    the stub's negative return
     * @param asked what was asked for, e.g. "65536 bytes" or "cqe 4096"
     */
    static String detail(int rc, String asked) {
        Errno e = Errno.of(Math.abs(rc));
        if (e != Errno.ENOMEM && e != Errno.EPERM) {
            return asked;
        }
        return asked + "; " + explain(readLimits());
    }

    static String explain(List<String> limits) {
        String limit = "unknown (no 'Max locked memory' in /proc/self/limits)";
        for (String line : limits) {
            if (line.startsWith("Max locked memory")) {
                String[] f = line.substring("Max locked memory".length()).trim().split("\\s+");
                if (f.length >= 2) {
                    limit = describe(f[0]) + " (hard limit " + describe(f[1]) + ")";
                }
            }
        }
        return "pinned memory counts against RLIMIT_MEMLOCK, now " + limit + " for this process; raise it "
                + "(ulimit -l, LimitMEMLOCK= for a systemd service, --ulimit memlock=-1 for docker run) or run with "
                + "CAP_IPC_LOCK";
    }

    private static String describe(String value) {
        if (value.equals("unlimited")) {
            return "unlimited";
        }
        try {
            long bytes = Long.parseLong(value);
            return bytes % (1024 * 1024) == 0 && bytes > 0 ? bytes + " bytes (" + bytes / (1024 * 1024) + " MiB)"
                    : bytes % 1024 == 0 && bytes > 0 ? bytes + " bytes (" + bytes / 1024 + " KiB)" : bytes + " bytes";
        } catch (NumberFormatException e) {
            return value;
        }
    }

    private static List<String> readLimits() {
        try {
            return Files.readAllLines(LIMITS);
        } catch (IOException | RuntimeException e) {
            return List.of();
        }
    }
}
