package org.efaah.cli;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.management.MBeanServerConnection;
import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;

/**
 * Options and connection for commands that read a running service's cache over its JMX port
 * (the service runs with {@code -Dcom.sun.management.jmxremote.port=PORT}): the RMI connector at
 * {@code HOST:PORT}, the MXBeans that {@code cache.inspection().registerMXBean} registered.
 */
final class JmxTarget {
    @Option(names = "--jmx", paramLabel = "HOST:PORT", required = true,
            description = "The service's JMX port (-Dcom.sun.management.jmxremote.port=PORT).")
    String address;

    // In an argument group picocli reads no field initialiser for the help (it printed "default: null"):
    // the defaults are the annotations'.
    @Option(names = "--name", paramLabel = "OBJECTNAME", defaultValue = "org.efaah:type=AddressHandleCache,*",
            description = "The cache's MXBean name or pattern (default: ${DEFAULT-VALUE}).")
    String name;

    @Option(names = "--timeout", paramLabel = "SECONDS", defaultValue = "10",
            description = "Seconds to wait for the connection and each answer, 1..300 (default: ${DEFAULT-VALUE}).")
    int timeoutSeconds;

    @Option(names = "--user", paramLabel = "USER", description = "The JMX user, for a service started with "
            + "-Dcom.sun.management.jmxremote.authenticate=true (with --password-file).")
    String user;

    @Option(names = "--password-file", paramLabel = "FILE", description = "A file whose first line is --user's "
            + "password (a file, so that the password shows in no process list).")
    java.nio.file.Path passwordFile;

    @Option(names = "--ssl", description = "The service's RMI registry takes SSL "
            + "(-Dcom.sun.management.jmxremote.registry.ssl=true); trust comes from -Djavax.net.ssl.trustStore "
            + "in EFA_AH_JAVA_OPTS. A connector with SSL but a plain registry needs no option.")
    boolean ssl;

    /** An open connection and the cache MXBeans it found, sorted by name; close it when done. */
    record Connection(JMXConnector connector, MBeanServerConnection server, List<ObjectName> caches)
            implements AutoCloseable {
        @Override
        public void close() {
            try {
                connector.close();
            } catch (IOException e) {
                // The service went away meanwhile: nothing left to release here.
            }
        }
    }

    /**
     * Connects within the timeout and finds the caches; throws a one-line reason when the address
     * is bad (usage), nothing answers, or no cache MXBean is registered.
     */
    Connection connect(CommandSpec spec) {
        Check.range(spec, "--timeout", timeoutSeconds, 1, 300, "s");
        int colon = address.lastIndexOf(':');
        int port = -1;
        if (colon > 0) {
            try {
                port = Integer.parseInt(address.substring(colon + 1));
            } catch (NumberFormatException e) {
                port = -1;
            }
        }
        if (port < 1 || port > 65535) {
            throw Check.fail(spec, "--jmx", "'" + address + "' is not HOST:PORT with a port 1..65535");
        }
        ObjectName pattern;
        try {
            pattern = new ObjectName(name);
        } catch (MalformedObjectNameException e) {
            throw Check.fail(spec, "--name", "'" + name + "' is not an ObjectName: " + e.getMessage());
        }
        String host = address.substring(0, colon);
        JMXServiceURL url;
        try {
            url = new JMXServiceURL("service:jmx:rmi:///jndi/rmi://" + host + ":" + port + "/jmxrmi");
        } catch (java.net.MalformedURLException e) {
            throw Check.fail(spec, "--jmx", "'" + address + "' is not HOST:PORT: " + e.getMessage());
        }
        java.util.Map<String, Object> environment = new java.util.HashMap<>();
        if ((user == null) != (passwordFile == null)) {
            throw Check.fail(spec, user == null ? "--password-file" : "--user", "goes with "
                    + (user == null ? "--user" : "--password-file") + " (a JMX login needs both)");
        }
        if (user != null) {
            environment.put(JMXConnector.CREDENTIALS, new String[] {user, password(spec)});
        }
        if (ssl) {
            // The registry's own stub comes over this socket; the connection's stub brings the server's factory.
            environment.put("com.sun.jndi.rmi.factory.socket", new javax.rmi.ssl.SslRMIClientSocketFactory());
        }
        JMXConnector connector;
        try {
            connector = within("connecting to JMX at " + address, () -> JMXConnectorFactory.connect(url, environment));
        } catch (SecurityException e) {
            // The JDK's authenticator says "Authentication failed! ..." with no word of which option to fix.
            throw new IllegalStateException("JMX at " + address + " refused the login: " + (user == null
                    ? "it requires one (--user and --password-file)"
                    : "wrong password or unknown user '" + user + "' (--user, --password-file)"));
        }
        try {
            MBeanServerConnection server = connector.getMBeanServerConnection();
            List<ObjectName> caches = new ArrayList<>(within("listing MXBeans at " + address,
                    () -> server.queryNames(pattern, null)));
            if (caches.isEmpty()) {
                throw new IllegalStateException("no MXBean matching " + name + " at " + address
                        + " (the service registers one with cache.inspection().registerMXBean)");
            }
            caches.sort(null);
            return new Connection(connector, server, caches);
        } catch (IOException | RuntimeException e) {
            try {
                connector.close();
            } catch (IOException ignored) {
                // Already failing: the first failure is the one to report.
            }
            if (e instanceof RuntimeException r) {
                throw r;
            }
            throw new IllegalStateException("JMX at " + address + ": " + e.getMessage(), e);
        }
    }

