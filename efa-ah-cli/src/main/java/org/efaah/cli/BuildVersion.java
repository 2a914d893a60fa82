package org.efaah.cli;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;
import picocli.CommandLine.IVersionProvider;

/** {@code --version}: the version the build wrote into {@code version.properties}. */
final class BuildVersion implements IVersionProvider {

    /** The project version of this build, e.g. {@code 0.1.0-SNAPSHOT}. */
    static String version() {
        Properties p = new Properties();
        try (InputStream in = BuildVersion.class.getResourceAsStream("version.properties")) {
            if (in != null) {
                p.load(in);
            }
        } catch (IOException e) {
            return "unknown (" + e.getMessage() + ")";
        }
        return p.getProperty("version", "unknown (no version.properties in this build)");
    }

    @Override
    public String[] getVersion() {
        return new String[] {"efa-ah " + version(), "Java " + System.getProperty("java.version") + " on "
                + System.getProperty("os.name") + " " + System.getProperty("os.arch")};
    }
}
