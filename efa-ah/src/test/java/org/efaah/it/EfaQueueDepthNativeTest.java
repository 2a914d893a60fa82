package org.efaah.it;

import static org.efaah.it.ChildJvm.check;

import java.util.Map;
import java.util.OptionalInt;
import org.efaah.cache.AddressHandleCache;
import org.efaah.ud.UdEndpoint;
import org.efaah.verbs.Device;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.QueuePairType;
import org.efaah.verbs.VerbsProviders;
import org.efaah.verbs.spi.VerbsProvider;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 33, device limits, through the stub: {@code efadv_get_max_sq_depth} and
 * {@code efadv_get_max_rq_depth} (EFA_1.5, rdma-core 63) looked up at run time, their depths
 * checked before anything is created, today's rule where libefa does not answer. Each of the
 * double's EFA_DOUBLE_MAX_DEPTH modes in a child JVM (the double reads it when it loads): absent
 * (a libefa before 63: max_qp_wr and max_rq_wr), device (rdma-core 63's depths, equal to those
 * limits on the double), smaller (depths below them, which alone bound the endpoint and the QP).
 * Elsewhere this skips.
 */
@Tag("native")
class EfaQueueDepthNativeTest {

    @ParameterizedTest(name = "EFA_DOUBLE_MAX_DEPTH={0}")
    @ValueSource(strings = {"absent", "device", "smaller"})
    void theEndpointTakesTheDepthsLibefaReportsAndTodaysRuleWithout(String mode) throws Exception {
        ChildJvm.assumeEfaDouble("whose EFA_DOUBLE_MAX_DEPTH sets what efadv_get_max_*_depth report");
        System.out.print(ChildJvm.run(Child.class, Map.of("EFA_DOUBLE_MAX_DEPTH", mode)));
    }

    /** One mode; exits 1 on a failed check. */
    static final class Child {
        public static void main(String[] args) {
            ChildJvm.exit(Child::run);
        }

        private static void run() {
            String mode = System.getenv("EFA_DOUBLE_MAX_DEPTH");
            try (VerbsProvider provider = VerbsProviders.factory("native").create();
                 Device device = Device.openFirst(provider);
                 ProtectionDomain pd = device.allocatePd();
                 AddressHandleCache cache = AddressHandleCache.create()) {
                OptionalInt sq = device.efaMaxSqDepth();
                OptionalInt rq = device.efaMaxRqDepth();
                int maxQpWr = device.attributes().limits().maxQpWr();
                int maxSqWr = device.efaAttributes().maxSqWr();
                int maxRqWr = device.efaAttributes().maxRqWr();
                int send;
                int receive;
                String sendName;
                String receiveName;
                switch (mode) {
                    case "absent" -> {
                        check(sq.isEmpty() && rq.isEmpty(), "absent: no depths reported: " + sq + ", " + rq);
                        send = Math.min(maxQpWr, maxSqWr);
                        sendName = maxSqWr < maxQpWr ? "max_sq_wr" : "max_qp_wr";
                        receive = maxRqWr;
                        receiveName = "max_rq_wr";
                    }
                    case "device" -> {
                        check(sq.equals(OptionalInt.of(maxSqWr)) && rq.equals(OptionalInt.of(maxRqWr)),
                                "device: the double's depths are its max_sq_wr and max_rq_wr: " + sq + ", " + rq);
                        send = Math.min(maxQpWr, maxSqWr);
                        sendName = maxSqWr < maxQpWr ? "max_sq_wr" : "max_qp_wr";
                        receive = maxRqWr;
                        receiveName = "efadv_get_max_rq_depth";
                    }
                    default -> {
                        check(sq.isPresent() && sq.getAsInt() < Math.min(maxQpWr, maxSqWr)
                                && rq.isPresent() && rq.getAsInt() < maxRqWr,
                                "smaller: depths below max_sq_wr and max_rq_wr: " + sq + ", " + rq);
                        send = sq.getAsInt();
                        sendName = "efadv_get_max_sq_depth";
                        receive = rq.getAsInt();
                        receiveName = "efadv_get_max_rq_depth";
                    }
                }
                for (QueuePairType transport : QueuePairType.values()) {
                    UdEndpoint.Options options = UdEndpoint.Options.defaults().withMaxMessageSize(64)
                            .withTransport(transport);
                    expectRefused(() -> UdEndpoint.open(pd, cache, options.withDepths(send + 1, 16)),
                            "sendDepth: " + (send + 1) + " is out of range; valid 1.." + send + " ("
                                    + device.name() + "'s " + sendName + ")");
                    expectRefused(() -> UdEndpoint.open(pd, cache, options.withDepths(16, receive + 1)),
                            "receiveDepth: " + (receive + 1) + " is out of range; valid 1.." + receive + " ("
                                    + device.name() + "'s " + receiveName + ")");
                    // At the limit the device (the double, as libefa's efa_check_qp_limits) takes it.
                    UdEndpoint.open(pd, cache, options.withDepths(send, receive)).close();
                }
                System.out.printf("EFA_DOUBLE_MAX_DEPTH=%s: %s's send depth 1..%d (%s), receive 1..%d (%s)%n",
                        mode, device.name(), send, sendName, receive, receiveName);
            }
        }

        private static void expectRefused(Runnable open, String message) {
            try {
                open.run();
            } catch (IllegalArgumentException e) {
                check(message.equals(e.getMessage()), "expected \"" + message + "\", got \"" + e.getMessage() + "\"");
                return;
            }
            check(false, "not refused: " + message);
        }
    }
}
