package org.efaah.cli;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketAddress;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import org.efaah.ud.EndpointAddress;
import org.efaah.ud.UdEndpoint;
import org.efaah.verbs.Gid;

/**
 * Out-of-band exchange of UD endpoint addresses over TCP in {@code ibv_ud_pingpong}'s wire format
 * (rdma-core {@code libibverbs/examples/ud_pingpong.c}: {@code pp_client_exch_dest},
 * {@code pp_server_exch_dest}), so that either side may be rdma-core's tool:
 * <ul>
 * <li>a message is {@value #MESSAGE_BYTES} bytes: {@code LID:QPN:PSN:GID} in hex (4, 6, 6 and 32
 * digits; the GID's 16 bytes in order) and a NUL. LID and PSN are 0 here: RoCE and EFA have no LID,
 * and a UD QP ignores the PSN;</li>
 * <li>the client writes its message first; the server reads it and answers with its own; the client
 * reads that and ends with {@code done} and its NUL (5 bytes), which the server reads;</li>
 * <li>the Q_Key is not exchanged: both sides use {@link UdEndpoint#DEFAULT_QKEY}, as the tool does.</li>
 * </ul>
 * Each read takes at most what a valid message needs, before a deadline. The server runs each
 * exchange on a thread of its own (at most {@value #MAX_EXCHANGES} at once), so a client that sends
 * garbage, an endless line or nothing holds up no other; it is dropped with one line. A client
 * whose TCP connection ends (closed or reset) after the server answered and before its {@code done}
 * went away, and is reported so at once; {@code done} and then the end of the connection is the
 * normal end (ibv_ud_pingpong's client closes right after {@code done}).
 */
final class AddressExchange {
    /** The port {@code ibv_ud_pingpong} uses. */
    static final int DEFAULT_PORT = 18515;
    /** Bytes of an address message, its NUL included ({@code sizeof "0000:000000:000000:" + 32 digits}). */
    static final int MESSAGE_BYTES = 52;
    /** What the client sends last: {@code sizeof "done"}, the NUL included. */
    static final byte[] DONE = {'d', 'o', 'n', 'e', 0};
    /** Exchanges the server runs at once; a client beyond them is turned away at once. */
    static final int MAX_EXCHANGES = 32;

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

    /** {@code mine} as the tool writes it: {@code %04x:%06x:%06x:%s} and a NUL; LID and PSN 0. */
    static byte[] encode(EndpointAddress mine) {
        String text = String.format("%04x:%06x:%06x:%s", 0, mine.qpn(), 0, HexFormat.of().formatHex(mine.gid().toBytes()));
        byte[] message = new byte[MESSAGE_BYTES];
        byte[] ascii = text.getBytes(StandardCharsets.US_ASCII);
        System.arraycopy(ascii, 0, message, 0, ascii.length);
        return message;
    }

    /**
     * A peer's message: exactly {@code LLLL:QQQQQQ:PPPPPP:} and 32 hex digits, then a NUL; the
     * address with the default Q_Key.
     *
     * @throws IOException naming what is wrong, with the start of what came
     */
    static EndpointAddress decode(byte[] message) throws IOException {
        boolean valid = message.length == MESSAGE_BYTES && message[MESSAGE_BYTES - 1] == 0;
        for (int i = 0; valid && i < MESSAGE_BYTES - 1; i++) {
            boolean colon = i == 4 || i == 11 || i == 18;
            valid = colon ? message[i] == ':' : Character.digit(message[i], 16) >= 0;
        }
        if (!valid) {
            throw new IOException("not an ibv_ud_pingpong address (LID:QPN:PSN:GID in hex, then a NUL): "
                    + printable(message));
        }
        String text = new String(message, 0, MESSAGE_BYTES - 1, StandardCharsets.US_ASCII);
        int qpn = Integer.parseInt(text.substring(5, 11), 16);
        Gid gid = Gid.of(HexFormat.of().parseHex(text.substring(19)));
        if (gid.isZero()) {
            throw new IOException(Check.ZERO_GID);
        }
        return new EndpointAddress(gid, qpn, UdEndpoint.DEFAULT_QKEY);
    }

