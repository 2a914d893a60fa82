package org.efaah.verbs.ibverbs;

import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Issue 17 case 1: a missing platform jar is named by its Maven coordinate, with the command that builds it. */
class MissingPlatformJarTest {

    @Test
    void theMessageNamesTheCoordinateAndTheBuildCommand() {
        String m = NativeLibrary.notOnClassPath("linux-arm64", "1.2.3");
        assertTrue(m.contains("add the dependency org.efaah:efa-ah:1.2.3:linux-arm64"), m);
        assertTrue(m.contains("mvn install") && m.contains("libibverbs-dev"), m);
        assertTrue(m.startsWith("efa-ah was built without the native library") && m.contains("no infiniband/verbs.h"),
                "the start older callers match on stays: " + m);
    }
}
