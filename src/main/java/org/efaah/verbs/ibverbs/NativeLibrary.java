package org.efaah.verbs.ibverbs;

import java.net.URL;
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
        return NativeVerbs.class.getResource(Loader.getPlatform() + "/" + System.mapLibraryName(LIBRARY_NAME));
    }

    /** Probes now; {@link #get()} caches the result of the first call with the system property. */
    static Probe probe(boolean disabled) {
        if (disabled) {
            return new Probe(null, -1, new IllegalStateException(
                    "native provider disabled by -D" + DISABLE_PROPERTY + "=true"));
        }
        String platform = Loader.getPlatform();
        if (libraryResource() == null) {
            // Checked first: Loader.load would fail too, but with a message that hides the reason.
            return new Probe(null, -1, new IllegalStateException("efa-ah was built without the native library for "
                    + platform + " (no infiniband/verbs.h at build time, or built on another platform); "
                    + "rebuild on a host with libibverbs-dev (rdma-core) installed"));
        }
        String path;
        try {
            path = Loader.load(NativeVerbs.class);
        } catch (LinkageError | RuntimeException e) {
            return new Probe(null, -1, new IllegalStateException("native library failed to load: " + e
                    + (String.valueOf(e.getMessage()).contains("libibverbs")
                    ? " (install rdma-core / libibverbs1)" : ""), e));
        }
        int[] count = new int[1];
        int rc = NativeVerbs.efa_ah_device_list(null, 0, count);
        if (rc != 0) {
            return new Probe(path, -1, new IllegalStateException("no RDMA device: ibv_get_device_list failed",
                    NativeVerbsProvider.error("ibv_get_device_list", rc, null)));
        }
        if (count[0] == 0) {
            return new Probe(path, 0, new IllegalStateException(
                    "no RDMA device: ibv_get_device_list returned none"));
        }
        return new Probe(path, count[0], null);
    }
}
