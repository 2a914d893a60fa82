package org.efaah.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.efaah.cache.AddressHandleCache;
import org.junit.jupiter.api.Test;

/**
 * Issue 34, the kind behind {@link RecordLoaderTest}: no class of the library links through
 * java.lang.runtime.ObjectMethods, the bootstrap of a record's generated equals, hashCode and
 * toString, whose shared method handles keep the library's class loader. A record added without
 * written-out ones fails here, whether or not RecordLoaderTest lists it.
 */
class NoObjectMethodsTest {
    /* A class that bootstraps through ObjectMethods names it in its constant pool (a CONSTANT_Utf8). */
    private static final byte[] OBJECT_METHODS = "java/lang/runtime/ObjectMethods".getBytes(StandardCharsets.UTF_8);

    @Test
    void noClassOfTheLibraryUsesTheRecordBootstrap() throws IOException, URISyntaxException {
        Path classes = Path.of(AddressHandleCache.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        List<Path> all;
        try (Stream<Path> files = Files.walk(classes)) {
            all = files.filter(f -> f.toString().endsWith(".class")).toList();
        }
        assertTrue(all.size() > 100, "too few classes under " + classes + ": " + all.size());
        List<String> using = all.stream().filter(NoObjectMethodsTest::namesObjectMethods)
                .map(f -> classes.relativize(f).toString()).sorted().toList();
        assertEquals(List.of(), using, "classes linking through java.lang.runtime.ObjectMethods (write out the"
                + " record's equals, hashCode and toString)");
    }

    private static boolean namesObjectMethods(Path classFile) {
        byte[] b;
        try {
            b = Files.readAllBytes(classFile);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        outer:
        for (int i = 0; i <= b.length - OBJECT_METHODS.length; i++) {
            for (int j = 0; j < OBJECT_METHODS.length; j++) {
                if (b[i + j] != OBJECT_METHODS[j]) {
                    continue outer;
                }
            }
            return true;
        }
        return false;
    }
}
