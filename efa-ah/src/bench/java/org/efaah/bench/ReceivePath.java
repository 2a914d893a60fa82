package org.efaah.bench;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.ud.DatagramView;
import org.efaah.ud.UdEndpoint;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.QueuePairType;
import org.efaah.verbs.VerbsProviders;
import org.efaah.verbs.spi.VerbsProvider;

/**
 * Issue 35 item 2: the receive path alone, the twin of efa-ah/src/bench/native/receive_drain.c: the
 * sender fills the receiver's CQ with 960 datagrams of 64 B (sent and flushed), then {@code poll(handler,
 * 64)} drains them, the handler reading each payload's length and first byte; the thread's CPU per
 * datagram is taken per drain, and per empty poll after it, and per datagram of the fill ("sending":
 * batches of 64 sent, then the flush that reaps their completions). No waiting and one thread: what is left is
 * the path's own work and the double's, without the spin and the sleeps that make most of a stream's
 * receiver-thread CPU (StreamBench), which follows the stream's wall time. Over the native provider
 * (the EFA double: LD_LIBRARY_PATH).
 *
 * <p>Usage: {@code java --enable-native-access=ALL-UNNAMED -cp CLI_JAR
 * efa-ah/src/bench/java/org/efaah/bench/ReceivePath.java srd|ud [ROUNDS]}
 */
public final class ReceivePath {
    private static final int FILL = 960;
    private static final int LIMIT = 64;
    private static long seen;

    private ReceivePath() {
    }

    public static void main(String[] args) {
        QueuePairType transport = QueuePairType.valueOf(args[0].toUpperCase(Locale.ROOT));
        int rounds = Math.max(10, args.length > 1 ? Integer.parseInt(args[1]) : 2000);
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        try (VerbsProvider provider = VerbsProviders.open("native");
             Device device = Device.openFirst(provider)) {
            ProtectionDomain pd = device.allocatePd();
            AddressHandleCache cache = AddressHandleCache.create();
            try (UdEndpoint receiver = UdEndpoint.open(pd, cache,
                    UdEndpoint.Options.defaults().withDepths(1, 1024).withTransport(transport));
                 UdEndpoint sender = UdEndpoint.open(pd, cache,
                         UdEndpoint.Options.defaults().withDepths(64, 16).withTransport(transport));
                 AddressHandle ah = cache.acquire(pd, AddressHandleAttributes.builder()
                         .dgid(receiver.address().gid()).sgidIndex(0).build())) {
                ByteBuffer message = ByteBuffer.allocate(64);
                Arrays.fill(message.array(), (byte) 0x7b);
                ByteBuffer[] batch = new ByteBuffer[64];
                for (int i = 0; i < batch.length; i++) {
                    batch[i] = message.duplicate();
                }
                Consumer<DatagramView> handler = d -> seen += d.length() + d.payload().get(0);
                long[] drain = new long[rounds];
                long[] empty = new long[rounds];
                long[] send = new long[rounds];
                int warm = rounds / 4;
                for (int r = 0; r < rounds + warm; r++) {
                    long s0 = threads.getCurrentThreadCpuTime();
                    for (int s = 0; s < FILL; s += batch.length) {
                        for (ByteBuffer b : batch) {
                            b.clear();
                        }
                        sender.sendBatch(ah, receiver.address(), batch, 0, batch.length);
                    }
                    if (!sender.flush(10, TimeUnit.SECONDS)) {
                        throw new IllegalStateException("sends still in flight after 10 s");
                    }
                    long t0 = threads.getCurrentThreadCpuTime();
                    int got = 0;
                    while (got < FILL) {
                        got += receiver.poll(handler, LIMIT);
                    }
                    long t1 = threads.getCurrentThreadCpuTime();
                    for (int i = 0; i < LIMIT; i++) {
                        receiver.poll(handler, LIMIT);
                    }
                    long t2 = threads.getCurrentThreadCpuTime();
                    if (r >= warm) {
                        send[r - warm] = (t0 - s0) * 1000 / FILL;
                        drain[r - warm] = (t1 - t0) * 1000 / FILL;
                        empty[r - warm] = (t2 - t1) * 1000 / LIMIT;
                    }
                }
                Arrays.sort(drain);
                Arrays.sort(empty);
                Arrays.sort(send);
                System.out.printf(Locale.ROOT, "ReceivePath %s: CPU ns per datagram p10 %.1f p25 %.1f median %.1f"
                                + " p75 %.1f; per empty poll median %.1f; sending, per datagram median %.1f"
                                + " (checksum %d)%n", args[0],
                        drain[rounds / 10] / 1000.0, drain[rounds / 4] / 1000.0, drain[rounds / 2] / 1000.0,
                        drain[rounds * 3 / 4] / 1000.0, empty[rounds / 2] / 1000.0, send[rounds / 2] / 1000.0, seen);
            } finally {
                cache.close();
                pd.close();
            }
        }
    }
}
