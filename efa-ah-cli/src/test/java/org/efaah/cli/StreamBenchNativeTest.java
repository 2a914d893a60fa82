package org.efaah.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.efaah.verbs.Device;
import org.efaah.verbs.spi.VerbsProviderFactory;
import org.efaah.verbs.VerbsProviders;
import org.efaah.verbs.spi.VerbsProvider;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * scripts/bench-stream's pieces, so that they cannot rot unseen: the C reference
 * (efa-ah/src/bench/native/stream_reference.c) builds with the flags the script uses and streams
 * over an EFA device (the double in scripts/test) with every datagram delivered, and
 * {@link StreamBench} runs a pair, C and efa-ah, each line carrying every figure the script's table
 * reads. On a device that is not EFA (rxe in the VM) there is nothing to run: skipped.
 */
@Tag("native")
class StreamBenchNativeTest {
    private static final Path SOURCE = Path.of("..", "efa-ah", "src", "bench", "native", "stream_reference.c");
    private static final long COUNT = 20_000;
    private static Path reference;

    @BeforeAll
    static void buildReference() throws Exception {
        VerbsProviderFactory factory = VerbsProviders.factory("native");
        Assumptions.assumeTrue(factory.isAvailable(), "no verbs device");
        try (VerbsProvider provider = factory.create(); Device device = Device.openFirst(provider)) {
            Assumptions.assumeTrue(device.isEfa(), device.name() + " is not EFA: the C reference needs libefa's CQs");
        }
        Path dir = Files.createDirectories(Path.of("target", "bench-stream-test"));
        reference = dir.resolve("stream_reference");
        Run gcc = run(List.of("gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", reference.toString(),
                SOURCE.toString(), "-libverbs", "-lefa", "-lpthread"));
        assertEquals(0, gcc.exit, () -> "gcc failed:\n" + gcc.out);
    }

    private record Run(int exit, String out) {
    }

    private static Run run(List<String> command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), () -> command + " did not end in 60 s");
        return new Run(p.exitValue(), out);
    }

    private static long figure(String line, String key) {
        Matcher m = Pattern.compile("(?:^| )" + key + "=(\\d+)").matcher(line);
        assertTrue(m.find(), () -> key + " missing in: " + line);
        return Long.parseLong(m.group(1));
    }

    private static List<String> referenceCommand(String transport) {
        List<String> c = new ArrayList<>(List.of(reference.toString(), "--transport", transport, "-s", "64", "-n",
                Long.toString(COUNT)));
        if (transport.equals("ud")) {
            c.add("--pace"); // unpaced, UD drops what outruns the receiver
        }
        return c;
    }

    @ParameterizedTest
    @ValueSource(strings = {"srd", "ud"})
    void theReferenceStreamsEveryDatagram(String transport) throws Exception {
        Run r = run(referenceCommand(transport));
        assertEquals(0, r.exit, r::out);
        String line = r.out.strip();
        assertEquals(COUNT, figure(line, "sent"), line);
        assertEquals(COUNT, figure(line, "delivered"), line);
        assertEquals(0, figure(line, "send_failures_rnr"), line);
        assertTrue(figure(line, "wall_ns") > 0 && figure(line, "sender_cpu_ns") > 0
                && figure(line, "receiver_cpu_ns") > 0, line);
        assertEquals(figure(line, "wall_ns"), figure(line, "end_ns") - figure(line, "start_ns"), line);
    }

    @ParameterizedTest
    @ValueSource(strings = {"srd", "ud"})
    void theHarnessRunsAPair(String transport) throws Exception {
        List<String> args = new ArrayList<>(Arrays.asList("--transport", transport, "-s", "64", "-n",
                Long.toString(COUNT), "--pairs", "1", "--warmup", "0"));
        if (transport.equals("ud")) {
            args.add("--pace");
        }
        args.add("--");
        args.addAll(referenceCommand(transport));
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        StreamBench.run(args.toArray(String[]::new), new PrintStream(bytes, true, StandardCharsets.UTF_8));
        List<String> lines = bytes.toString(StandardCharsets.UTF_8).lines().toList();
        assertEquals(2, lines.size(), () -> String.join("\n", lines));
        assertTrue(lines.get(0).startsWith("run side=c pair=0 "), lines.get(0));
        String efa = lines.get(1);
        assertTrue(efa.startsWith("run side=efa-ah pair=0 "), efa);
        for (String line : lines) {
            assertEquals(COUNT, figure(line, "delivered"), line);
            assertTrue(line.matches(".* load1=[0-9.]+$"), line);
        }
        for (String key : List.of("wall_ns", "sender_cpu_ns", "receiver_cpu_ns")) {
            assertTrue(figure(efa, key) > 0, efa);
        }
        // bench-stream --profile keeps each side's samples by these windows: one clock for both
        // programs (CLOCK_MONOTONIC), so the C run's window ends before the efa-ah run's begins
        String c = lines.get(0);
        for (String line : lines) {
            assertEquals(figure(line, "wall_ns"), figure(line, "end_ns") - figure(line, "start_ns"), line);
        }
        assertTrue(figure(c, "end_ns") < figure(efa, "start_ns"), () -> c + "\n" + efa);
        figure(efa, "sender_allocated_bytes");
        figure(efa, "receiver_allocated_bytes");
        for (String line : lines) {
            // what tells a like-for-like pair: each side's sleeps and pacing parks, and the JIT's time
            for (String key : List.of("send_sleeps", "receive_sleeps", "pace_parks", "jit_ms")) {
                figure(line, key);
            }
        }
    }
}
