package org.efaah.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Issue 27 case 1: on a machine whose local Maven repository is empty, scripts/check-first-use
 * failed ("No plugin found for prefix 'dependency'"): it ran Maven offline, by a plugin prefix,
 * in a POM that pins no plugin, so it worked only where an earlier online run had left the plugin.
 * The kind, checked on every Maven command in scripts/: none runs offline except inside the VM
 * (which has no network and reads what the host's mvn install fetched), and every goal called by
 * prefix ({@code surefire:test}) names a plugin pinned in each POM the command builds, so that the
 * install fetches that very version. The empty-repository run itself is in the issue's note.
 */
class ScriptsMavenTest {
    private static final Path ROOT = Path.of("..");
    private static final Pattern PREFIX_GOAL = Pattern.compile("(?<=\\s)([a-z][a-z0-9-]*):([a-z][a-z-]*)(?=\\s|$|')");
    private static final Pattern MODULE = Pattern.compile("-pl\\s+([a-z-]+)");

    /** A Maven command line of a script: its file, line number and text. */
    private record MavenCall(Path script, int line, String text) {
        @Override
        public String toString() {
            return script.getFileName() + ":" + line + ": " + text.strip();
        }
    }

    @Test
    void noScriptRunsMavenOfflineButTheVmStep() throws IOException {
        List<String> offline = new ArrayList<>();
        for (MavenCall call : mavenCalls()) {
            boolean inTheVm = call.script().getFileName().toString().equals("test") && call.text().contains("surefire:test")
                    && call.text().strip().startsWith("'mvn ");
            if (call.text().matches(".*\\smvn\\s(.*\\s)?-o\\s.*|^\\s*'?mvn\\s(.*\\s)?-o\\s.*") && !inTheVm) {
                offline.add(call.toString());
            }
        }
        assertEquals(List.of(), offline, "offline Maven runs only where an earlier online run left what they need");
    }

    @Test
    void everyGoalCalledByPrefixIsPinnedInTheBuild() throws IOException {
        List<String> unpinned = new ArrayList<>();
        for (MavenCall call : mavenCalls()) {
            Matcher goal = PREFIX_GOAL.matcher(call.text());
            while (goal.find()) {
                String prefix = goal.group(1);
                Matcher module = MODULE.matcher(call.text());
                List<Path> poms = module.find() ? List.of(ROOT.resolve(module.group(1)).resolve("pom.xml"))
                        : List.of(ROOT.resolve("pom.xml"), ROOT.resolve("efa-ah/pom.xml"), ROOT.resolve("efa-ah-cli/pom.xml"));
                for (Path pom : poms) {
                    if (!pinned(pom, prefix)) {
                        unpinned.add(call + " (" + prefix + " in " + ROOT.relativize(pom) + ")");
                    }
                }
            }
        }
        assertEquals(List.of(), unpinned, "a plugin called by prefix but not pinned with a version in the POM");
    }

    private static boolean pinned(Path pom, String prefix) throws IOException {
        String xml = Files.readString(pom, StandardCharsets.UTF_8);
        return Pattern.compile("<artifactId>(maven-" + Pattern.quote(prefix) + "-plugin|" + Pattern.quote(prefix)
                + "-maven-plugin)</artifactId>\\s*<version>[^<$]+</version>").matcher(xml).find();
    }

    /** Every line of scripts/ that runs mvn (comments left out). */
    private static List<MavenCall> mavenCalls() throws IOException {
        Path scripts = ROOT.resolve("scripts");
        assumeTrue(Files.isDirectory(scripts), "run from the efa-ah module directory: no " + scripts);
        List<MavenCall> calls = new ArrayList<>();
        try (Stream<Path> files = Files.walk(scripts)) {
            for (Path file : files.filter(Files::isRegularFile).sorted().toList()) {
                List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
                for (int i = 0; i < lines.size(); i++) {
                    String line = lines.get(i);
                    if (!line.strip().startsWith("#") && line.matches("(^|.*[\\s'(|&;])mvn\\s.*")) {
                        calls.add(new MavenCall(file, i + 1, line));
                    }
                }
            }
        }
        assertEquals(true, calls.size() > 3, "found no Maven command in " + scripts + ": " + calls);
        return calls;
    }
}
