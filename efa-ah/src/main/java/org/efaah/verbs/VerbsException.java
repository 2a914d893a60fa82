package org.efaah.verbs;

/**
 * A verbs operation failed in the provider (the device, the kernel or the mock's model of them).
 *
 * <p>Carries the errno the operation reported, by name ({@link #errno()}) and by number
 * ({@link #errnoValue()}), and the verbs call that failed, e.g. {@code ibv_create_ah}. The
 * message reads {@code "ibv_create_ah failed: EINVAL (22): detail"}.
 *
 * <p>Unchecked, like {@link java.io.UncheckedIOException}: most callers cannot recover from a
 * device failure in place and those that can catch it by type and switch on {@link #errno()}.
 * Invalid arguments never produce this exception: they are rejected before reaching a provider
 * with {@link IllegalArgumentException} or {@link NullPointerException}.
 */
public class VerbsException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String operation;
    private final int errnoValue;
    private final String context;

    /**
     * @param operation the verbs call that failed, e.g. {@code "ibv_create_ah"}
     * @param errno     the errno, positive or negated
     * @param detail    extra context, or {@code null}
     */
    public VerbsException(String operation, int errno, String detail) {
        super(message(operation, errno, detail));
        this.operation = operation;
        this.errnoValue = Math.abs(errno);
        this.context = null;
    }

    private VerbsException(VerbsException original, String context) {
        super(original.getMessage() + "; " + context, original);
        this.operation = original.operation;
        this.errnoValue = original.errnoValue;
        this.context = original.context == null ? context : original.context + "; " + context;
    }

    /**
     * The same failure (operation and errno unchanged) with {@code context} appended to the
     * message, e.g. the device, PD and GIDs involved and a hint; this exception becomes the cause.
     *
     * @param context one or more {@code name=value} facts, e.g. {@code device=efa_0, dgid=fe80::1}
     * @return a new exception; this one is not changed
     */
    VerbsException withContext(String context) {
        return new VerbsException(this, context);
    }

    /**
     * A failure of {@code operation} with a named errno; the message reads
     * {@code "<operation> failed: <ERRNO> (<number>): <detail>"}.
     *
     * @param operation the verbs call that failed, e.g. {@code ibv_create_ah}
     * @param errno     the errno it reported, a named one (not {@link Errno#UNKNOWN})
     * @param detail    what was asked, for the message; may be null
     * @throws IllegalArgumentException if {@code errno} is {@link Errno#UNKNOWN}, which has no number
     *                                  (its -1 would read as EPERM): pass the number instead
     */
    public VerbsException(String operation, Errno errno, String detail) {
        this(operation, numberOf(errno), detail);
    }

    private static int numberOf(Errno errno) {
        if (errno == Errno.UNKNOWN) {
            throw new IllegalArgumentException("errno: UNKNOWN has no number; pass the errno value itself");
        }
        return errno.value();
    }

    private static String message(String operation, int errno, String detail) {
        int v = Math.abs(errno);
        Errno e = Errno.of(v);
        String name = e == Errno.UNKNOWN ? "errno" : e.name();
        return operation + " failed: " + name + " (" + v + ")" + (detail == null ? "" : ": " + detail);
    }

    /** {@return the errno by name; {@link Errno#UNKNOWN} when it has no name here} */
    public Errno errno() {
        return Errno.of(errnoValue);
    }

    /** {@return the positive errno number} */
    public int errnoValue() {
        return errnoValue;
    }

    /** {@return the context added by {@link #withContext}, or null} */
    public String context() {
        return context;
    }

    /** {@return the verbs call that failed, e.g. {@code ibv_create_ah}} */
    public String operation() {
        return operation;
    }
}
