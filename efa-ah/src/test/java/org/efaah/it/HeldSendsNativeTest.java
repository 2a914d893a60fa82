package org.efaah.it;

import static org.efaah.it.ChildJvm.attributes;
import static org.efaah.it.ChildJvm.expectFailure;
import static org.efaah.it.ChildJvm.check;

import java.nio.ByteBuffer;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.ud.SendFailure;
import org.efaah.ud.UdEndpoint;
import org.efaah.ud.WorkCompletionException;
import org.efaah.verbs.Device;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.VerbsProviders;
import org.efaah.verbs.WorkCompletion;
import org.efaah.verbs.spi.VerbsProvider;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 29, the held-back recovery case over the EFA double (UdEndpointBoundedRecoveryTest has it
 * on the mock): sends whose completions never come, then the QP in error. The recovery waits for
 * them at most its bound, reports them failed and goes on; flush() never waits for them again.
 * The double holds the first sends of a process (EFA_DOUBLE_HOLD_SENDS), so each case runs in a
 * child JVM of its own, both of the double's ERR behaviours: none (EFA as documented: the held
 * sends given up past the bound) and flush (the held sends flushed at ERR). Either way the QP is
 * destroyed and made anew: an EFA QP is never reset (issue 33). No device can be told to hold
 * sends: elsewhere this skips.
 */
@Tag("native")
class HeldSendsNativeTest {
    private static final int HELD = 3;
    private static final long BOUND_NANOS = UdEndpoint.DEFAULT_RECOVERY_FLUSH_NANOS;

    @ParameterizedTest(name = "EFA_DOUBLE_ERR={0}")
    @ValueSource(strings = {"none", "flush"})
    void sendsWhoseCompletionsNeverComeAreReportedFailedWithinTheBound(String err) throws Exception {
        ChildJvm.assumeEfaDouble("whose EFA_DOUBLE_HOLD_SENDS holds sends");
        String text = ChildJvm.run(Child.class, Map.of("EFA_DOUBLE_HOLD_SENDS", Integer.toString(HELD), "EFA_DOUBLE_ERR", err,
                "EFA_DOUBLE_LEN_ERR", "err"));
        System.out.print(text); // its FIGURE line, for scripts/efa-host-report
    }

    /** One case, in a JVM whose double holds its first {@value #HELD} sends; exits 1 on a failed check. */
    static final class Child {
        public static void main(String[] args) {
            ChildJvm.exit(Child::run);
        }

        private static void run() {
            boolean flushes = "flush".equals(System.getenv("EFA_DOUBLE_ERR"));
            try (VerbsProvider provider = VerbsProviders.factory("native").create();
                 Device device = Device.openFirst(provider);
                 ProtectionDomain pd0 = device.allocatePd();
                 ProtectionDomain pd1 = device.allocatePd();
                 AddressHandleCache cache = AddressHandleCache.create();
                 UdEndpoint small = UdEndpoint.open(pd0, cache, UdEndpoint.Options.defaults().withMaxMessageSize(512));
                 UdEndpoint big = UdEndpoint.open(pd1, cache, UdEndpoint.Options.defaults());
                 AddressHandle toSmall = cache.acquire(pd1, attributes(small));
                 AddressHandle toBig = cache.acquire(pd0, attributes(big))) {
                int qpn = small.address().qpn();
                for (int i = 0; i < HELD; i++) {
                    small.send(toBig, big.address(), ByteBuffer.allocate(16)); // held: no completion comes
                }
                check(small.sendsInFlight() == HELD, "held sends in flight: " + small.sendsInFlight());
                // A receive too short: the double's EFA_DOUBLE_LEN_ERR=err puts small's QP in ERR.
                big.send(toSmall, small.address(), ByteBuffer.allocate(1024));
                long start = System.nanoTime();
                WorkCompletionException received = expectFailure(() -> small.receive(5, TimeUnit.SECONDS));
                check(received.status() == WorkCompletion.LOC_LEN_ERR, "receive: " + received.getMessage());
                WorkCompletionException flushed = expectFailure(() -> small.flush(5, TimeUnit.SECONDS));
                long millis = (System.nanoTime() - start) / 1_000_000;
                check(millis < TimeUnit.NANOSECONDS.toMillis(BOUND_NANOS) + 2000, "past the bound: " + millis + " ms");
                check(flushed.failures().size() == HELD, "failures: " + flushed.getMessage());
                for (SendFailure f : flushed.failures()) {
                    check(f.status() == WorkCompletion.WR_FLUSH_ERR && f.remoteQpn() == big.address().qpn(),
                            f.toString());
                    // Flushed at ERR, a completion says so; given up at the destroy, nobody knows.
                    check(f.outcomeUnknown() == !flushes, "outcome unknown: " + f);
                }
                check(small.sendsInFlight() == 0, "in flight after: " + small.sendsInFlight());
                check(small.flush(1, TimeUnit.SECONDS), "flush waits for nothing the recovery gave up");
                long remade = small.counters().qpsRemade();
                check(remade == 1, "QPs remade (EFA: never reset): " + remade);
                check(small.counters().recoveries() == 1, "recoveries: " + small.counters().recoveries());
                small.send(toBig, big.address(), ByteBuffer.allocate(16).put(0, (byte) 5));
                check(small.flush(5, TimeUnit.SECONDS), "a later send completes");
                var d = big.receive(5, TimeUnit.SECONDS);
                check(d != null && d.payload()[0] == 5, "a later send arrives: " + d);
                System.out.printf("FIGURE %s, EFA_DOUBLE_ERR=%s: %d sends whose completions never came reported "
                        + "failed (%s) %d ms after the error (bound %d ms), the QP %s (QPN %d -> %d); a later send "
                        + "arrived%n", device.name(), flushes ? "flush" : "none", HELD,
                        WorkCompletion.statusName(WorkCompletion.WR_FLUSH_ERR), millis,
                        TimeUnit.NANOSECONDS.toMillis(BOUND_NANOS), remade > 0 ? "made anew" : "reset",
                        qpn, small.address().qpn());
            }
        }
    }
}
