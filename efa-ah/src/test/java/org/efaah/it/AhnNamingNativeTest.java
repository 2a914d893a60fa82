package org.efaah.it;

import static org.efaah.it.ChildJvm.check;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.ud.Datagram;
import org.efaah.ud.SourceOrigin;
import org.efaah.ud.UdEndpoint;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.HardwareAddressHandle;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.VerbsProviders;
import org.efaah.verbs.spi.VerbsProvider;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 33's AHN naming over the EFA double (EfaSenderAtArrivalTest has both cases on the mock).
 * Section 1: a receiver reading one datagram a call behind a backlog still names, by AHN, a
 * datagram that arrived under an AH made before its last call, the AHN a reuse. Section 3: an AH made
 * by {@code ProtectionDomain.createAh} in the receiver's PD, a datagram from A arriving under it,
 * the AH destroyed and the cache's AH for B made. With the double's EFA_DOUBLE_AHN=lowest the
 * cache's AH gets the freed AHN (a table index, as on the device) and the datagram must not be
 * credited to B; with roundrobin the AHN is not reused and the datagram is UNKNOWN all the same
 * (no AH of the cache had its AHN). Three devices, one GID each, for the receiver, A and B, so
 * each case runs in a child JVM with EFA_DOUBLE_DEVICES=3. No device can be told how to number
 * AHs: elsewhere this skips.
 */
@Tag("native")
class AhnNamingNativeTest {
    @ParameterizedTest(name = "EFA_DOUBLE_AHN={0}")
    @ValueSource(strings = {"lowest", "roundrobin"})
    void aDatagramIsNamedByTheAhItArrivedUnderOrUnknown(String ahn)
            throws Exception {
        ChildJvm.assumeEfaDouble("whose EFA_DOUBLE_AHN numbers AHs");
        String text = ChildJvm.run(Child.class, Map.of("EFA_DOUBLE_AHN", ahn, "EFA_DOUBLE_DEVICES", "3"));
        System.out.print(text); // its FIGURE line, for scripts/efa-host-report
    }

    /** One case, on the double's devices 0 (the receiver), 1 (A) and 2 (B); exits 1 on a failed check. */
    static final class Child {
        public static void main(String[] args) {
            ChildJvm.exit(Child::run);
        }

        private static void run() {
            backlog();
            outsideAh();
        }

        /** EfaSenderAtArrivalTest.aDatagramQueuedBehindABacklogIsNamedByTheAhItArrivedUnder. */
        private static void backlog() {
            String mode = System.getenv("EFA_DOUBLE_AHN");
            try (VerbsProvider provider = VerbsProviders.factory("native").create();
                 Device d0 = Device.open(provider, "rdmap0s31");
                 Device d1 = Device.open(provider, "rdmap1s31");
                 Device d2 = Device.open(provider, "rdmap2s31");
                 ProtectionDomain pdR = d0.allocatePd();
                 ProtectionDomain pdA = d1.allocatePd();
                 ProtectionDomain pdB = d2.allocatePd();
                 AddressHandleCache cache = AddressHandleCache.create();
                 // 8 receives, reposted 2 at a time.
                 UdEndpoint receiver = UdEndpoint.open(pdR, cache, UdEndpoint.Options.defaults().withDepths(64, 8));
                 UdEndpoint a = UdEndpoint.open(pdA, cache, UdEndpoint.Options.defaults());
                 UdEndpoint b = UdEndpoint.open(pdB, cache, UdEndpoint.Options.defaults())) {
                // B's AH takes an AHN and gives it back: with lowest, A's AH below gets it again.
                int bAhn;
                try (AddressHandle toB = cache.acquire(pdR, AddressHandleAttributes.forGid(b.address().gid()))) {
                    bAhn = toB.ahn();
                }
                cache.invalidate(pdR, b.address().gid());
                for (int i = 0; i < 8; i++) {
                    a.send(receiver.address(), ByteBuffer.wrap(new byte[] {0}));
                }
                List<SourceOrigin> before = new ArrayList<>();
                check(receiver.poll(v -> before.add(v.origin()), 2) == 2, "2 of the 8 read");
                try (AddressHandle toA = cache.acquire(pdR, AddressHandleAttributes.forGid(a.address().gid()))) {
                    check(receiver.poll(v -> before.add(v.origin()), 1) == 1, "a third read");
                    a.send(receiver.address(), ByteBuffer.wrap(new byte[] {1}));
                    a.send(receiver.address(), ByteBuffer.wrap(new byte[] {1}));
                    List<String> after = new ArrayList<>();
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                    while (before.size() + after.size() < 10 && System.nanoTime() < deadline) {
                        receiver.poll(v -> {
                            if (v.payload().get(0) == 0) {
                                before.add(v.origin());
                            } else {
                                after.add(v.origin() + " " + v.sourceGid() + " AHN " + v.sourceAhn());
                            }
                        }, 1);
                    }
                    String named = SourceOrigin.AHN + " " + a.address().gid() + " AHN " + toA.ahn();
                    System.out.printf("FIGURE EFA double, EFA_DOUBLE_AHN=%s: a receiver one datagram a call behind"
                                    + " 5 queued, A's AH AHN %d (B's was %d): 2 datagrams sent under it named %s%n", mode,
                            toA.ahn(), bAhn, after);
                    check(!"lowest".equals(mode) || toA.ahn() == bAhn, "lowest: A's AH gets B's freed AHN " + bAhn);
                    check(before.stream().allMatch(o -> o == SourceOrigin.COMPLETION_GID),
                            "sent before the receiver had an AH for A: " + before);
                    check(after.equals(List.of(named, named)), "sent after the receiver's AH for A and its last call: "
                            + after + ", not " + named);
                }
                check(a.flush(10, TimeUnit.SECONDS), "flush");
            }
        }

