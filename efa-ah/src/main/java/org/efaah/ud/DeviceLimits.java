package org.efaah.ud;

import java.util.OptionalInt;
import org.efaah.verbs.Device;
import org.efaah.verbs.EfaDeviceAttributes;
import org.efaah.verbs.Errno;
import org.efaah.verbs.Grh;
import org.efaah.verbs.QueuePairType;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.spi.EfaVerbs;

/**
 * An endpoint's settings against its device, before anything is created: the queue depths, the
 * largest message, the SRD {@code rnr_retry}. Each failure names the field, the value and the valid
 * range (or the device's limit it meets), as a one-line error before any native call.
 */
final class DeviceLimits {
    /** {@link QpSettings#rnrRetry()}: a finite count where the device lets it be set, else the device's default. */
    static final int RNR_RETRY_AUTO = -1;
    /** The SRD {@code rnr_retry} {@link #RNR_RETRY_AUTO} sets where the device lets it (libfabric's EFA RDM's). */
    static final int DEFAULT_RNR_RETRY = 3;

    private DeviceLimits() {
    }

    /**
     * Queue depths against the device, before anything is created, as libefa's
     * {@code efa_check_qp_limits} would refuse them later with a bare EINVAL from
     * {@code ibv_create_qp}: {@code max_qp_wr}, and on EFA the smaller of efadv's {@code max_sq_wr}
     * and {@code efadv_get_max_sq_depth} for sends, {@code efadv_get_max_rq_depth} (else
     * {@code max_rq_wr}) in place of {@code max_qp_wr} for receives, each where reported.
     */
    /*
     * Since rdma-core 63 efa_check_qp_limits compares max_send_wr with efa_calc_sq_max_depth (the
     * LLQ's size over the descriptor's, rounded down to a power of two), which
     * efadv_get_max_sq_depth returns, rather than max_sq_wr; and max_recv_wr with
     * efa_calc_rq_max_depth (max_rq_wr over max_recv_sge), efadv_get_max_rq_depth's. The send side
     * keeps max_sq_wr too, the smaller winning: libfabric's efa_user_info.c sizes its TX queue from
     * max_sq_wr and asks efadv_get_max_sq_depth only for wide descriptors, so a depth above
     * max_sq_wr is one no EFA user runs. Before rdma-core 63 (no such call) max_sq_wr and max_rq_wr
     * alone, today's rule.
     */
    static void checkDepths(Device device, QpSettings options) {
        int qpWr = device.attributes().limits().maxQpWr();
        int send = qpWr > 0 ? qpWr : Integer.MAX_VALUE;
        int receive = send;
        String sendName = "max_qp_wr";
        String receiveName = "max_qp_wr";
        EfaDeviceAttributes efa = device.isEfa() ? efaAttributesIfAny(device) : null;
        if (efa != null) {
            if (efa.maxSqWr() > 0 && efa.maxSqWr() < send) {
                send = efa.maxSqWr();
                sendName = "max_sq_wr";
            }
            if (efa.maxRqWr() > 0) {
                // efa_check_qp_limits: the receive queue's own limit (max_rq_wr over max_recv_sge,
                // 1 here), not max_qp_wr, which the kernel reports as the smaller of the two queues'
                // (libfabric runs 8k receives on 4k sends).
                receive = efa.maxRqWr();
                receiveName = "max_rq_wr";
            }
            OptionalInt sqDepth = device.efaMaxSqDepth();
            if (sqDepth.isPresent() && sqDepth.getAsInt() < send) {
                send = sqDepth.getAsInt();
                sendName = "efadv_get_max_sq_depth";
            }
            OptionalInt rqDepth = device.efaMaxRqDepth();
            if (rqDepth.isPresent()) {
                receive = rqDepth.getAsInt();
                receiveName = "efadv_get_max_rq_depth";
            }
        }
        checkDepth("sendDepth", options.sendDepth(), send, sendName, device);
        checkDepth("receiveDepth", options.receiveDepth(), receive, receiveName, device);
    }

    /**
     * The EFA device's efadv attributes, or null where the provider has no EFA extensions (libefa
     * absent, a provider without the facet): a UD QP needs none, and max_qp_wr then bounds it.
     */
    private static EfaDeviceAttributes efaAttributesIfAny(Device device) {
        try {
            return device.efaAttributes();
        } catch (VerbsException e) {
            if (e.errno() != Errno.EOPNOTSUPP) {
                throw e;
            }
            return null;
        }
    }

    private static void checkDepth(String field, int value, int limit, String limitName, Device device) {
        if (value < 1 || value > limit) {
            throw new IllegalArgumentException(field + ": " + value + " is out of range; valid 1.."
                    + (limit == Integer.MAX_VALUE ? "" : limit + " (" + device.name() + "'s " + limitName + ")"));
        }
    }

    /**
     * The largest datagram the port carries: on EFA the port's {@code max_msg_sz} (the device's MTU,
     * jumbo frames included, as libfabric's EFA provider takes it), elsewhere the active path MTU.
     */
    static int messageSizeLimit(Device device, int portNum) {
        var port = device.port(portNum);
        return device.isEfa() && port.maxMessageSize() > 0
                ? (int) Math.min(port.maxMessageSize(), Integer.MAX_VALUE - Grh.LENGTH) : port.activeMtu();
    }

    /**
     * The {@code rnr_retry} to set, or {@link EfaVerbs#RNR_RETRY_DEVICE_DEFAULT}: on UD none; on SRD
     * the one asked for, or for {@link #RNR_RETRY_AUTO} {@link #DEFAULT_RNR_RETRY} where the
     * device lets it be set.
     */
    static int rnrRetry(Device device, QpSettings options) {
        int asked = options.rnrRetry();
        if (options.transport() != QueuePairType.SRD) {
            if (asked != RNR_RETRY_AUTO) {
                throw new IllegalArgumentException("rnrRetry: " + asked + " applies to SRD only; this endpoint is "
                        + options.transport());
            }
            return EfaVerbs.RNR_RETRY_DEVICE_DEFAULT;
        }
        if (!device.isEfa()) {
            return EfaVerbs.RNR_RETRY_DEVICE_DEFAULT; // SRD itself is refused when the QP is created
        }
        EfaDeviceAttributes efa = device.efaAttributes();
        if (efa.supportsRnrRetry()) {
            return asked == RNR_RETRY_AUTO ? DEFAULT_RNR_RETRY : asked;
        }
        if (asked == RNR_RETRY_AUTO || asked == 7) {
            return EfaVerbs.RNR_RETRY_DEVICE_DEFAULT; // 7, retry without end, is what the device does anyway
        }
        throw new VerbsException("ibv_modify_qp", Errno.EOPNOTSUPP, "rnr_retry " + asked + ": " + device.name()
                + " does not report EFADV_DEVICE_ATTR_CAPS_RNR_RETRY, so an SRD QP keeps its default 7 (retry "
                + "without end); use RNR_RETRY_AUTO or 7");
    }
}