    /** The first bytes of {@code bytes}, quoted, non-printable ones escaped: for a one-line message. */
    private static String printable(byte[] bytes) {
        StringBuilder b = new StringBuilder("'");
        for (int i = 0; i < Math.min(bytes.length, 24); i++) {
            int c = bytes[i] & 0xFF;
            b.append(c >= 0x20 && c < 0x7F ? String.valueOf((char) c) : String.format("\\x%02x", c));
        }
        return b.append(bytes.length > 24 ? "'..." : "'").toString();
    }

    /**
     * Reads exactly {@code n} bytes, each read before {@code deadline} ({@link System#nanoTime()});
     * never more, so that an endless stream costs nothing.
     */
    static byte[] read(Socket s, int n, long deadline, String what) throws IOException {
        byte[] into = new byte[n];
        InputStream in = s.getInputStream();
        int got = 0;
        while (got < n) {
            long left = (deadline - System.nanoTime()) / 1_000_000;
            if (left <= 0) {
                throw new IOException("no " + what + " in time (" + got + " of " + n + " bytes came)");
            }
            s.setSoTimeout((int) Math.min(Integer.MAX_VALUE, left));
            int r;
            try {
                r = in.read(into, got, n - got);
            } catch (SocketTimeoutException e) {
                throw new IOException("no " + what + " in time (" + got + " of " + n + " bytes came)", e);
            } catch (SocketException e) {
                throw new ConnectionEnded("the connection was reset after " + got + " of the " + n + " bytes of " + what,
                        e);
            }
            if (r < 0) {
                throw new ConnectionEnded("the connection closed after " + got + " of the " + n + " bytes of " + what,
                        null);
            }
            got += r;
        }
        return into;
    }

    /** The peer closed or reset the TCP connection: {@link #read} got the end of the stream, not its bytes. */
    static final class ConnectionEnded extends IOException {
        private static final long serialVersionUID = 1L;

