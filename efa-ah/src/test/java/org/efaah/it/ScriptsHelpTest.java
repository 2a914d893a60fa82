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
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 27: every script in {@code scripts/} answers {@code --help} and {@code -h} with its usage,
 * exit 0, and does nothing else ({@code scripts/test --help} used to start the whole suite: apt-get,
 * {@code mvn install}, the VM). "Nothing else" is checked as: none of the commands that do a
 * script's work (Maven, apt and dpkg, CMake, qemu, sudo...) is run, they being replaced on the PATH
 * by stubs that record the call, and the empty HOME given to the script stays empty (caches such as
 * {@code ~/.cache/efa-ah} are written under it).
 */
class ScriptsHelpTest {
    private static final Path SCRIPTS = Path.of("..", "scripts");
    /** What the scripts run to do their work; java is left alone ({@code scripts/efa-ah --help} may print the CLI's). */
    private static final List<String> WORKERS = List.of("mvn", "javac", "apt-get", "apt-cache", "sudo", "dpkg",
            "dpkg-query", "dpkg-deb", "cmake", "ctest", "make", "gcc", "readelf", "nm", "qemu-system-x86_64",
            "qemu-aarch64", "flock", "git", "ibv_ud_pingpong", "ib_send_lat", "ib_send_bw", "ldconfig", "modinfo");

    @TempDir
    Path dir;

    @TestFactory
    Stream<DynamicTest> everyScriptAnswersHelpAndStops() throws IOException {
        assumeTrue(Files.isDirectory(SCRIPTS), "run from the efa-ah module directory: no " + SCRIPTS);
        List<Path> scripts;
        try (Stream<Path> s = Files.list(SCRIPTS)) {
            scripts = s.filter(Files::isRegularFile).filter(Files::isExecutable).sorted().toList();
        }
        assertFalse(scripts.isEmpty(), "no script in " + SCRIPTS);
        return scripts.stream().flatMap(script -> Stream.of("--help", "-h").map(option ->
                DynamicTest.dynamicTest(script.getFileName() + " " + option, () -> answersHelp(script, option))));
    }

    private void answersHelp(Path script, String option) throws IOException, InterruptedException {
        String name = script.getFileName().toString();
        Path run = Files.createTempDirectory(dir, name);
        Path stubs = Files.createDirectories(run.resolve("bin"));
        Path calls = run.resolve("calls.txt");
        Path home = Files.createDirectories(run.resolve("home"));
        for (String worker : WORKERS) {
            Path stub = stubs.resolve(worker);
            Files.writeString(stub, "#!/bin/sh\necho \"" + worker + " $*\" >>'" + calls + "'\nexit 97\n");
            assertTrue(stub.toFile().setExecutable(true));
        }
        ProcessBuilder builder = new ProcessBuilder("bash", script.toString(), option).redirectErrorStream(true)
                .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
        builder.environment().put("PATH", stubs + ":" + System.getenv("PATH"));
        builder.environment().put("HOME", home.toString());
        builder.environment().remove("XDG_CACHE_HOME");
        Process process = builder.start();
        boolean done = process.waitFor(20, TimeUnit.SECONDS);
        if (!done) {
            process.destroyForcibly();
        }
        String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(done, name + " " + option + " did not stop within 20 s: " + out);
        String ran = Files.exists(calls) ? Files.readString(calls, StandardCharsets.UTF_8) : "";
        assertEquals("", ran, name + " " + option + " did work (ran these); its output: " + out);
        assertEquals(0, process.exitValue(), name + " " + option + ": " + out);
        assertTrue(out.startsWith("Usage: scripts/" + name), name + " " + option
                + " must begin with 'Usage: scripts/" + name + "', printed: " + out);
        try (Stream<Path> left = Files.list(home)) {
            assertEquals(List.of(), left.toList(), name + " " + option + " wrote into HOME");
        }
    }
}
