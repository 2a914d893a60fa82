package org.efaah;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.StringWriter;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.efaah.verbs.VerbsProviders;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 17 case 3, and issue 27's front door: every Java block of README.md and of docs/*.md is
 * compiled and run on the mock, so the first code a user copies works and the manual stays true.
 * A block holding a class is compiled as it stands (the README's first example, a whole program);
 * any other block runs inside that example's try block, with its {@code provider}, {@code device},
 * {@code pd} and {@code cache} (fields here, so a block may declare its own), as the docs say. The
 * README stays a front door: at most 220 lines, its first Java example within its first 100.
 */
class ReadmeSnippetsTest {
    private static final Path README = Path.of("..", "README.md");
    private static final Path DOCS = Path.of("..", "docs");
    private static final int README_MAX_LINES = 220;
    private static final int FIRST_EXAMPLE_BEFORE_LINE = 100;
    private static final Pattern JAVA_BLOCK = Pattern.compile("(?s)```java\\n(.*?)```");

    private static final String IMPORTS = String.join("\n",
            "import io.micrometer.core.instrument.*;",
            "import java.nio.ByteBuffer;",
            "import java.time.Duration;",
            "import java.util.concurrent.TimeUnit;",
            "import org.efaah.cache.*;",
            "import org.efaah.metrics.*;",
            "import org.efaah.ud.*;",
            "import org.efaah.verbs.*;",
            "import org.efaah.verbs.spi.*;", "");

    @TempDir
    Path dir;

    /** README.md first, then docs/*.md by name: the files whose Java blocks are checked. */
    static List<Path> documents() throws IOException {
        List<Path> docs = new ArrayList<>();
        docs.add(README);
        try (Stream<Path> files = Files.list(DOCS)) {
            files.filter(f -> f.getFileName().toString().endsWith(".md")).sorted().forEach(docs::add);
        }
        return docs;
    }

    static List<String> snippets(Path document) throws IOException {
        String text = Files.readString(document, StandardCharsets.UTF_8);
        List<String> list = new ArrayList<>();
        Matcher m = JAVA_BLOCK.matcher(text);
        while (m.find()) {
            list.add(m.group(1));
        }
        return list;
    }

    @TestFactory
    Stream<DynamicTest> everyJavaBlockCompilesAndRunsOnTheMock() throws IOException {
        List<String> readme = snippets(README);
        assertFalse(readme.isEmpty(), "README.md has no Java block");
        assertTrue(readme.get(0).contains("public class "), "the README's first example is a whole program");
        List<DynamicTest> tests = new ArrayList<>();
        int n = 0;
        for (Path document : documents()) {
            for (String snippet : snippets(document)) {
                int block = ++n;
                String firstLine = snippet.lines().filter(l -> !l.startsWith("import ")).findFirst().orElse("").strip();
                String name = DOCS.getParent().relativize(document) + " Java block " + block + ": " + firstLine;
                tests.add(DynamicTest.dynamicTest(name, () -> run(block, snippet)));
            }
        }
        // The manual's five examples before it moved to docs/: the first program, the RoCE
        // attributes, a datagram, a batch read in place, the AH lifecycle.
        assertTrue(n >= 5, "README.md and docs/ have " + n + " Java blocks; expected at least 5");
        return tests.stream();
    }

    @Test
    void theReadmeIsAFrontDoorWithItsFirstExampleNearTheTop() throws IOException {
        List<String> lines = Files.readAllLines(README, StandardCharsets.UTF_8);
        assertTrue(lines.size() <= README_MAX_LINES,
                "README.md has " + lines.size() + " lines; at most " + README_MAX_LINES + " (the manual is in docs/)");
        int first = lines.indexOf("```java") + 1;
        assertTrue(first > 0, "README.md has no ```java block");
        assertTrue(first < FIRST_EXAMPLE_BEFORE_LINE,
                "README.md's first Java block starts at line " + first + "; it must start before line "
                        + FIRST_EXAMPLE_BEFORE_LINE);
    }

    private void run(int n, String snippet) throws Exception {
        String className;
        String source;
        Matcher declared = Pattern.compile("public class (\\w+)").matcher(snippet);
        if (declared.find()) {
            className = declared.group(1);
            source = snippet;
        } else {
            className = "ReadmeBlock" + n;
            source = IMPORTS + "public class " + className + " {\n"
                    + "    static VerbsProvider provider;\n    static Device device;\n"
                    + "    static ProtectionDomain pd;\n    static AddressHandleCache cache;\n\n"
                    + "    public static void main(String[] args) throws Exception {\n"
                    + "        try (VerbsProvider p = VerbsProviders.open(\"mock\"); Device d = Device.openFirst(p);\n"
                    + "             ProtectionDomain q = d.allocatePd(); AddressHandleCache c = AddressHandleCache.create()) {\n"
                    + "            provider = p; device = d; pd = q; cache = c;\n"
                    + "            block();\n        }\n    }\n\n"
                    + "    static void block() throws Exception {\n" + snippet + "\n    }\n}\n";
        }
        Path src = dir.resolve("src" + n).resolve(className + ".java");
        Path classes = dir.resolve("classes" + n);
        Files.createDirectories(src.getParent());
        Files.createDirectories(classes);
        Files.writeString(src, source, StandardCharsets.UTF_8);
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        StringWriter diagnostics = new StringWriter();
        boolean compiled = javac.getTask(diagnostics, null, null,
                List.of("-d", classes.toString(), "-cp", System.getProperty("java.class.path"), "-Xlint:all",
                        "-Werror"),
                null, javac.getStandardFileManager(null, null, StandardCharsets.UTF_8).getJavaFileObjects(src)).call();
        assertTrue(compiled, () -> "Java block " + n + " does not compile:\n" + diagnostics + "\n" + source);
        String before = System.getProperty(VerbsProviders.PROPERTY);
        System.setProperty(VerbsProviders.PROPERTY, "mock");
        try (URLClassLoader loader = new URLClassLoader(new URL[] {classes.toUri().toURL()},
                ReadmeSnippetsTest.class.getClassLoader())) {
            Method main = loader.loadClass(className).getMethod("main", String[].class);
            main.invoke(null, (Object) new String[0]);
        } finally {
            if (before == null) {
                System.clearProperty(VerbsProviders.PROPERTY);
            } else {
                System.setProperty(VerbsProviders.PROPERTY, before);
            }
        }
    }
}
