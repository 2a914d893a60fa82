package org.efaah.verbs.ibverbs;

import java.io.IOException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.bytedeco.javacpp.Loader;

/**
 * Checks the directory JavaCPP extracts the JNI library into before it does, because JavaCPP's
 * own failures there mislead: an explicitly set directory it cannot write is silently replaced by
 * another, and a library it cannot map (a {@code noexec} mount) surfaces as "no jniNativeVerbs in
 * java.library.path". Each problem found names the directory, the reason and the property.
 */
final class JavaCppCache {
    /** JavaCPP's system property for the extraction directory. */
    static final String PROPERTY = "org.bytedeco.javacpp.cachedir";
    private static final Path MOUNTINFO = Path.of("/proc/self/mountinfo");

    private JavaCppCache() {
    }

    /**
     * Why the library at {@code resource} cannot be extracted and loaded; null when nothing is
     * wrong or nothing needs extracting (a library in a directory on the class path loads in place).
     */
    static String problem(URL resource) {
        if (resource == null || "file".equals(resource.getProtocol())) {
            return null;
        }
        String explicit = System.getProperty(PROPERTY);
        Path dir;
        if (explicit != null && !explicit.isBlank()) {
            dir = Path.of(explicit.trim()).toAbsolutePath();
            try {
                Files.createDirectories(dir);
            } catch (IOException | RuntimeException e) {
                return "the JavaCPP cache directory " + dir + " (-D" + PROPERTY + ") cannot be created: " + e
                        + "; set -D" + PROPERTY + " to a writable directory (JavaCPP would otherwise extract "
                        + "elsewhere without saying so)";
            }
            if (!Files.isWritable(dir)) {
                return "the JavaCPP cache directory " + dir + " (-D" + PROPERTY + ") is not writable; set -D"
                        + PROPERTY + " to a writable directory (JavaCPP would otherwise extract elsewhere "
                        + "without saying so)";
            }
        } else {
            try {
                dir = Loader.getCacheDir().toPath().toAbsolutePath();
            } catch (IOException | RuntimeException e) {
                return "JavaCPP has no usable cache directory: " + e + "; set -D" + PROPERTY
                        + " to a writable directory";
            }
        }
        String mount = noexecMount(dir, readMountinfo());
        return mount == null ? null : noexec(dir, mount);
    }

    static String noexec(Path dir, String mount) {
        return "the JavaCPP cache directory " + dir + " is on " + mount + ", mounted noexec: the JNI library "
                + "extracted there cannot be mapped (\"failed to map segment from shared object\"); set -D"
                + PROPERTY + " to a directory on a filesystem mounted without noexec";
    }

    /** Extra words for a load failure that looks like a noexec mount or a JavaCPP cache problem. */
    static String hint(Throwable failure) {
        for (Throwable c = failure; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (String.valueOf(c.getMessage()).contains("failed to map segment")) {
                return " (the library's directory is probably on a noexec mount; set -D" + PROPERTY
                        + " to a directory on a filesystem mounted without noexec)";
            }
        }
        return "";
    }

    /**
     * The mount point holding {@code dir} when that mount has the {@code noexec} option; null
     * otherwise. {@code mountinfo} lines as in proc(5): field 5 the mount point, field 6 its options.
     */
    static String noexecMount(Path dir, List<String> mountinfo) {
        Path real = realPath(dir);
        String best = null;
        boolean bestNoexec = false;
        for (String line : mountinfo) {
            String[] f = line.split(" ");
            if (f.length < 6) {
                continue;
            }
            String point = f[4].replace("\\040", " ");
            if (real.startsWith(Path.of(point)) && (best == null || point.length() >= best.length())) {
                best = point;
                bestNoexec = List.of(f[5].split(",")).contains("noexec");
            }
        }
        return bestNoexec ? best : null;
    }

    private static Path realPath(Path dir) {
        try {
            return dir.toRealPath();
        } catch (IOException e) {
            return dir.normalize();
        }
    }

    private static List<String> readMountinfo() {
        try {
            return Files.readAllLines(MOUNTINFO);
        } catch (IOException | RuntimeException e) {
            return List.of();
        }
    }
}
