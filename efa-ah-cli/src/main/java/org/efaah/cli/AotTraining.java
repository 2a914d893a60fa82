package org.efaah.cli;

import java.io.PrintWriter;
import java.io.Writer;
import java.util.List;
import java.util.Map;
import org.efaah.verbs.VerbsProviders;

/*
 * The training run of the JDK's ahead-of-time cache (JEP 483 and 515, Java 25), which scripts/efa-ah
 * runs once per CLI jar, JVM and EFA_AH_JAVA_OPTS, before the first command it runs with them:
 *   java -XX:AOTMode=record -XX:AOTConfiguration=F.conf -cp efa-ah-cli.jar org.efaah.cli.AotTraining
 * The JVM records the classes this loads and links and the profiles of the methods it runs; the cache
 * made from them lets the next JVMs start with those classes loaded and the JIT's profiles warm.
 *
 * Not the user's own command: a training JVM prints the JDK's lines about the recording on stdout,
 * which a --json run must not carry, and a command such as `pingpong --server` waits for a peer. So it
 * runs what users run most, in one process: the streams and the ping-pongs over SRD and UD and the
 * device listing, first on the provider that auto chooses here (the device, or the EFA double when
 * LD_LIBRARY_PATH names it: JavaCPP's and the native provider's classes), then on the mock when auto
 * is not the mock already. Their
 * output is discarded; a failure (no device) only leaves those classes out of the cache.
 */
final class AotTraining {
    /** Enough for the datapath's methods to be compiled in the training JVM, and a few seconds in all. */
    private static final List<List<String>> COMMANDS = List.of(
            List.of("stream", "--transport", "srd", "-n", "50000"),
            List.of("stream", "-n", "50000"),
            List.of("pingpong", "--transport", "srd", "-n", "2000"),
            List.of("pingpong", "-n", "2000"),
            List.of("devices", "-v"));

    private AotTraining() {
    }

    public static void main(String[] args) {
        Main.useCliLogging();
        PrintWriter discard = new PrintWriter(Writer.nullWriter());
        Map<String, String> environment = System.getenv();
        // Where auto finds no device it is the mock already.
        List<String> providers = VerbsProviders.factory(VerbsProviders.AUTO).name().equals("mock")
                ? List.of("mock") : List.of(VerbsProviders.AUTO, "mock");
        for (String provider : providers) {
            for (List<String> command : COMMANDS) {
                String[] line = java.util.stream.Stream.concat(command.stream(), java.util.stream.Stream.of(
                        "--provider", provider)).toArray(String[]::new);
                Main.run(discard, discard, environment, line);
            }
        }
        System.exit(0);
    }
}
