package org.efaah.ud;

import org.efaah.verbs.EfaCompletionStatus;
import org.efaah.verbs.Gid;
import org.efaah.verbs.WorkCompletion;

/**
 * One send that completed with an error, as {@link WorkCompletionException#failures()} reports it.
 *
 * @param remoteQpn   the destination QPN the send named
 * @param remoteGid   the destination GID (the AH's {@code dgid})
 * @param status      the completion's {@code enum ibv_wc_status} value, e.g. {@code IBV_WC_RNR_RETRY_EXC_ERR}
 *                    (13); {@code IBV_WC_WR_FLUSH_ERR} (5) when the QP went into the error state first,
 *                    also for a send a recovery gave up when it destroyed the QP
 * @param vendorError the completion's {@code vendor_err}; on EFA an {@code efa_io_comp_status}
 * @param efaStatus   on EFA the vendor error by name; null elsewhere
 * @param rnrRetry    on SRD the {@code rnr_retry} in force (0..7, 7 retries without end); -1 on UD
 */
public record SendFailure(int remoteQpn, Gid remoteGid, int status, int vendorError, EfaCompletionStatus efaStatus,
                          int rnrRetry) {

    /** {@return the {@code ibv_wc_status} name, e.g. {@code IBV_WC_RNR_RETRY_EXC_ERR}} */
    public String statusName() {
        return WorkCompletion.statusName(status);
    }

    /** {@return whether the receiver had no receive posted and the retries ran out} */
    public boolean isReceiverNotReady() {
        return status == WorkCompletion.RNR_RETRY_EXC_ERR;
    }

    /** {@return one line: the destination, the status and, on EFA, the vendor error by name} */
    @Override
    public String toString() {
        StringBuilder b = new StringBuilder("send to QPN 0x").append(Integer.toHexString(remoteQpn)).append(" GID ")
                .append(remoteGid).append(": ").append(WorkCompletionException.describe(status, vendorError, efaStatus));
        if (isReceiverNotReady() && rnrRetry >= 0) {
            b.append(", rnr_retry ").append(rnrRetry);
        }
        return b.toString();
    }
}