        ConnectionEnded(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** A client that had the server's address and ended its connection before {@code done}. */
    private static final class WentAway extends IOException {
        private static final long serialVersionUID = 1L;
        private final transient EndpointAddress client;

        WentAway(EndpointAddress client, ConnectionEnded how) {
            super(how.getMessage(), how);
            this.client = client;
        }
    }

    /**
     * Listens on {@code port} (0: any free port) and runs the exchange with each client on a daemon
     * thread of its own until closed: {@code onClient} gets each client's address and where it came
     * from, {@code onDropped} one line for each client that failed the exchange, was turned away or
     * went away before {@code done}, and {@code onGone} the address of the last kind.
     */
    static final class Server implements AutoCloseable {
        private final ServerSocket socket;
        private final Thread acceptor;
        private final AtomicInteger active = new AtomicInteger();

        Server(int port, EndpointAddress mine, int timeoutMillis, BiConsumer<EndpointAddress, SocketAddress> onClient,
               Consumer<String> onDropped) throws IOException {
            this(port, mine, timeoutMillis, onClient, onDropped, (who, from) -> { });
        }

        Server(int port, EndpointAddress mine, int timeoutMillis, BiConsumer<EndpointAddress, SocketAddress> onClient,
               Consumer<String> onDropped, BiConsumer<EndpointAddress, SocketAddress> onGone) throws IOException {
            socket = new ServerSocket();
            socket.setReuseAddress(true);
            try {
                socket.bind(new InetSocketAddress(port));
            } catch (IOException e) {
                socket.close();
                throw new IOException("TCP port " + port + ": " + e.getMessage(), e);
            }
            byte[] message = encode(mine);
            acceptor = new Thread(() -> {
                while (!socket.isClosed()) {
                    Socket s;
                    try {
                        s = socket.accept();
                    } catch (IOException e) {
                        continue; // closed, or one failed accept; the loop condition decides
                    }
                    if (active.incrementAndGet() > MAX_EXCHANGES) {
                        active.decrementAndGet();
                        onDropped.accept("turned away " + s.getRemoteSocketAddress() + ": " + MAX_EXCHANGES
                                + " address exchanges already in progress");
                        closeQuietly(s);
                        continue;
                    }
                    Thread t = new Thread(() -> {
                        try {
                            onClient.accept(serve(s, message, timeoutMillis), s.getRemoteSocketAddress());
                        } catch (WentAway e) {
                            if (!socket.isClosed()) {
                                onDropped.accept("the client " + e.client + " from " + s.getRemoteSocketAddress()
                                        + " went away before 'done': " + e.getMessage());
                                onGone.accept(e.client, s.getRemoteSocketAddress());
                            }
                        } catch (IOException | RuntimeException e) {
                            if (!socket.isClosed()) {
                                onDropped.accept("dropped " + s.getRemoteSocketAddress() + ": " + e.getMessage());
                            }
                        } finally {
                            closeQuietly(s);
                            active.decrementAndGet();
                        }
                    }, "pingpong-exchange");
                    t.setDaemon(true);
                    t.start();
                }
            }, "pingpong-tcp");
            acceptor.setDaemon(true);
            acceptor.start();
        }

        /** The server's side: read theirs, answer with ours, read their {@code done}. */
        private static EndpointAddress serve(Socket s, byte[] message, int timeoutMillis) throws IOException {
            long deadline = System.nanoTime() + timeoutMillis * 1_000_000L;
            EndpointAddress theirs = decode(read(s, MESSAGE_BYTES, deadline, "address"));
            s.getOutputStream().write(message);
            s.getOutputStream().flush();
            byte[] done;
            try {
                done = read(s, DONE.length, deadline, "'done'");
            } catch (ConnectionEnded e) {
                throw new WentAway(theirs, e);
            }
            if (!java.util.Arrays.equals(done, DONE)) {
                throw new IOException("sent " + printable(done) + " where 'done' and a NUL belong");
            }
            return theirs;
        }

        int port() {
            return socket.getLocalPort();
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // nothing more to tell the peer
        }
    }

    /**
     * Connects to the server, sends {@code mine}, returns the server's address after sending {@code done}.
     * An interrupt (Ctrl-C) ends the wait at once, with {@link java.nio.channels.ClosedByInterruptException}.
     */
    static EndpointAddress connect(Target target, EndpointAddress mine, int timeoutMillis) throws IOException {
        try {
            return exchange(target, mine, timeoutMillis);
        } catch (IOException e) {
            if (!Failures.interrupted(e)) {
                throw e;
            }
            // The wrappers below would read as a failure of the server's ("no pingpong server at ...").
            IOException i = new java.io.InterruptedIOException("interrupted while exchanging addresses with " + target);
            i.initCause(e);
            throw i;
        }
    }

    private static EndpointAddress exchange(Target target, EndpointAddress mine, int timeoutMillis) throws IOException {
        // A channel's socket, not a plain one: its connect and reads give up when the thread is interrupted.
        try (Socket s = java.nio.channels.SocketChannel.open().socket()) {
            InetSocketAddress at = new InetSocketAddress(target.host(), target.port());
            if (at.isUnresolved()) {
                throw new IOException("no pingpong server at " + target + ": unknown host '" + target.host()
                        + "' (name resolution failed)");
            }
            try {
                s.connect(at, timeoutMillis);
            } catch (SocketTimeoutException e) {
                throw new IOException("no pingpong server at " + target + ": TCP connect timed out after "
                        + timeoutMillis / 1000 + " s", e);
            } catch (IOException e) {
                throw new IOException("no pingpong server at " + target + ": " + e.getMessage(), e);
            }
            long deadline = System.nanoTime() + timeoutMillis * 1_000_000L;
            // One write, as the tool's server takes the message in one read.
            s.getOutputStream().write(encode(mine));
            s.getOutputStream().flush();
            EndpointAddress theirs;
            try {
                theirs = decode(read(s, MESSAGE_BYTES, deadline, "address from the server"));
            } catch (IOException e) {
                throw new IOException(target + ": " + e.getMessage(), e);
            }
            s.getOutputStream().write(DONE);
            s.getOutputStream().flush();
            return theirs;
        }
    }
}
