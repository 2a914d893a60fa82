package org.efaah.verbs.ibverbs;

import java.net.URL;
import java.util.Objects;
import org.bytedeco.javacpp.Loader;

/**
 * Loads the JNI library once and decides, once, whether the native provider can work here.
 *
 * <p>Every failure is kept with its whole cause chain, so that {@code unavailabilityCause()} can
 * say why long after the fact (a failed load would otherwise surface later as a bare
 * {@link NoClassDefFoundError} or {@link UnsatisfiedLinkError} without the reason).
 */
final class NativeLibrary {
    /** System property that disables the native provider outright when {@code true}. */
    static final String DISABLE_PROPERTY = "efaah.native.disable";
    /** File name of the JNI library JavaCPP builds for {@link NativeVerbs}. */
    static final String LIBRARY_NAME = "jniNativeVerbs";

    private NativeLibrary() {
    }

    /**
     * The outcome of a probe.
     *
     * @param libraryPath where the JNI library was loaded from; null when it was not
     * @param deviceCount devices listed by {@code ibv_get_device_list}; -1 when not asked
     * @param cause       why the native provider is unavailable; null when it is available
     */
    record Probe(String libraryPath, int deviceCount, Throwable cause) {
        boolean loaded() {
            return libraryPath != null;
        }

        boolean available() {
            return cause == null;
        }

        /*
         * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
         * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
         * NoObjectMethodsTest). Same meaning and format as the generated ones.
         */
        @Override
        public boolean equals(Object o) {
            return o == this || o instanceof Probe that && Objects.equals(that.libraryPath, libraryPath)
                    && that.deviceCount == deviceCount && Objects.equals(that.cause, cause);
        }

        @Override
        public int hashCode() {
            int h = Objects.hashCode(libraryPath);
            h = 31 * h + deviceCount;
            h = 31 * h + Objects.hashCode(cause);
            return h;
        }

        @Override
        public String toString() {
            return new StringBuilder("Probe[libraryPath=").append(libraryPath)
                    .append(", deviceCount=").append(deviceCount).append(", cause=").append(cause)
                    .append(']').toString();
        }
    }

    private static final class Holder {
        static final Probe PROBE = probe(Boolean.getBoolean(DISABLE_PROPERTY));
    }

    /** The probe made on first use in this JVM. */
    static Probe get() {
        return Holder.PROBE;
    }

    /**
     * Throws unless the JNI library is loaded, so that no native method is ever called without it.
     *
     * @throws UnsupportedOperationException with the load failure as cause
     */
    static void requireLoaded() {
        Probe p = get();
        if (!p.loaded()) {
            throw new UnsupportedOperationException("the efa-ah native library is not loaded", p.cause());
        }
    }

    /** The resource the JNI library for this platform would be extracted from; null if absent. */
    static URL libraryResource() {
        return NativeVerbs.class.getResource(platform() + "/" + System.mapLibraryName(LIBRARY_NAME));
    }

    /**
     * Why the JNI library is absent, for a library user first: the Maven coordinate of the
     * platform jar to add; then, for a checkout, the build command and what it needs.
     */
    static String notOnClassPath(String platform, String version) {
        return "efa-ah was built without the native library for " + platform + ", or its platform jar is not on "
                + "the class path: add the dependency org.efaah:efa-ah:" + version + ":" + platform
                + " (see the README, 'Use it from your project'); a checkout builds it only with rdma-core's headers "
                + "(no infiniband/verbs.h at build time means none): install libibverbs-dev or rdma-core-devel, "
                + "then run mvn install";
    }

    /** This library's version, from its jar's Maven descriptor; {@code VERSION} outside a jar. */
    static String version() {
        try (java.io.InputStream in = NativeLibrary.class.getResourceAsStream(
                "/META-INF/maven/org.efaah/efa-ah/pom.properties")) {
            if (in != null) {
                java.util.Properties p = new java.util.Properties();
                p.load(in);
                return p.getProperty("version", "VERSION");
            }
        } catch (java.io.IOException e) {
            // the placeholder below
        }
        String v = NativeLibrary.class.getPackage().getImplementationVersion();
        return v == null ? "VERSION" : v;
    }

    /** JavaCPP's name of this platform, e.g. {@code linux-x86_64}, {@code linux-arm64}. */
    static String platform() {
        return Loader.getPlatform();
    }

