package org.efaah.cli;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 34 item 1: {@code health --jmx} and {@code entries --jmx} against a service started as
 * docs/operations.md says for an authenticated port (password and access files): the right login
 * reads the cache; no login and a wrong password are one line each.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class JmxAuthenticationTest {
    private static CacheService.Running service;
    private static String jmx;
    @TempDir
    static Path dir;
    private static Path good;
    private static Path bad;

    @BeforeAll
    static void startService() throws IOException {
        // The JVM refuses a password file that others may read.
        Path passwords = Files.writeString(dir.resolve("jmxremote.password"), "probe s3cret\nadmin s3cret\n");
        Files.setPosixFilePermissions(passwords, PosixFilePermissions.fromString("rw-------"));
        Path access = Files.writeString(dir.resolve("jmxremote.access"), "probe readonly\nadmin readwrite\n");
        good = Files.writeString(dir.resolve("good"), "s3cret\n");
        bad = Files.writeString(dir.resolve("bad"), "guess\n");
        service = CacheService.start(dir, 10, "-Dcom.sun.management.jmxremote.authenticate=true",
                "-Dcom.sun.management.jmxremote.password.file=" + passwords,
                "-Dcom.sun.management.jmxremote.access.file=" + access, "-Dcom.sun.management.jmxremote.ssl=false");
        jmx = service.jmx();
    }

    @AfterAll
    static void stopService() throws Exception {
        if (service != null) {
            service.close();
        }
    }

    @Test
    void theRightLoginReadsHealthAndEntries() {
        Cli health = Cli.run("health", "--jmx", jmx, "--user", "probe", "--password-file", good.toString()).expect(0);
        assertTrue(health.out().contains("cache svc: UP"), health::toString);
        Cli entries = Cli.run("entries", "--jmx", jmx, "--user", "admin", "--password-file", good.toString(), "--json")
                .expect(0);
        assertTrue(entries.out().startsWith("{\"command\":\"entries\""), entries::toString);
        // entries calls an MXBean operation: a readonly role is refused, in one line that says what to grant.
        Cli.run("entries", "--jmx", jmx, "--user", "probe", "--password-file", good.toString())
                .expect(1).oneLine("user 'probe' may not", "readwrite", "access file");
    }

    @Test
    void noLoginOrAWrongPasswordIsOneLine() {
        Cli.run("health", "--jmx", jmx).expect(1).oneLine("JMX at " + jmx, "requires one", "--user", "--password-file");
        Cli.run("entries", "--jmx", jmx, "--user", "probe", "--password-file", bad.toString())
                .expect(1).oneLine("refused the login", "wrong password", "'probe'");
        Cli.run("health", "--jmx", jmx, "--user", "probe").expect(2).oneLine("--user", "goes with --password-file");
        Cli.run("health", "--jmx", jmx, "--user", "probe", "--password-file", dir.resolve("none").toString())
                .expect(2).oneLine("--password-file", "no such file");
        Cli json = Cli.run("health", "--jmx", jmx, "--json").expect(1);
        assertTrue(json.out().strip().matches("\\{\"command\":\"health\",.*\"error\":\".*requires one.*\"}"), json::toString);
    }
}
