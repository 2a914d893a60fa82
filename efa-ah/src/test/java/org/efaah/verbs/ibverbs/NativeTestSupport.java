package org.efaah.verbs.ibverbs;

import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import org.bytedeco.javacpp.Loader;

/** Skips (or, where a device is required, fails) tests that cannot run in this build or on this host. */
final class NativeTestSupport {
    /** Set by the native-it profile: a missing device is then a failure, not a skip. */
    static final String REQUIRE_DEVICE_PROPERTY = "efaah.test.requireDevice";

    private NativeTestSupport() {
    }

    /** Skips unless the JNI library was built into this build (the "native" Maven profile). */
    static void assumeNativeBuilt() {
        assumeTrue(NativeLibrary.libraryResource() != null, () -> "no JNI library for " + Loader.getPlatform()
                + " in this build (built with -P '!native' or without infiniband/verbs.h): skipped");
    }

    /** Skips unless the library is built and loads; a built library that fails to load is a failure. */
    static NativeLibrary.Probe assumeLoaded() {
        assumeNativeBuilt();
        NativeLibrary.Probe probe = NativeLibrary.get();
        assumeTrue(!Boolean.getBoolean(NativeLibrary.DISABLE_PROPERTY), "native provider disabled by property");
        if (!probe.loaded()) {
            fail("the JNI library is in the build but did not load", probe.cause());
        }
        return probe;
    }

    /** Skips unless this host lists no device (the no-device expectations). */
    static void assumeNoDevice() {
        NativeLibrary.Probe probe = assumeLoaded();
        assumeTrue(probe.deviceCount() == 0,
                () -> "this host lists " + probe.deviceCount() + " RDMA device(s); no-device checks skipped");
    }

    /** Skips unless this host lists a device; fails instead when the native-it profile requires one. */
    static void assumeDevice() {
        NativeLibrary.Probe probe = assumeLoaded();
        if (probe.deviceCount() <= 0) {
            String why = "no RDMA device on this host: " + org.efaah.verbs.VerbsProviders.describe(probe.cause());
            if (Boolean.getBoolean(REQUIRE_DEVICE_PROPERTY)) {
                fail(why + " (-D" + REQUIRE_DEVICE_PROPERTY + "=true)");
            }
            assumeTrue(false, why + ": skipped");
        }
    }
}
