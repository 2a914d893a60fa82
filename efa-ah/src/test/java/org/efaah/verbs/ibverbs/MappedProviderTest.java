package org.efaah.verbs.ibverbs;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 33 section 2: the host report's provider line read "none (libefa-rdmav*.so not mapped)"
 * on every real host: rdma-core installs the provider as a symlink to libefa.so.1.N, and
 * /proc/self/maps names the target. A tree laid out as rdma-core installs it.
 */
class MappedProviderTest {

    @Test
    void theProviderIsTheLinkWhoseTargetIsMapped(@TempDir Path lib) throws Exception {
        Path verbs = Files.createFile(lib.resolve("libibverbs.so.1.14.56.0"));
        Path efa = Files.createFile(lib.resolve("libefa.so.1.3.56.0"));
        Files.createDirectory(lib.resolve("libibverbs"));
        Path link = Files.createSymbolicLink(lib.resolve("libibverbs/libefa-rdmav34.so"), Path.of("../libefa.so.1.3.56.0"));
        Files.createSymbolicLink(lib.resolve("libibverbs/libmlx5-rdmav34.so"), Path.of("../libmlx5.so.1"));
        Map<String, String> found = EfaHostFiguresTest.mappedLibraries(
                List.of(verbs.toRealPath().toString(), efa.toRealPath().toString(), "/usr/lib/libc.so.6"), List.of());
        assertEquals(link + " -> " + efa.toRealPath(), found.get("provider"));
        assertEquals(efa.toRealPath().toString(), found.get("libefa"));
        assertEquals(verbs.toRealPath().toString(), found.get("libibverbs"));
    }

    @Test
    void aProviderMappedUnderItsOwnNameIsTakenAsIsAndNoneIsSaid(@TempDir Path lib) throws Exception {
        assertEquals("/x/libefa-rdmav34.so",
                EfaHostFiguresTest.mappedLibraries(List.of("/x/libefa-rdmav34.so"), List.of(lib)).get("provider"));
        assertEquals("none (libefa-rdmav*.so not mapped)",
                EfaHostFiguresTest.mappedLibraries(List.of("/x/libibverbs.so.1"), List.of(lib)).get("provider"));
    }
}
