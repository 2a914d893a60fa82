package org.efaah.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 35: scripts/efa-ah runs a command on Java 25 with the JDK's ahead-of-time cache, made on first
 * use under the user's cache directory, and prints nothing of it (no JVM warning, first run or next);
 * on Java 17 a dynamic class-data-sharing archive, made and used the same way. Needs the CLI jar
 * built (scripts/efa-ah would build it: Maven is stubbed here, so a stale jar skips the test).
 */
class LauncherAotCacheTest {
    private static final Path LAUNCHER = Path.of("..", "scripts", "efa-ah");

    @TempDir
    Path dir;

    private static Path jdk25() throws IOException {
        String configured = System.getenv("EFA_AH_JDK25");
        if (configured != null && !configured.isEmpty()) {
            return Path.of(configured);
        }
        try (Stream<Path> jdks = Files.list(Path.of("/usr/lib/jvm"))) {
            return jdks.filter(j -> {
                try {
                    return Files.isExecutable(j.resolve("bin/java")) && Files.readString(j.resolve("release"))
                            .contains("JAVA_VERSION=\"25");
                } catch (IOException e) {
                    return false;
                }
            }).sorted().findFirst().orElse(null);
        }
    }

    private String[] run(Path javaHome, Path home) throws IOException, InterruptedException {
        return run(javaHome, home, null);
    }

    private String[] run(Path javaHome, Path home, String aot) throws IOException, InterruptedException {
        Path stubs = Files.createDirectories(dir.resolve("bin"));
        Path mvn = stubs.resolve("mvn");
        Files.writeString(mvn, "#!/bin/sh\nexit 97\n");
        assertTrue(mvn.toFile().setExecutable(true));
        ProcessBuilder builder = new ProcessBuilder("bash", LAUNCHER.toString(), "devices", "--provider", "mock")
                .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
        builder.environment().put("PATH", stubs + ":" + (javaHome == null ? "" : javaHome.resolve("bin") + ":")
                + System.getenv("PATH"));
        builder.environment().put("HOME", home.toString());
        builder.environment().remove("XDG_CACHE_HOME");
        builder.environment().remove("EFA_AH_JAVA_OPTS");
        builder.environment().remove("EFA_AH_AOT");
        if (aot != null) {
            builder.environment().put("EFA_AH_AOT", aot);
        }
        Process process = builder.start();
        // A first run trains the cache: seconds of CPU, minutes on a host shared by parallel builds.
        boolean done = process.waitFor(300, TimeUnit.SECONDS);
        if (!done) {
            process.destroyForcibly();
        }
        String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        String err = new String(process.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(done, "scripts/efa-ah devices did not stop within 300 s: " + out + err);
        assumeTrue(!err.contains("efa-ah: building"), "the CLI jar is not current: build it first");
        return new String[] {String.valueOf(process.exitValue()), out, err};
    }

    private static List<Path> files(Path home) throws IOException {
        try (Stream<Path> s = Files.walk(home)) {
            return s.filter(Files::isRegularFile).toList();
        }
    }

    @Test
    void java25RunsWithTheCacheAndPrintsNoWarning() throws Exception {
        Path jdk = jdk25();
        assumeTrue(jdk != null, "no JDK 25 under /usr/lib/jvm (EFA_AH_JDK25)");
        trainsOnceThenUsesItsCache(jdk, "25", ".aot", "cache");
    }

    @Test
    void java17RunsWithAClassDataArchiveAndPrintsNoWarning() throws Exception {
        // Java 17 to 24 have no ahead-of-time cache: a dynamic CDS archive (-XX:ArchiveClassesAtExit,
        // then -XX:SharedArchiveFile) made the same way takes its place.
        Path jdk17 = Runtime.version().feature() == 17 ? Path.of(System.getProperty("java.home"))
                : Path.of("/usr/lib/jvm/java-17-openjdk-amd64");
        assumeTrue(Files.isExecutable(jdk17.resolve("bin/java")), "no Java 17 at " + jdk17);
        trainsOnceThenUsesItsCache(jdk17, "17", ".jsa", "archive");
    }

    /*
     * The launcher on one JVM: the first run says in one line that it makes the cache and makes
     * exactly one under ~/.cache/efa-ah/aot, the second uses it and says nothing; a damaged cache
     * (one left half-written) must not make the JVM print its refusal; EFA_AH_AOT=off makes none
     * and says nothing.
     */
    private void trainsOnceThenUsesItsCache(Path jdk, String feature, String suffix, String kind) throws Exception {
        Path home = Files.createDirectories(dir.resolve("home" + feature));
        for (String run : List.of("first (trains)", "second (uses the " + kind + ")")) {
            String[] result = run(jdk, home);
            String said = run.startsWith("first")
                    ? "efa-ah: making Java " + feature + "'s start-up cache, once for this jar and JVM (about 10 s of CPU;"
                            + " EFA_AH_AOT=off skips it)...\n"
                    : "";
            assertEquals(said, result[2], run + " run's stderr");
            assertEquals("0", result[0], run + ": " + result[1]);
            assertTrue(result[1].contains("efa_0"), run + " listed no mock device: " + result[1]);
            List<Path> made = files(home).stream().filter(p -> p.toString().endsWith(suffix)).toList();
            assertEquals(1, made.size(), run + ": one " + kind + " under ~/.cache/efa-ah/aot, found " + files(home));
            assertTrue(made.get(0).startsWith(home.resolve(".cache/efa-ah/aot")), made.toString());
        }
        Path made = files(home).stream().filter(p -> p.toString().endsWith(suffix)).findFirst().orElseThrow();
        assertTrue(made.toFile().setWritable(true));
        Files.writeString(made, "not a " + kind);
        String[] result = run(jdk, home);
        assertEquals("", result[2], "a damaged " + kind + ": stderr");
        assertEquals("0", result[0], result[1]);
        Path off = Files.createDirectories(dir.resolve("home" + feature + "-off"));
        result = run(jdk, off, "off");
        assertEquals("", result[2], "EFA_AH_AOT=off: stderr");
        assertEquals("0", result[0], result[1]);
        assertFalse(Files.exists(off.resolve(".cache/efa-ah")), "EFA_AH_AOT=off wrote " + files(off));
    }

    @Test
    void aReadOnlyHomeStillRuns() throws Exception {
        Path jdk = jdk25();
        assumeTrue(jdk != null, "no JDK 25 under /usr/lib/jvm (EFA_AH_JDK25)");
        // A file as HOME's parent: no directory can be made under it, even by root.
        Path file = Files.writeString(dir.resolve("a-file"), "");
        String[] result = run(jdk, file.resolve("home"));
        assertEquals("", result[2], "stderr");
        assertEquals("0", result[0], result[1]);
    }
}