        /** EfaSenderAtArrivalTest.aDatagramThatArrivedUnderAnAhMadeByCreateAhIsNotCreditedToTheCachesNextAhWithItsAhn. */
        private static void outsideAh() {
            String mode = System.getenv("EFA_DOUBLE_AHN");
            try (VerbsProvider provider = VerbsProviders.factory("native").create();
                 Device d0 = Device.open(provider, "rdmap0s31");
                 Device d1 = Device.open(provider, "rdmap1s31");
                 Device d2 = Device.open(provider, "rdmap2s31");
                 ProtectionDomain pdR = d0.allocatePd();
                 ProtectionDomain pdA = d1.allocatePd();
                 ProtectionDomain pdB = d2.allocatePd();
                 AddressHandleCache cache = AddressHandleCache.create();
                 UdEndpoint receiver = UdEndpoint.open(pdR, cache, UdEndpoint.Options.defaults());
                 UdEndpoint a = UdEndpoint.open(pdA, cache, UdEndpoint.Options.defaults());
                 UdEndpoint b = UdEndpoint.open(pdB, cache, UdEndpoint.Options.defaults())) {
                HardwareAddressHandle outside = pdR.createAh(AddressHandleAttributes.forGid(a.address().gid()));
                int outsideAhn = outside.ahn();
                a.send(receiver.address(), ByteBuffer.wrap(new byte[] {42}));
                check(a.flush(10, TimeUnit.SECONDS), "A's send completes");
                outside.destroy();
                try (AddressHandle toB = cache.acquire(pdR, AddressHandleAttributes.forGid(b.address().gid()))) {
                    Datagram d = receiver.receive(10, TimeUnit.SECONDS);
                    check(d != null, "the datagram arrives");
                    System.out.printf("FIGURE EFA double, EFA_DOUBLE_AHN=%s: a datagram from A under an AH made by"
                                    + " createAh (AHN %d), read after the cache's AH for B got AHN %d: slid %d, origin %s,"
                                    + " sender %s%n", mode, outsideAhn, toB.ahn(), d.sourceAhn(), d.origin(),
                            d.sourceGid());
                    check(!"lowest".equals(mode) || toB.ahn() == outsideAhn,
                            "lowest: the cache's AH gets the freed AHN " + outsideAhn + ", not " + toB.ahn());
                    check(!"roundrobin".equals(mode) || toB.ahn() != outsideAhn,
                            "roundrobin: a freed AHN does not come back at once");
                    check(d.sourceAhn() == outsideAhn, "slid is the AHN of the AH the datagram arrived under");
                    check(d.origin() == SourceOrigin.UNKNOWN && d.sourceGid() == null,
                            "sent by A (" + a.address().gid() + "), named " + d.sourceGid() + " (" + d.origin()
                                    + "); B is " + b.address().gid());
                }
                check(receiver.flush(10, TimeUnit.SECONDS), "flush");
            }
        }
    }
}
