package org.efaah;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The README's "dependencies point one way" (cli -> ud -> cache -> roce -> verbs <- mock,
 * ibverbs), read from the library's main sources: each package names in its code (imports and
 * qualified names, not comments or Javadoc) only the packages listed for it here.
 */
class PackageDependenciesTest {
    private static final Path MAIN = Path.of("src", "main", "java");
    private static final Pattern NAME = Pattern.compile("org\\.efaah\\.([a-z]+(?:\\.(?:spi|mock|ibverbs))?)");
    private static final Map<String, Set<String>> ALLOWED = Map.ofEntries(
            Map.entry("health", Set.of()),
            Map.entry("internal", Set.of("health")),
            Map.entry("verbs", Set.of("verbs.spi", "internal", "health")),
            Map.entry("verbs.spi", Set.of("verbs", "internal", "health")),
            Map.entry("verbs.mock", Set.of("verbs", "verbs.spi", "internal", "health")),
            Map.entry("verbs.ibverbs", Set.of("verbs", "verbs.spi", "internal", "health")),
            Map.entry("roce", Set.of("verbs", "verbs.spi", "internal", "health")),
            Map.entry("cache", Set.of("roce", "verbs", "verbs.spi", "internal", "health")),
            Map.entry("ud", Set.of("cache", "verbs", "verbs.spi", "internal", "health")),
            Map.entry("metrics", Set.of("cache", "verbs", "health")));

    @Test
    void eachPackageDependsOnlyOnThoseBelowIt() throws IOException {
        List<String> wrong = new ArrayList<>();
        Set<String> packages = new TreeSet<>();
        try (Stream<Path> files = Files.walk(MAIN.resolve("org/efaah"))) {
            files.filter(f -> f.toString().endsWith(".java")).forEach(f -> {
                String pkg = MAIN.resolve("org/efaah").relativize(f.getParent()).toString().replace('/', '.');
                packages.add(pkg);
                Set<String> allowed = ALLOWED.get(pkg);
                if (allowed == null) {
                    wrong.add(f + ": package " + pkg + " has no rule here");
                    return;
                }
                for (String used : namesInCode(f)) {
                    if (!used.equals(pkg) && !allowed.contains(used)) {
                        wrong.add(f + ": " + pkg + " -> " + used);
                    }
                }
            });
        }
        System.out.println("packages checked: " + packages);
        assertEquals(ALLOWED.keySet(), packages, "every package has a rule, every rule a package");
        assertTrue(wrong.isEmpty(), () -> "dependencies against the layering:\n" + String.join("\n", wrong));
    }

    /** The efa-ah packages a file names outside comments. */
    private static Set<String> namesInCode(Path file) {
        String text;
        try {
            text = Files.readString(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        // Block comments (Javadoc included), then line comments: links there may point anywhere.
        String code = text.replaceAll("(?s)/\\*.*?\\*/", " ").replaceAll("//[^\\n]*", " ");
        Set<String> used = new TreeSet<>();
        Matcher m = NAME.matcher(code);
        while (m.find()) {
            used.add(m.group(1));
        }
        return used;
    }
}
