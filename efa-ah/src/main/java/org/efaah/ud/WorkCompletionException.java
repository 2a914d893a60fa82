package org.efaah.ud;

import org.efaah.verbs.WorkCompletion;

/**
 * A work request completed with an error: the {@code ibv_wc_status} is named in the message
 * (e.g. {@code IBV_WC_LOC_LEN_ERR}) and available as {@link #status()}.
 */
public class WorkCompletionException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final int status;
    private final int vendorError;

    public WorkCompletionException(String operation, int status, int vendorError) {
        super(operation + " completed with " + WorkCompletion.statusName(status) + " (status " + status
                + (vendorError != 0 ? ", vendor_err 0x" + Integer.toHexString(vendorError) : "") + ")");
        this.status = status;
        this.vendorError = vendorError;
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
}
