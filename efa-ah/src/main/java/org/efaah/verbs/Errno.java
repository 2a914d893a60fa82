package org.efaah.verbs;

/**
 * Linux errno values that libibverbs and the EFA driver report, by name.
 *
 * <p>Numbers are the Linux generic ones (identical on x86_64 and arm64). Values outside this
 * list are still carried by {@link VerbsException#errnoValue()}; {@link #of(int)} maps them to
 * {@link #UNKNOWN}.
 */
public enum Errno {
    EPERM(1), ENOENT(2), EINTR(4), EIO(5), ENXIO(6), EBADF(9), EAGAIN(11), ENOMEM(12),
    EACCES(13), EFAULT(14), EBUSY(16), EEXIST(17), ENODEV(19), EINVAL(22), ENOSPC(28),
    ERANGE(34), ENOSYS(38), ENODATA(61), ETIME(62), EPROTONOSUPPORT(93), EOPNOTSUPP(95),
    EADDRNOTAVAIL(99), ENETUNREACH(101), ETIMEDOUT(110), EHOSTUNREACH(113),
    /** Any errno not named above; the number itself is kept by the exception. */
    UNKNOWN(-1);

    private static final Errno[] BY_VALUE = new Errno[128];

    static {
        for (Errno e : values()) {
            if (e.value > 0) {
                BY_VALUE[e.value] = e;
            }
        }
    }

    private final int value;

    Errno(int value) {
        this.value = value;
    }

    /** The positive Linux errno number, or -1 for {@link #UNKNOWN}. */
    public int value() {
        return value;
    }

    /**
     * Maps an errno number to its name. Accepts the positive value or the negated value that
     * kernel-style functions (and this project's native stubs) return.
     */
    public static Errno of(int errno) {
        int v = Math.abs(errno);
        Errno e = v < BY_VALUE.length ? BY_VALUE[v] : null;
        return e == null ? UNKNOWN : e;
    }
}
