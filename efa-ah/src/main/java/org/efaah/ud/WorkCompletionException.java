package org.efaah.ud;

import java.util.List;
import org.efaah.verbs.EfaCompletionStatus;
import org.efaah.verbs.WorkCompletion;

/**
 * A work request completed with an error: the {@code ibv_wc_status} is named in the message
 * (e.g. {@code IBV_WC_LOC_LEN_ERR}) and available as {@link #status()}; on EFA the vendor error
 * is named too ({@link EfaCompletionStatus}, e.g. {@code EFA_IO_COMP_STATUS_REMOTE_ERROR_RNR}),
 * as several EFA statuses share one {@code ibv_wc_status}.
 *
 * <p>Thrown for sends by {@link UdEndpoint#send} and {@link UdEndpoint#flush}: then
 * {@link #failures()} lists every send that failed since the last report, each with its
 * destination, and {@link #status()} is the first one's. Thrown for a receive by
 * {@link UdEndpoint#receive}: then {@link #failures()} is empty.
 */
public class WorkCompletionException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final int status;
    private final int vendorError;
    private final EfaCompletionStatus efaStatus;
    private final transient List<SendFailure> failures;

    /**
     * An exception for a completion with an error; the message names the operation, the status
     * and the vendor error.
     *
     * @param operation   what completed, such as {@code send} or {@code receive}
     * @param status      the completion's {@code enum ibv_wc_status} value ({@code wc.status})
     * @param vendorError the completion's {@code wc.vendor_err}; 0 when none
     * @param efa         whether the device is EFA, so that the vendor error is named as an
     *                    {@link EfaCompletionStatus}
     */
    WorkCompletionException(String operation, int status, int vendorError, boolean efa) {
        super(message(operation, status, vendorError, efa ? EfaCompletionStatus.of(vendorError) : null));
        this.status = status;
        this.vendorError = vendorError;
        this.efaStatus = efa ? EfaCompletionStatus.of(vendorError) : null;
        this.failures = List.of();
    }

    /** Sends that failed, in the order their completions were polled; at least one. */
    WorkCompletionException(List<SendFailure> failures) {
        super(message(failures));
        SendFailure first = failures.get(0);
        this.status = first.status();
        this.vendorError = first.vendorError();
        this.efaStatus = first.efaStatus();
        this.failures = List.copyOf(failures);
    }

    private static String message(List<SendFailure> failures) {
        StringBuilder b = new StringBuilder();
        b.append(failures.size() == 1 ? "1 send failed: " : failures.size() + " sends failed: ");
        int shown = Math.min(failures.size(), 8);
        for (int i = 0; i < shown; i++) {
            b.append(i == 0 ? "" : "; ").append(failures.get(i));
        }
        if (shown < failures.size()) {
            b.append("; and ").append(failures.size() - shown).append(" more (failures())");
        }
        return b.toString();
    }

    private static String message(String operation, int status, int vendorError, EfaCompletionStatus efa) {
        return operation + " completed with " + describe(status, vendorError, efa);
    }

    /** The status by name and number, with the vendor error (by name on EFA). */
    static String describe(int status, int vendorError, EfaCompletionStatus efa) {
        String vendor = "";
        if (efa != null && vendorError != 0) {
            vendor = ", vendor_err " + vendorError + " " + efa.headerName() + ": " + efa.meaning();
        } else if (vendorError != 0) {
            vendor = ", vendor_err 0x" + Integer.toHexString(vendorError);
        }
        return WorkCompletion.statusName(status) + " (status " + status + vendor + ")";
    }

    /**
     * The completion's status, as in {@code ibv_poll_cq(3)}.
     *
     * @return the {@code enum ibv_wc_status} value, never 0 ({@code IBV_WC_SUCCESS})
     */
    public int status() {
        return status;
    }

    /**
     * The name of {@link #status()}, in the manner of {@code ibv_wc_status_str(3)}.
     *
     * @return the enum constant's name, such as {@code IBV_WC_LOC_LEN_ERR}
     */
    public String statusName() {
        return WorkCompletion.statusName(status);
    }

    /**
     * The device's own error code ({@code wc.vendor_err}), meaningful only to its driver.
     *
     * @return the vendor error; 0 when none
     */
    public int vendorError() {
        return vendorError;
    }

    /**
     * On EFA the device's own status: {@code wc.vendor_err} as an {@code enum efa_io_comp_status}.
     *
     * @return the EFA status; null on other devices or when the code is unknown
     */
    public EfaCompletionStatus efaStatus() {
        return efaStatus;
    }

    /**
     * The sends this exception reports, each with its destination and status.
     *
     * @return for sends, every failure since the last report (at least one); for a receive, empty
     */
    public List<SendFailure> failures() {
        return failures;
    }
}