    /** The first line of {@code --password-file}, without its line end. */
    private String password(CommandSpec spec) {
        try (java.io.BufferedReader r = java.nio.file.Files.newBufferedReader(passwordFile)) {
            String line = r.readLine();
            if (line == null) {
                throw Check.fail(spec, "--password-file", passwordFile + " is empty");
            }
            return line;
        } catch (IOException e) {
            throw Check.fail(spec, "--password-file", Failures.describe(e));
        }
    }

    interface Call<T> {
        T call() throws Exception;
    }

    /** Runs {@code call} on a daemon thread and gives up after the timeout: an unreachable host never hangs the probe. */
    <T> T within(String what, Call<T> call) {
        FutureTask<T> task = new FutureTask<>(call::call);
        Thread t = new Thread(task, "efa-ah-jmx");
        t.setDaemon(true);
        t.start();
        try {
            return task.get(timeoutSeconds, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            task.cancel(true);
            throw new IllegalStateException(what + ": no answer within " + timeoutSeconds + " s");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            task.cancel(true);
            throw new IllegalStateException(what + ": interrupted");
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof SecurityException s) {
                if (user != null && String.valueOf(s.getMessage()).startsWith("Access denied")) {
                    // A readonly role (the JDK's access file) reads attributes and may call no operation.
                    throw new IllegalStateException(what + ": user '" + user + "' may not do this (" + s.getMessage()
                            + "): listing entries calls an operation, which needs readwrite in the service's "
                            + "access file; health needs only readonly");
                }
                throw s;
            }
            if (cause instanceof javax.management.MBeanException m && m.getCause() instanceof IllegalArgumentException iae) {
                throw iae;
            }
            Throwable root = cause;
            while (root.getCause() != null && root.getCause() != root) {
                root = root.getCause();
            }
            // RMI nests its causes in its messages, over several lines: the innermost says it all.
            String why = Failures.describe(root).replaceAll("\\s*\\R\\s*", " ");
            IllegalStateException failure = new IllegalStateException(what + ": " + why);
            failure.addSuppressed(cause); // for --verbose, without its lines in the one-line reason
            throw failure;
        }
    }

    /** The {@code name} key of a cache's ObjectName, or the whole name. */
    static String label(ObjectName cache) {
        String n = cache.getKeyProperty("name");
        return n != null ? n : cache.toString();
    }
}
