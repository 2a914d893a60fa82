package org.efaah.verbs.spi;

import java.util.OptionalInt;
import org.efaah.verbs.EfaDeviceAttributes;
import org.efaah.verbs.Errno;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.WorkCompletion;

/**
 * The EFA-only verbs (libefa's {@code efadv.h}), obtained from {@link VerbsProvider#efa()}. Like
 * the provider they extend they take opaque handles, trust them to be live, and report failure
 * with {@link VerbsException}; a device that is not EFA answers EOPNOTSUPP. Thread-safe.
 */
public interface EfaVerbs {

    /**
     * {@code efadv_create_cq(3)} of {@code entries} CQEs with {@code EFADV_WC_EX_WITH_SGID}: a CQ
     * whose receive completions from senders the receiver has no AH for carry the sender's GID.
     * Destroyed with {@link DatagramVerbs#destroyCq}.
     *
     * @throws VerbsException EOPNOTSUPP if the device is not EFA or cannot report the GID
     *                        ({@code EFADV_DEVICE_ATTR_CAPS_CQ_WITH_SGID}); EINVAL, ENOMEM
     * @param context a handle {@link VerbsProvider#openDevice} returned
     * @param entries the minimum number of CQEs, 1 .. the device's {@code max_cqe}
     * @return a CQ handle
     */
    long createCqWithSourceGid(long context, int entries);

    /**
     * {@link #createCqWithSourceGid(long, int)} whose completions are announced on {@code channel}
     * ({@link CompletionChannelVerbs#createCq(long, int, long)} describes the channel's rules).
     *
     * @param context a handle {@link VerbsProvider#openDevice} returned
     * @param entries the minimum number of CQEs
     * @param channel a handle {@link CompletionChannelVerbs#createCompletionChannel} returned, with no CQ yet
     * @return a CQ handle
     * @throws VerbsException EOPNOTSUPP where the provider or the device cannot (the device lacks CQ
     *                        notifications: {@code efa_create_cq_ex}), and as {@link #createCqWithSourceGid}
     */
    default long createCqWithSourceGid(long context, int entries, long channel) {
        throw new VerbsException("efadv_create_cq", Errno.EOPNOTSUPP, "this provider makes no EFA CQ with a "
                + "completion channel");
    }

    /**
     * Polls a CQ made by {@link #createCqWithSourceGid} ({@code ibv_start_poll}, {@code ibv_next_poll},
     * {@code ibv_end_poll}) into the holders; for a successful receive with {@code slid == 0xFFFF}
     * also {@code efadv_wc_read_sgid} into {@link WorkCompletion#sourceGid}.
     *
     * @return how many were filled, 0 when none was ready
     * @param cq   a handle {@link #createCqWithSourceGid} returned
     * @param into holders overwritten in order; at most {@code into.length} completions are taken
     * @throws NullPointerException as {@link DatagramVerbs#pollCq}: no completion is lost by it
     * @throws VerbsException with the errno when polling fails
     */
    int pollCqWithSourceGid(long cq, WorkCompletion[] into);

    /**
     * {@code efadv_create_qp_ex(3)} of driver type {@code EFADV_QP_DRIVER_TYPE_SRD}, in RESET,
     * one SGE each way; activated, posted to and destroyed like a UD QP.
     *
     * @throws VerbsException EOPNOTSUPP if the device is not EFA; EINVAL, ENOMEM
     * @param pd        a handle {@link VerbsProvider#allocatePd} returned
     * @param sendCq    a CQ handle for send completions
     * @param recvCq    a CQ handle for receive completions (may equal {@code sendCq})
     * @param maxSendWr send work requests outstanding at once, 1 .. the device's {@code max_qp_wr}
     * @param maxRecvWr receive work requests outstanding at once, likewise
     * @return the QP handle, freed with {@link DatagramVerbs#destroyQp}, and its QPN
     */
    QueuePairNumbers createSrdQp(long pd, long sendCq, long recvCq, int maxSendWr, int maxRecvWr);

    /**
     * {@code efadv_query_device(3)}.
     *
     * @param context a handle {@link VerbsProvider#openDevice} returned
     * @return the device's EFA attributes
     * @throws VerbsException EOPNOTSUPP if the device is not EFA or libefa is absent
     */
    EfaDeviceAttributes queryDevice(long context);

    /**
     * Takes an SRD QP made by {@link #createSrdQp} from RESET through INIT ({@code pkey_index} 0,
     * {@code port_num}, {@code qkey}) and RTR to RTS ({@code sq_psn} 0), as
     * {@link DatagramVerbs#activateUdQp} does for UD, and at RTR to RTS sets {@code rnr_retry}
     * ({@code IBV_QP_RNR_RETRY}) unless {@code rnrRetry} is {@link #RNR_RETRY_DEVICE_DEFAULT}.
     * EFA accepts {@code rnr_retry} only where the device reports
     * {@link EfaDeviceAttributes#CAPS_RNR_RETRY}; the caller checks that first.
     *
     * @param qp       a handle {@link #createSrdQp} returned
     * @param portNum  the port, 1 on EFA
     * @param qkey     the Q_Key, 0..0x7FFFFFFF
     * @param rnrRetry 0..7 (7: retry without end), or {@link #RNR_RETRY_DEVICE_DEFAULT} to leave it unset
     * @throws VerbsException with the errno of {@code ibv_modify_qp}
     */
    void activateSrdQp(long qp, int portNum, int qkey, int rnrRetry);

    /**
     * {@code efadv_get_max_sq_depth(3)} for the QPs this facet and {@link DatagramVerbs#createUdQp}
     * make (one send SGE, no RDMA SGE, no inline data): the deepest send queue the device takes,
     * which libefa holds {@code max_send_wr} to since rdma-core 63. Empty where it is not reported
     * (libefa before rdma-core 63, a provider that does not say): {@code max_sq_wr} then bounds it.
     *
     * @param context a handle {@link VerbsProvider#openDevice} returned
     * @return the depth, or empty when not reported
     * @throws VerbsException with the errno where libefa has the call and it fails otherwise
     */
    default OptionalInt maxSqDepth(long context) {
        return OptionalInt.empty();
    }

    /**
     * {@code efadv_get_max_rq_depth(3)} for one receive SGE: the deepest receive queue the device
     * takes, in place of {@code max_rq_wr}; empty where it is not reported, as {@link #maxSqDepth}.
     *
     * @param context a handle {@link VerbsProvider#openDevice} returned
     * @return the depth, or empty when not reported
     * @throws VerbsException with the errno where libefa has the call and it fails otherwise
     */
    default OptionalInt maxRqDepth(long context) {
        return OptionalInt.empty();
    }

    /** {@link #activateSrdQp}'s {@code rnrRetry} that leaves the device's default (7 on EFA: retry forever). */
    int RNR_RETRY_DEVICE_DEFAULT = -1;
}
