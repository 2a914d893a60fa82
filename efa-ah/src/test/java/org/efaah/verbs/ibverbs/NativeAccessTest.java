package org.efaah.verbs.ibverbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.efaah.verbs.spi.VerbsProvider;
import org.efaah.verbs.VerbsProviders;
import org.junit.jupiter.api.Test;

/**
 * Issue 27 case 2: Java 22+ restricts {@code System.loadLibrary}, which JavaCPP's Loader calls for
 * the JNI library. On Java 25, {@code VerbsProviders.open()} with
 * {@code --enable-native-access=ALL-UNNAMED} (what the README tells a library user to add) prints
 * no JDK warning, and with native access denied the native provider is unavailable with one line
 * naming that option. Each case runs in a JDK 25 child process, skipped (saying so) where none is
 * installed: /usr/lib/jvm/*, or {@code -Defaah.test.jdk25=JAVA_HOME}.
 */
class NativeAccessTest {

    /** The child: what {@code auto} chose, then why native is unavailable, on stdout. */
    public static final class OpenAuto {
        public static void main(String[] args) {
            try (VerbsProvider p = VerbsProviders.open()) {
                System.out.println("provider " + p.name());
            }
            if (System.getProperty("efaah.provider") != null || Boolean.getBoolean("efaah.native.disable")) {
                return; // asking why would probe the native provider, which these settings must not
            }
            Throwable cause = new NativeVerbsProviderFactory().unavailabilityCause();
            System.out.println(cause == null ? "native available" : VerbsProviders.describe(cause));
        }
    }

    @Test
    void enabledNativeAccessOpensWithoutAJdkWarning() throws Exception {
        Result r = runOnJdk25("--enable-native-access=ALL-UNNAMED");
        assertEquals(0, r.exit, r.toString());
        assertFalse(r.stderr.contains("WARNING"), "a JDK warning on Java 25: " + r);
    }

    @Test
    void withoutTheOptionJava25WarnsSoTheReadmeMustSayIt() throws Exception {
        Result r = runOnJdk25();
        assertEquals(0, r.exit, r.toString());
        assertTrue(r.stderr.contains("WARNING: A restricted method in java.lang.System has been called"), r.toString());
    }

    /** The README: choosing the mock, or disabling the native provider, probes nothing and prints nothing. */
    @Test
    void theMockChosenOrNativeDisabledPrintsNoWarning() throws Exception {
        for (String setting : new String[] {"-Defaah.provider=mock", "-Defaah.native.disable=true"}) {
            Result r = runOnJdk25(setting);
            assertEquals(0, r.exit, r.toString());
            assertEquals("provider mock", r.stdout.strip(), r.toString());
            assertFalse(r.stderr.contains("WARNING"), setting + ": " + r);
        }
    }

    @Test
    void deniedNativeAccessIsOneLineNamingTheOption() throws Exception {
        Result r = runOnJdk25("--illegal-native-access=deny");
        assertEquals(0, r.exit, r.toString());
        List<String> lines = r.stdout.lines().toList();
        assertEquals(2, lines.size(), r.toString());
        assertEquals("provider mock", lines.get(0), r.toString());
        String why = lines.get(1);
        assertTrue(why.startsWith("native library failed to load: ") && why.contains("--enable-native-access=ALL-UNNAMED")
                && why.contains("Enable-Native-Access: ALL-UNNAMED"), why);
        assertEquals(why.indexOf("Illegal native access"), why.lastIndexOf("Illegal native access"),
                "the JDK's message once, not once per wrapper: " + why);
    }

    private record Result(int exit, String stdout, String stderr) {
    }

    private static Result runOnJdk25(String... options) throws IOException, InterruptedException {
        Path java = jdk25();
        assumeTrue(java != null, "no JDK 25 in /usr/lib/jvm (or -Defaah.test.jdk25): the Java 25 checks are skipped");
        assumeTrue(NativeLibrary.libraryResource() != null, "the JNI library was not built: nothing loads it");
        List<String> command = new ArrayList<>(List.of(java.toString()));
        command.addAll(List.of(options));
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), OpenAuto.class.getName()));
        Process p = new ProcessBuilder(command).redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
                .start();
        // Small outputs: read one stream after the other without risk of filling a pipe.
        String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the JDK 25 child did not finish");
        return new Result(p.exitValue(), out, err);
    }

    static Path jdk25() throws IOException {
        return org.efaah.fixture.Jdks.jdk25();
    }
}
