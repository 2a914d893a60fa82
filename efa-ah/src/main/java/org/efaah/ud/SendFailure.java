package org.efaah.ud;

import java.util.Objects;
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
 *                    also for a send a recovery gave up when it destroyed the QP (see
 *                    {@code outcomeUnknown})
 * @param vendorError the completion's {@code vendor_err}; on EFA an {@code efa_io_comp_status}
 * @param efaStatus   on EFA the vendor error by name; null elsewhere
 * @param rnrRetry    on SRD the {@code rnr_retry} in force (0..7, 7 retries without end); -1 on UD
 * @param outcomeUnknown true for a send no completion was ever polled for, given up by a recovery
 *                    when it destroyed the QP ({@link UdEndpoint.Counters#sendsOutcomeUnknown()}):
 *                    it is reported {@code IBV_WC_WR_FLUSH_ERR}, but the device may have delivered
 *                    it before the destroy, so a caller that sends it again may deliver it twice;
 *                    false for a send whose own completion said it failed
 */
public record SendFailure(int remoteQpn, Gid remoteGid, int status, int vendorError, EfaCompletionStatus efaStatus,
                          int rnrRetry, boolean outcomeUnknown) {

    /**
     * A send whose own completion said it failed ({@code outcomeUnknown} false).
     *
     * @param remoteQpn   the destination QPN the send named
     * @param remoteGid   the destination GID
     * @param status      the completion's {@code enum ibv_wc_status} value
     * @param vendorError the completion's {@code vendor_err}
     * @param efaStatus   on EFA the vendor error by name; null elsewhere
     * @param rnrRetry    on SRD the {@code rnr_retry} in force; -1 on UD
     */
    public SendFailure(int remoteQpn, Gid remoteGid, int status, int vendorError, EfaCompletionStatus efaStatus,
                       int rnrRetry) {
        this(remoteQpn, remoteGid, status, vendorError, efaStatus, rnrRetry, false);
    }

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
        if (outcomeUnknown) {
            b.append(", outcome unknown (given up when a recovery destroyed the QP: it may have arrived)");
        }
        return b.toString();
    }

    /*
     * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
     * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
     * NoObjectMethodsTest). Same meaning as the generated ones; toString is its own.
     */
    @Override
    public boolean equals(Object o) {
        return o == this || o instanceof SendFailure that && that.remoteQpn == remoteQpn
                && Objects.equals(that.remoteGid, remoteGid) && that.status == status
                && that.vendorError == vendorError && Objects.equals(that.efaStatus, efaStatus)
                && that.rnrRetry == rnrRetry && that.outcomeUnknown == outcomeUnknown;
    }

    @Override
    public int hashCode() {
        int h = remoteQpn;
        h = 31 * h + Objects.hashCode(remoteGid);
        h = 31 * h + status;
        h = 31 * h + vendorError;
        h = 31 * h + Objects.hashCode(efaStatus);
        h = 31 * h + rnrRetry;
        h = 31 * h + Boolean.hashCode(outcomeUnknown);
        return h;
    }
}
