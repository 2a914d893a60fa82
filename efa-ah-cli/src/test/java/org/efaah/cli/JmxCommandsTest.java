package org.efaah.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 18: {@code health} and {@code entries} read a running service over JMX from another JVM,
 * and the exit code follows the health report (UP, DEGRADED, DOWN through each reason).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class JmxCommandsTest {
    private static final int MAX_AH = 10;
    private static CacheService.Running service;
    private static String jmx;
    @TempDir
    static Path dir;

    @BeforeAll
    static void startService() throws IOException {
        service = CacheService.start(dir, MAX_AH, "-Dcom.sun.management.jmxremote.authenticate=false",
                "-Dcom.sun.management.jmxremote.ssl=false");
        jmx = service.jmx();
    }

    @AfterAll
    static void stopService() throws Exception {
        if (service != null) {
            service.close();
        }
    }

    private static void tell(String command) throws IOException {
        service.tell(command);
    }

    @Test
    @Order(3) // last: it leaves the service's device fatal
    void healthExitCodeFollowsTheServicesReport() throws IOException {
        Cli up = Cli.run("health", "--jmx", jmx).expect(0);
        assertTrue(up.out().contains("cache svc: UP") && up.out().contains("status: UP"), up::toString);

        tell("hold 9"); // 9 of max_ah 10: DEGRADED
        Cli degraded = Cli.run("health", "--jmx", jmx).expect(0);
        assertTrue(degraded.out().contains("DEGRADED ah_usage"), degraded::toString);
        assertTrue(degraded.out().contains("9 live AHs of max_ah 10 (90%); DEGRADED from 9 (90%), DOWN at 10"),
                degraded::toString);
        Cli.run("health", "--jmx", jmx, "--fail-on", "DEGRADED").expect(1);

        tell("hold 1"); // at max_ah: DOWN
        Cli down = Cli.run("health", "--jmx", jmx).expect(1);
        assertTrue(down.out().contains("DOWN     ah_usage"), down::toString);
        tell("release");
        Cli.run("health", "--jmx", jmx).expect(0);

        tell("fail");
        Cli failed = Cli.run("health", "--jmx", jmx, "--json").expect(0);
        assertTrue(failed.out().contains("\"status\":\"DEGRADED\"") && failed.out().contains("\"subject\":\"EIO\""),
                failed::toString);

        tell("port 1");
        Cli portDown = Cli.run("health", "--jmx", jmx).expect(1);
        assertTrue(portDown.out().contains("PORT_DOWN (1)"), portDown::toString);
        tell("port 4");

        tell("fatal");
        Cli fatal = Cli.run("health", "--jmx", jmx).expect(1);
        assertTrue(fatal.out().contains("DOWN     device_fatal"), fatal::toString);
    }

    @Test
    @Order(1)
    void entriesPrintsTheFirstRowsAndJson() throws IOException {
        tell("hold 3");
        Cli table = Cli.run("entries", "--jmx", jmx, "--limit", "2").expect(0);
        String[] lines = table.out().strip().split("\n");
        assertTrue(lines[0].startsWith("cache svc: ") && lines[0].endsWith("2 row(s) listed"), table::toString);
        assertTrue(lines[1].matches("DEVICE\\s+PD\\s+DGID\\s+AHN\\s+REFS\\s+STATE\\s+AGE\\s+IDLE\\s+INVALIDATED\\s+LEAKS"),
                table::toString);
        assertEquals(4, lines.length, table::toString);
        assertTrue(lines[2].matches("efa_0\\s+pd@\\p{XDigit}+\\s+fe80::\\S+\\s+\\d+\\s+1\\s+LIVE\\s+\\S+\\s+0ms\\s+false\\s+0"),
                table::toString);

        Cli json = Cli.run("entries", "--jmx", jmx, "--json", "--gid", "fe80::1");
        json.expect(0);
        assertTrue(json.out().contains("\"dgid\":\"fe80::1\"") && json.out().contains("\"references\":1"), json::toString);
        tell("release");
    }

    @Test
    @Order(2)
    void badInputAndNoAnswerAreOneLine() {
        Cli.run("entries", "--jmx", "nohost").expect(2).oneLine("--jmx", "HOST:PORT");
        Cli.run("entries", "--jmx", jmx, "--limit", "0").expect(2).oneLine("--limit", "1..1000000");
        Cli.run("health", "--jmx", jmx, "--name", "org.efaah:type=Nothing,*").expect(1).oneLine("no MXBean matching");
        int closed;
        try (ServerSocket s = new ServerSocket(0)) {
            closed = s.getLocalPort();
        } catch (IOException e) {
            throw new AssertionError(e);
        }
        Cli.run("health", "--jmx", "127.0.0.1:" + closed, "--timeout", "5").expect(1).oneLine("JMX at 127.0.0.1:" + closed);
    }
}
