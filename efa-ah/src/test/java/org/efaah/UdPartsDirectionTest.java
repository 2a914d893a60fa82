package org.efaah;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The datagram package read in one direction: {@code UdEndpoint} composes its parts, and a part
 * names (in code, not comments or Javadoc) only what lies beneath it. A part is a package-private
 * top-level type of {@code org.efaah.ud}; the public types (the endpoint and the values it hands
 * out) are the API and may be named by anyone. What a part needs from above reaches it as an
 * argument or through a small interface of its own.
 */
class UdPartsDirectionTest {
    private static final Path UD = Path.of("src", "main", "java", "org", "efaah", "ud");
    /**
     * The parts that compose the endpoint, by depth: a part may name those of a greater depth only.
     * The sender's and the receiver's loops drive the slots and wait on the waiters; the slots drive
     * the recovery (a completion in error begins it), the recovery drives the QP and its CQs. A part
     * not listed is held to the first rule alone.
     */
    private static final Map<String, Integer> DEPTH = Map.ofEntries(
            Map.entry("Sender", 0),
            Map.entry("Receiver", 0),
            Map.entry("SendSlots", 1),
            Map.entry("ReceiveSlots", 1),
            Map.entry("CompletionWaiter", 1),
            Map.entry("QpRecovery", 2),
            Map.entry("EndpointResources", 3),
            Map.entry("ArrivalMarks", 3),
            Map.entry("DeviceLimits", 3));

    @Test
    void noPartNamesTheEndpointOrAPartAboveIt() throws IOException {
        List<String> wrong = new ArrayList<>();
        List<String> parts = new ArrayList<>();
        try (Stream<Path> files = Files.list(UD)) {
            files.filter(f -> f.toString().endsWith(".java")).sorted().forEach(f -> {
                String name = f.getFileName().toString().replace(".java", "");
                String code = code(f);
                if (name.equals("package-info") || isPublic(code, name)) {
                    return; // the API: UdEndpoint itself, its nested values, the values it hands out
                }
                parts.add(name);
                if (names(code, "UdEndpoint")) {
                    wrong.add(name + " names UdEndpoint, which composes it");
                }
                Integer depth = DEPTH.get(name);
                if (depth == null) {
                    return;
                }
                DEPTH.forEach((other, otherDepth) -> {
                    if (!other.equals(name) && otherDepth <= depth && names(code, other)) {
                        wrong.add(name + " names " + other + ", which is not beneath it");
                    }
                });
            });
        }
        System.out.println("ud parts checked: " + parts);
        assertTrue(parts.containsAll(DEPTH.keySet()), () -> "a part listed here is gone: " + DEPTH.keySet()
                + " not all in " + parts);
        assertTrue(wrong.isEmpty(), () -> "ud parts against the direction of use:\n" + String.join("\n", wrong));
    }

    private static boolean names(String code, String type) {
        return Pattern.compile("\\b" + type + "\\b").matcher(code).find();
    }

    private static boolean isPublic(String code, String name) {
        Matcher m = Pattern.compile("(?m)^public\\s+(?:final\\s+|abstract\\s+|sealed\\s+)*"
                + "(?:class|interface|record|enum)\\s+" + name + "\\b").matcher(code);
        return m.find();
    }

    /** The file's text without comments: links there may point anywhere. */
    private static String code(Path file) {
        try {
            return Files.readString(file).replaceAll("(?s)/\\*.*?\\*/", " ").replaceAll("//[^\\n]*", " ");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
