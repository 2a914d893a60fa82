package org.efaah.verbs.ibverbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.bytedeco.javacpp.Loader;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Issue 12 cases 9 (platform names) and 11: loading failures explain themselves. */
class NativeLoadingTest {
    private static final String MOUNTINFO_TMP = "41 26 0:38 / /mnt/noexec rw,nosuid,noexec,relatime - tmpfs tmpfs rw";
    private static final String MOUNTINFO_ROOT = "26 1 254:1 / / rw,relatime - ext4 /dev/vda1 rw";

    @AfterEach
    void clear() {
        System.clearProperty(JavaCppCache.PROPERTY);
    }

    private static URL inAJar() throws IOException {
        return new URL("jar:file:/opt/app/efa-ah.jar!/org/efaah/verbs/ibverbs/linux-x86_64/libjniNativeVerbs.so");
    }

    @Test
    void aarch64LoadsTheArm64Library() {
        assertEquals("linux-arm64", NativeLibrary.platform("Linux", "aarch64"));
        assertEquals("linux-x86_64", NativeLibrary.platform("Linux", "amd64"));
        assertEquals(Loader.getPlatform(), NativeLibrary.platform(System.getProperty("os.name"),
                System.getProperty("os.arch")), "agrees with JavaCPP, which extracts and loads");
    }

    @Test
    void aNoexecMountIsFoundFromMountinfo() {
        assertEquals("/mnt/noexec", JavaCppCache.noexecMount(Path.of("/mnt/noexec/cache/x"),
                List.of(MOUNTINFO_ROOT, MOUNTINFO_TMP)));
        assertNull(JavaCppCache.noexecMount(Path.of("/home/u/.javacpp/cache"), List.of(MOUNTINFO_ROOT, MOUNTINFO_TMP)));
        String m = JavaCppCache.noexec(Path.of("/mnt/noexec/cache"), "/mnt/noexec");
        assertTrue(m.contains("/mnt/noexec/cache") && m.contains("noexec") && m.contains("-D" + JavaCppCache.PROPERTY), m);
    }

    @Test
    void anExplicitCacheDirectoryThatCannotBeMadeIsNamedNotReplaced() throws IOException {
        System.setProperty(JavaCppCache.PROPERTY, "/proc/efa-ah-no-such/cache");
        String m = JavaCppCache.problem(inAJar());
        assertTrue(m != null && m.contains("/proc/efa-ah-no-such/cache") && m.contains("-D" + JavaCppCache.PROPERTY)
                && m.contains("cannot be created"), m);
    }

    @Test
    void aLibraryInAClassDirectoryNeedsNoCache() {
        System.setProperty(JavaCppCache.PROPERTY, "/proc/efa-ah-no-such/cache");
        assertNull(JavaCppCache.problem(null));
    }

    @Test
    void theFirstFailureIsKeptWhateverItIs() {
        NativeLibrary.Probe p = NativeLibrary.probe(false, count -> {
            throw new UnsatisfiedLinkError("undefined symbol: efa_ah_device_list");
        });
        if (NativeLibrary.libraryResource() == null) {
            assertTrue(p.cause().getMessage().contains("built without the native library"), p.cause().getMessage());
            return;
        }
        assertTrue(p.cause() != null && !p.loaded(), String.valueOf(p));
        assertTrue(NativeVerbsTestMessages.chain(p.cause()).contains("undefined symbol: efa_ah_device_list"),
                NativeVerbsTestMessages.chain(p.cause()));
    }

    /**
     * A real noexec mount (tmpfs, needs root): the cache check names it before JavaCPP tries, and
     * the loader's own error text, which the hint recognises, is what it really says.
     */
    @Test
    void aCacheDirectoryOnARealNoexecMountIsNamed(@TempDir Path dir) throws Exception {
        assumeTrue(new ProcessBuilder("id", "-u").start().inputReader().readLine().equals("0"),
                "mounting a noexec tmpfs needs root: skipped (the mountinfo parsing is tested above)");
        Path mount = dir.resolve("noexec");
        Files.createDirectories(mount);
        Process p = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "noexec,size=8m", "tmpfs", mount.toString())
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assumeTrue(p.waitFor() == 0, () -> "cannot mount a tmpfs here (" + out.strip() + "): skipped");
        try {
            System.setProperty(JavaCppCache.PROPERTY, mount.resolve("cache").toString());
            String m = JavaCppCache.problem(inAJar());
            assertTrue(m != null && m.contains(mount.resolve("cache").toString()) && m.contains("mounted noexec")
                    && m.contains("-D" + JavaCppCache.PROPERTY), m);
            URL built = NativeLibrary.libraryResource();
            if (built != null && "file".equals(built.getProtocol())) {
                Path copy = mount.resolve("libjniNativeVerbs.so");
                Files.copy(Path.of(built.toURI()), copy);
                UnsatisfiedLinkError e = assertThrows(UnsatisfiedLinkError.class, () -> System.load(copy.toString()));
                assertTrue(e.getMessage().contains("failed to map segment"), e.getMessage());
                assertTrue(JavaCppCache.hint(e).contains("noexec") && JavaCppCache.hint(e).contains(JavaCppCache.PROPERTY));
            }
        } finally {
            // Lazy: the failed dlopen may still hold the file for a moment.
            new ProcessBuilder("umount", "-l", mount.toString()).start().waitFor();
        }
    }
}
