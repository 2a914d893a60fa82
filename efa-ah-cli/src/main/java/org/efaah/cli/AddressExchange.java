package org.efaah.cli;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import org.efaah.ud.EndpointAddress;

/**
 * Out-of-band exchange of UD endpoint addresses over TCP, as {@code ibv_ud_pingpong} does: the
 * server listens, the client connects; each side writes its address as one line of text
 * ({@link EndpointAddress#toText()}) and reads the other's.
 */
final class AddressExchange {
    /** The port {@code ibv_ud_pingpong} uses. */
    static final int DEFAULT_PORT = 18515;

    private AddressExchange() {
    }

    /** {@code HOST}, {@code HOST:PORT}, {@code [IPv6]:PORT}. */
    record Target(String host, int port) {
        static Target parse(String text, int defaultPort) {
            String host = text;
            int port = defaultPort;
            if (text.startsWith("[")) {
                int close = text.indexOf(']');
                if (close < 0) {
                    throw new IllegalArgumentException("--connect: '" + text + "' has no closing ']'");
                }
                host = text.substring(1, close);
                if (text.length() > close + 1) {
                    if (text.charAt(close + 1) != ':') {
                        throw new IllegalArgumentException("--connect: '" + text + "' is not [HOST]:PORT");
                    }
                    port = port(text, text.substring(close + 2));
                }
            } else if (text.indexOf(':') >= 0 && text.indexOf(':') == text.lastIndexOf(':')) {
                host = text.substring(0, text.indexOf(':'));
                port = port(text, text.substring(text.indexOf(':') + 1));
            }
            if (host.isEmpty()) {
                throw new IllegalArgumentException("--connect: '" + text + "' names no host");
            }
            return new Target(host, port);
        }

        private static int port(String text, String port) {
            try {
                int p = Integer.parseInt(port);
                if (p >= 1 && p <= 65535) {
                    return p;
                }
            } catch (NumberFormatException e) {
                // below
            }
            throw new IllegalArgumentException("--connect: port '" + port + "' in '" + text + "' is not 1..65535");
        }

        @Override
        public String toString() {
            return (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + port;
        }
    }

    /** What the server hears of its clients over TCP. */
    interface Clients {
        /** A client sent its address: {@code who} is the address and where from. */
        void connected(String who);

        /** That client's TCP connection closed: it has finished or failed, or went away. */
        void closed(String who);

        /** A client failed the address exchange. */
        void failed(String why);
    }

    /**
     * Listens on {@code port} (0: any free port) and answers each client with {@code mine} on a
     * daemon thread until closed. A client's connection stays open while it runs; its closing is
     * how the server learns the client has gone, whatever became of its datagrams.
     */
    static final class Server implements AutoCloseable {
        private final ServerSocket socket;
        private final Thread acceptor;

        Server(int port, EndpointAddress mine, Clients clients) throws IOException {
            socket = new ServerSocket();
            socket.setReuseAddress(true);
            try {
                socket.bind(new InetSocketAddress(port));
            } catch (IOException e) {
                socket.close();
                throw new IOException("TCP port " + port + ": " + e.getMessage(), e);
            }
            acceptor = new Thread(() -> {
                while (!socket.isClosed()) {
                    String who = null;
                    try (Socket s = socket.accept()) {
                        s.setSoTimeout(10_000);
                        who = exchange(s, mine) + " from " + s.getRemoteSocketAddress();
                        clients.connected(who);
                        s.setSoTimeout(0);
                        // Whatever the client writes from now on is ignored; the end of the stream is its leaving.
                        while (s.getInputStream().read() >= 0) {
                            // drain
                        }
                    } catch (IOException e) {
                        if (socket.isClosed()) {
                            return;
                        }
                        if (who == null) {
                            clients.failed("a client failed the address exchange: " + e.getMessage());
                        }
                    }
                    if (who != null) {
                        clients.closed(who);
                    }
                }
            }, "pingpong-tcp");
            acceptor.setDaemon(true);
            acceptor.start();
        }

        int port() {
            return socket.getLocalPort();
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }

    /** A client's side of the exchange: the server's address, and the connection held open while the client runs. */
    static final class Connection implements AutoCloseable {
        private final Socket socket;
        private final EndpointAddress server;

        private Connection(Socket socket, EndpointAddress server) {
            this.socket = socket;
            this.server = server;
        }

        EndpointAddress server() {
            return server;
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }

    /** Connects to the server, sends {@code mine}, returns the server's address with the open connection. */
    static Connection connect(Target target, EndpointAddress mine, int timeoutMillis) throws IOException {
        Socket s = new Socket();
        try {
            try {
                s.connect(new InetSocketAddress(target.host(), target.port()), timeoutMillis);
            } catch (SocketTimeoutException e) {
                throw new IOException("no pingpong server at " + target + ": TCP connect timed out after "
                        + timeoutMillis / 1000 + " s", e);
            } catch (IOException e) {
                throw new IOException("no pingpong server at " + target + ": " + e.getMessage(), e);
            }
            s.setSoTimeout(timeoutMillis);
            String theirs = exchange(s, mine);
            try {
                return new Connection(s, EndpointAddress.parse(theirs));
            } catch (IllegalArgumentException e) {
                throw new IOException(target + " answered '" + theirs + "', not an efa-ah pingpong address", e);
            }
        } catch (IOException | RuntimeException e) {
            s.close();
            throw e;
        }
    }

    private static String exchange(Socket s, EndpointAddress mine) throws IOException {
        Writer w = new OutputStreamWriter(s.getOutputStream(), StandardCharsets.US_ASCII);
        w.write(mine.toText() + "\n");
        w.flush();
        BufferedReader r = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.US_ASCII));
        String line = r.readLine();
        if (line == null) {
            throw new IOException("the peer closed the connection before sending its address");
        }
        return line.trim();
    }
}
