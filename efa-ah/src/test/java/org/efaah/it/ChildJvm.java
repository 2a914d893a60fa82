package org.efaah.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.efaah.verbs.Device;
import org.efaah.verbs.spi.VerbsProvider;
import org.junit.jupiter.api.Assumptions;

/**
 * A part of a native test run in a JVM of its own: the EFA double reads its switches from the
 * environment when it loads, and a probe that may corrupt or end a JVM must not take the test's
 * JVM (and the host report's figures) with it.
 */
final class ChildJvm {
    /** How long a child may run; every child here ends within seconds. */
    private static final long LIMIT_SECONDS = 60;

    private ChildJvm() {
    }

    /** Skips the calling test unless the native provider's device is the EFA double; {@code why} says what of it the test needs. */
    static void assumeEfaDouble(String why) {
        try (VerbsProvider provider = NativeDevice.provider(); Device device = NativeDevice.open(provider)) {
            Assumptions.assumeTrue(device.attributes().fwVer().endsWith("(efa double)"),
                    "needs the EFA double, " + why + ": " + device.name() + " has fw_ver " + device.attributes().fwVer());
        }
    }

    /**
     * Runs {@code main} with {@code args} in a new JVM of this one's class path, with
     * {@code environment} added to this one's, and returns what it printed (stdout and stderr),
     * once it has ended with exit 0 within the limit; a child still running then is killed.
     */
    static String run(Class<?> main, Map<String, String> environment, String... args)
            throws IOException, InterruptedException {
        return run(Path.of(System.getProperty("java.home"), "bin", "java"), List.of(), main, environment, args);
    }

    /** As {@link #run(Class, Map, String...)}, on {@code java} with {@code options} before the class path. */
    static String run(Path java, List<String> options, Class<?> main, Map<String, String> environment, String... args)
            throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of(java.toString(), "--enable-native-access=ALL-UNNAMED"));
        command.addAll(options);
        command.addAll(List.of("-cp", System.getProperty("java.class.path")));
        String cacheDir = System.getProperty("org.bytedeco.javacpp.cachedir");
        if (cacheDir != null) {
            command.add("-Dorg.bytedeco.javacpp.cachedir=" + cacheDir);
        }
        command.add(main.getName());
        command.addAll(List.of(args));
        // A file, not a pipe: a child that never ends cannot hold this thread in a read.
        Path output = Files.createTempFile("efa-ah-child", ".out");
        try {
            ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectOutput(output.toFile()).redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
            builder.environment().putAll(environment);
            Process p = builder.start();
            boolean ended = p.waitFor(LIMIT_SECONDS, TimeUnit.SECONDS);
            if (!ended) {
                p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
            String text = Files.readString(output, StandardCharsets.UTF_8);
            assertTrue(ended, () -> "the child JVM did not end within " + LIMIT_SECONDS + " s:\n" + text);
            assertEquals(0, p.exitValue(), text);
            return text;
        } finally {
            Files.deleteIfExists(output);
        }
    }

    /** What a child's main runs. */
    interface Body {
        void run() throws Throwable;
    }

    /** A child's main: runs {@code body}; exits 0, or 1 with the failure's stack trace on stdout. */
    static void exit(Body body) {
        try {
            body.run();
        } catch (Throwable t) {
            t.printStackTrace(System.out);
            System.exit(1);
        }
        System.exit(0);
    }

    /** The attributes of an AH to {@code e}'s GID, for a child's sends. */
    static org.efaah.verbs.AddressHandleAttributes attributes(org.efaah.ud.UdEndpoint e) {
        return org.efaah.verbs.AddressHandleAttributes.builder().dgid(e.address().gid()).build();
    }

    /** The {@link org.efaah.ud.WorkCompletionException} {@code r} throws; an AssertionError if none. */
    static org.efaah.ud.WorkCompletionException expectFailure(Runnable r) {
        try {
            r.run();
        } catch (org.efaah.ud.WorkCompletionException e) {
            return e;
        }
        throw new AssertionError("expected a WorkCompletionException");
    }

    /** A child's check: an AssertionError saying {@code what} unless {@code ok}. */
    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }
}
