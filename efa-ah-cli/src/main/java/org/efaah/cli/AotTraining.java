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
 * device listing, on the provider that auto chooses here (the device, or the EFA double when
 * LD_LIBRARY_PATH names it: JavaCPP's and the native provider's classes; else the mock), and on it
 * alone: the cache's method profiles are then of the code a user's command runs, where a second
 * provider's run made every call into the provider look polymorphic to the JIT (over the double, a
 * fresh stream of 500,000 with a cache trained on both providers used about 0.9x the CPU of one
 * trained on auto alone, docs/benchmarks.md "A first run"). Their output is discarded; a failure (no
 * device) only leaves those classes out of the cache.
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
        for (List<String> command : COMMANDS) {
            String[] line = java.util.stream.Stream.concat(command.stream(), java.util.stream.Stream.of(
                    "--provider", VerbsProviders.AUTO)).toArray(String[]::new);
            Main.run(discard, discard, environment, line);
        }
        System.exit(0);
    }
}
