package org.efaah.bench;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.ud.Datagram;
import org.efaah.ud.UdEndpoint;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.VerbsProviders;
import org.efaah.verbs.spi.VerbsProvider;

/**
 * Issue 35 item 4: the wake-up latency of a wait on a platform thread (poll(2) on the channel) and
 * on a virtual thread (parked; the poller thread's epoll_wait unparks it), as the round trip of one
 * 64 B datagram between two endpoints of one JVM with no spin, so that every receive sleeps.
 * Rounds alternate platform and virtual; each prints p50 and p99 in microseconds. Runs on Java 21+
 * (virtual threads looked up), over the native provider (the EFA double: LD_LIBRARY_PATH).
 *
 * <p>Usage: {@code java -cp CLI_JAR efa-ah/src/bench/java/org/efaah/bench/WakeLatency.java [ROUND_TRIPS] [ROUNDS]}
 */
public final class WakeLatency {
    private WakeLatency() {
    }

    public static void main(String[] args) throws Throwable {
        int trips = args.length > 0 ? Integer.parseInt(args[0]) : 20_000;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        MethodHandle startVirtual = MethodHandles.publicLookup().findStatic(Thread.class, "startVirtualThread",
                MethodType.methodType(Thread.class, Runnable.class));
        UdEndpoint.Options options = UdEndpoint.Options.defaults().withSpin(0, TimeUnit.NANOSECONDS);
        try (VerbsProvider provider = VerbsProviders.factory("native").create();
             Device device = Device.openFirst(provider);
             ProtectionDomain pd = device.allocatePd();
             AddressHandleCache cache = AddressHandleCache.create();
             UdEndpoint a = UdEndpoint.open(pd, cache, options);
             UdEndpoint b = UdEndpoint.open(pd, cache, options);
             AddressHandle ah = cache.acquire(pd, AddressHandleAttributes.builder().dgid(a.address().gid()).build())) {
            System.out.printf("wake-up latency, round trip of 1 datagram (64 B), %d round trips a round, event-driven %b%n",
                    trips, a.eventDriven());
            for (int r = 0; r < rounds; r++) {
                for (boolean virtual : new boolean[] {false, true}) {
                    long[] rtt = new long[trips];
                    Runnable ping = () -> pingpong(a, b, ah, rtt, true);
                    Runnable pong = () -> pingpong(b, a, ah, rtt, false);
                    Thread t1;
                    Thread t2;
                    if (virtual) {
                        t2 = (Thread) startVirtual.invokeExact(pong);
                        t1 = (Thread) startVirtual.invokeExact(ping);
                    } else {
                        t2 = new Thread(pong);
                        t1 = new Thread(ping);
                        t2.start();
                        t1.start();
                    }
                    t1.join();
                    t2.join();
                    Arrays.sort(rtt);
                    System.out.printf("round %d %-8s p50 %6.1f us  p99 %7.1f us%n", r, virtual ? "virtual" : "platform",
                            rtt[trips / 2] / 1e3, rtt[(int) (trips * 0.99)] / 1e3);
                }
            }
        }
    }

    /** The pinger sends to {@code peer} and times until the answer; the ponger answers each datagram. */
    private static void pingpong(UdEndpoint self, UdEndpoint peer, AddressHandle ah, long[] rtt, boolean pinger) {
        ByteBuffer payload = ByteBuffer.allocate(64);
        for (int i = 0; i < rtt.length; i++) {
            long start = System.nanoTime();
            if (pinger) {
                self.send(ah, peer.address(), payload.clear());
            }
            Datagram d = self.receive(10, TimeUnit.SECONDS);
            if (d == null) {
                throw new IllegalStateException("no datagram within 10 s");
            }
            if (!pinger) {
                self.send(ah, peer.address(), payload.clear());
            } else {
                rtt[i] = System.nanoTime() - start;
            }
        }
    }
}
