package org.efaah.ud;

import org.efaah.verbs.EfaCompletionStatus;
import org.efaah.verbs.WorkCompletion;

/**
 * A work request completed with an error: the {@code ibv_wc_status} is named in the message
 * (e.g. {@code IBV_WC_LOC_LEN_ERR}) and available as {@link #status()}; on EFA the vendor error
 * is named too ({@link EfaCompletionStatus}, e.g. {@code EFA_IO_COMP_STATUS_REMOTE_ERROR_RNR}),
 * as several EFA statuses share one {@code ibv_wc_status}.
 */
public class WorkCompletionException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final int status;
    private final int vendorError;
    private final EfaCompletionStatus efaStatus;

    public WorkCompletionException(String operation, int status, int vendorError) {
        this(operation, status, vendorError, false);
    }

    /** As above; on EFA ({@code efa}) the vendor error is named as an {@link EfaCompletionStatus}. */
    public WorkCompletionException(String operation, int status, int vendorError, boolean efa) {
        super(message(operation, status, vendorError, efa ? EfaCompletionStatus.of(vendorError) : null));
        this.status = status;
        this.vendorError = vendorError;
        this.efaStatus = efa ? EfaCompletionStatus.of(vendorError) : null;
    }

    private static String message(String operation, int status, int vendorError, EfaCompletionStatus efa) {
        String vendor = "";
        if (efa != null && vendorError != 0) {
            vendor = ", vendor_err " + vendorError + " " + efa.headerName() + ": " + efa.meaning();
        } else if (vendorError != 0) {
            vendor = ", vendor_err 0x" + Integer.toHexString(vendorError);
        }
        return operation + " completed with " + WorkCompletion.statusName(status) + " (status " + status + vendor + ")";
    }

    /** The {@code enum ibv_wc_status} value. */
    public int status() {
        return status;
    }

    /** The {@code ibv_wc_status_str}-style name of {@link #status()}. */
    public String statusName() {
        return WorkCompletion.statusName(status);
    }

    public int vendorError() {
        return vendorError;
    }

    /** On EFA the device's own status ({@code wc.vendor_err}); null elsewhere or when unknown. */
    public EfaCompletionStatus efaStatus() {
        return efaStatus;
    }
}
