package org.efaah.bench;

import java.util.Locale;
import java.util.function.Consumer;
import org.efaah.cache.AddressHandleCache;
import org.efaah.ud.DatagramView;
import org.efaah.ud.UdEndpoint;
import org.efaah.verbs.Device;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.QueuePairType;
import org.efaah.verbs.VerbsProviders;
import org.efaah.verbs.spi.VerbsProvider;

/**
 * Issue 35: what one {@code poll(handler, 64)} of an endpoint whose receive CQ is empty costs, the
 * step a spinning receiver repeats (docs/benchmarks.md, "Own code by profile"): a receiver endpoint
 * alone, polled {@code COUNT} times a round, 6 rounds, wall ns per poll printed per round. Over the
 * native provider (the EFA double: LD_LIBRARY_PATH).
 *
 * <p>Usage: {@code env LD_LIBRARY_PATH=$PWD/efa-ah/target/native/efa-double/lib java
 * --enable-native-access=ALL-UNNAMED -cp CLI_JAR efa-ah/src/bench/java/org/efaah/bench/EmptyPoll.java
 * srd|ud [COUNT]}
 */
public final class EmptyPoll {
    private static long seen;

    private EmptyPoll() {
    }

    public static void main(String[] args) {
        QueuePairType transport = QueuePairType.valueOf(args[0].toUpperCase(Locale.ROOT));
        long count = args.length > 1 ? Long.parseLong(args[1]) : 3_000_000;
        try (VerbsProvider provider = VerbsProviders.open("native");
             Device device = Device.openFirst(provider)) {
            ProtectionDomain pd = device.allocatePd();
            AddressHandleCache cache = AddressHandleCache.create();
            try (UdEndpoint receiver = UdEndpoint.open(pd, cache,
                    UdEndpoint.Options.defaults().withDepths(1, 1024).withTransport(transport))) {
                Consumer<DatagramView> handler = d -> seen += d.length();
                for (int round = 0; round < 6; round++) {
                    long t0 = System.nanoTime();
                    for (long i = 0; i < count; i++) {
                        seen += receiver.poll(handler, 64);
                    }
                    long t1 = System.nanoTime();
                    System.out.printf(Locale.ROOT, "EmptyPoll %s: round %d, %.1f ns per empty poll (checksum %d)%n",
                            args[0], round, (t1 - t0) / (double) count, seen);
                }
            } finally {
                cache.close();
                pd.close();
            }
        }
    }
}
