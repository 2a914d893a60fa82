package org.efaah.bench;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.ud.UdEndpoint;
import org.efaah.ud.WorkCompletionException;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.QueuePairType;
import org.efaah.verbs.VerbsProviders;
import org.efaah.verbs.spi.VerbsProvider;

/**
 * Issue 35: the send slots' lock under contention (docs/benchmarks.md, "Own code by profile"):
 * {@code THREADS} threads send batches of 16 datagrams of 64 B on one SRD endpoint, one thread
 * receives them on another; datagrams received per second over {@code SECONDS}, after a second of
 * warm-up. Over the native provider (the EFA double: LD_LIBRARY_PATH).
 *
 * <p>Usage: {@code env LD_LIBRARY_PATH=$PWD/efa-ah/target/native/efa-double/lib java
 * --enable-native-access=ALL-UNNAMED -cp CLI_JAR efa-ah/src/bench/java/org/efaah/bench/ContendedSends.java
 * THREADS SECONDS}
 */
public final class ContendedSends {
    private static volatile boolean stop;

    private ContendedSends() {
    }

    public static void main(String[] args) throws InterruptedException {
        int threads = Integer.parseInt(args[0]);
        double seconds = Double.parseDouble(args[1]);
        try (VerbsProvider provider = VerbsProviders.open("native");
             Device device = Device.openFirst(provider);
             ProtectionDomain pd = device.allocatePd();
             AddressHandleCache cache = AddressHandleCache.create();
             UdEndpoint receiver = UdEndpoint.open(pd, cache,
                     UdEndpoint.Options.defaults().withDepths(1, 1024).withTransport(QueuePairType.SRD));
             UdEndpoint sender = UdEndpoint.open(pd, cache,
                     UdEndpoint.Options.defaults().withDepths(256, 16).withTransport(QueuePairType.SRD));
             AddressHandle ah = cache.acquire(pd, AddressHandleAttributes.builder()
                     .dgid(receiver.address().gid()).sgidIndex(0).build())) {
            AtomicLong received = new AtomicLong();
            Thread receiving = new Thread(() -> {
                while (!stop) {
                    received.addAndGet(receiver.receive(d -> { }, 64, 100, TimeUnit.MILLISECONDS));
                }
            }, "receiver");
            receiving.start();
            Thread[] sending = new Thread[threads];
            for (int t = 0; t < threads; t++) {
                sending[t] = new Thread(() -> {
                    ByteBuffer message = ByteBuffer.allocate(64);
                    ByteBuffer[] batch = new ByteBuffer[16];
                    for (int i = 0; i < batch.length; i++) {
                        batch[i] = message.duplicate();
                    }
                    while (!stop) {
                        for (ByteBuffer b : batch) {
                            b.clear();
                        }
                        try {
                            sender.sendBatch(ah, receiver.address(), batch, 0, batch.length);
                        } catch (WorkCompletionException e) {
                            // an RNR the resends ran out on: counted by what never arrives
                        }
                    }
                }, "sender-" + t);
                sending[t].start();
            }
            Thread.sleep(1000);
            long before = received.get();
            long start = System.nanoTime();
            Thread.sleep((long) (seconds * 1000));
            long after = received.get();
            long end = System.nanoTime();
            stop = true;
            for (Thread t : sending) {
                t.join();
            }
            receiving.join();
            System.out.printf("ContendedSends %d threads: %.0f datagrams/s received%n", threads,
                    (after - before) * 1e9 / (end - start));
        }
    }
}