    /**
     * The platform directory a JVM reporting these {@code os.name} and {@code os.arch} loads from,
     * by JavaCPP's convention: {@code aarch64} (Graviton) is {@code arm64}, {@code amd64} is
     * {@code x86_64}.
     */
    static String platform(String osName, String osArch) {
        String os = osName.toLowerCase(java.util.Locale.ROOT).startsWith("linux") ? "linux"
                : osName.toLowerCase(java.util.Locale.ROOT).replaceAll("\\s", "");
        String arch = switch (osArch.toLowerCase(java.util.Locale.ROOT)) {
            case "amd64", "x86-64", "x86_64" -> "x86_64";
            case "aarch64", "arm64", "armv8" -> "arm64";
            default -> osArch.toLowerCase(java.util.Locale.ROOT);
        };
        return os + "-" + arch;
    }

    /**
     * What to change when the JVM refuses native access to JavaCPP's {@code Loader}, the caller of
     * {@code System.loadLibrary} (Java 22+ under {@code --illegal-native-access=deny}, the announced
     * default): the option naming its module, the class path's being ALL-UNNAMED.
     */
    static String nativeAccessHint() {
        Module loader = Loader.class.getModule();
        String module = loader.isNamed() ? loader.getName() : "ALL-UNNAMED";
        return " (this JVM denies native access to JavaCPP's Loader: run java with --enable-native-access=" + module
                + (loader.isNamed() ? "" : ", or give the main jar's manifest Enable-Native-Access: ALL-UNNAMED") + ")";
    }

    /** Lists devices through the loaded library: 0 or a negative errno, and the count. */
    interface DeviceLister {
        int list(int[] count);
    }

    /** Probes now; {@link #get()} caches the result of the first call with the system property. */
    static Probe probe(boolean disabled) {
        return probe(disabled, count -> NativeVerbs.efa_ah_device_list(null, 0, count));
    }

    /**
     * Probes with {@code lister} standing for the first native call. Nothing escapes: any
     * Throwable on the way (a missing symbol in a stale library, a failed class initialiser)
     * becomes the probe's cause, so that the first failure is the one every later use reports.
     */
    static Probe probe(boolean disabled, DeviceLister lister) {
        if (disabled) {
            return new Probe(null, -1, new IllegalStateException(
                    "native provider disabled by -D" + DISABLE_PROPERTY + "=true"));
        }
        String path = null;
        try {
            String platform = platform();
            URL resource = libraryResource();
            if (resource == null) {
                // Checked first: Loader.load would fail too, but with a message that hides the reason.
                return new Probe(null, -1, new IllegalStateException(notOnClassPath(platform, version())));
            }
            String cacheProblem = JavaCppCache.problem(resource);
            if (cacheProblem != null) {
                return new Probe(null, -1, new IllegalStateException("native library cannot load: " + cacheProblem));
            }
            try {
                path = Loader.load(NativeVerbs.class);
            } catch (Throwable e) {
                // JavaCPP's last attempt (java.library.path) fails too and hides the first reason:
                // the innermost error is the dynamic loader's own, naming the file and the cause.
                Throwable first = e;
                while (first.getCause() != null && first.getCause() != first) {
                    first = first.getCause();
                }
                String why = String.valueOf(first.getMessage());
                return new Probe(null, -1, new IllegalStateException("native library failed to load: " + why
                        + (why.contains("libibverbs") ? " (install rdma-core / libibverbs1)"
                                : first instanceof IllegalCallerException ? nativeAccessHint()
                                : JavaCppCache.hint(e)),
                        e));
            }
            int[] count = new int[1];
            int rc = lister.list(count);
            if (rc != 0) {
                return new Probe(path, -1, new IllegalStateException("no RDMA device: ibv_get_device_list failed",
                        NativeVerbsProvider.error("ibv_get_device_list", rc, null)));
            }
            if (count[0] == 0) {
                return new Probe(path, 0, new IllegalStateException(
                        "no RDMA device: ibv_get_device_list returned none"));
            }
            return new Probe(path, count[0], null);
        } catch (Throwable e) {
            // Not "loaded": a library that failed here must not be called again.
            return new Probe(null, -1, new IllegalStateException("native library "
                    + (path == null ? "failed to load: " : "loaded from " + path + " but failed: ") + e, e));
        }
    }
}
