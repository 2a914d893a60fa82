package org.efaah.verbs;

/**
 * Linux errno values that libibverbs and the EFA driver report, by name.
 *
 * <p>Numbers are the Linux generic ones (identical on x86_64 and arm64). Values outside this
 * list are still carried by {@link VerbsException#errnoValue()}; {@link #of(int)} maps them to
 * {@link #UNKNOWN}.
 */
public enum Errno {
    /** Operation not permitted: e.g. pinning memory beyond {@code RLIMIT_MEMLOCK} without CAP_IPC_LOCK. */
    EPERM(1),
    /** No such file or entry: e.g. a device or sysfs attribute that is not there. */
    ENOENT(2),
    /** A system call was interrupted by a signal. */
    EINTR(4),
    /** I/O error: the device failed the command, typically after a fatal device error. */
    EIO(5),
    /** No such device or address. */
    ENXIO(6),
    /** Bad file descriptor: e.g. a closed context or event channel. */
    EBADF(9),
    /** Try again: a resource is busy or temporarily exhausted. */
    EAGAIN(11),
    /** Out of memory, or a device limit reached ({@code max_ah}, {@code max_pd}), or a full work queue. */
    ENOMEM(12),
    /** Permission denied: e.g. no access to {@code /dev/infiniband/uverbsN}. */
    EACCES(13),
    /** Bad address: memory the kernel could not read or write. */
    EFAULT(14),
    /** Busy: an object still has children (a PD with AHs, a CQ with QPs). */
    EBUSY(16),
    /** Already exists. */
    EEXIST(17),
    /** No such device, or the device went away. */
    ENODEV(19),
    /** Invalid argument: attributes the device refuses, or an unknown handle. */
    EINVAL(22),
    /** No space left: a table (e.g. of GIDs) is full. */
    ENOSPC(28),
    /** A value is out of the range the device accepts. */
    ERANGE(34),
    /** The kernel does not implement the call. */
    ENOSYS(38),
    /** No data: e.g. an empty GID table slot named by sgid_index. */
    ENODATA(61),
    /** A timer expired. */
    ETIME(62),
    /** Protocol not supported: e.g. a QP type or transport the device lacks. */
    EPROTONOSUPPORT(93),
    /** Operation not supported by this device or provider (e.g. no EFA extensions, no datagram path). */
    EOPNOTSUPP(95),
    /** Address not available: e.g. no route or GID for the address. */
    EADDRNOTAVAIL(99),
    /** Network unreachable: no route to the destination GID. */
    ENETUNREACH(101),
    /** Timed out: e.g. address resolution or a device command did not finish in time. */
    ETIMEDOUT(110),
    /** Host unreachable: the destination's link address could not be resolved. */
    EHOSTUNREACH(113),
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

    /**
     * The positive Linux errno number, or -1 for {@link #UNKNOWN}.
     *
     * @return the number, e.g. 12 for ENOMEM
     */
    public int value() {
        return value;
    }

    /**
     * Maps an errno number to its name. Accepts the positive value or the negated value that
     * kernel-style functions (and this project's native stubs) return.
     *
     * @param errno the errno number, positive or negated
     * @return its name, or {@link #UNKNOWN} for a number not listed here
     */
    public static Errno of(int errno) {
        int v = Math.abs(errno);
        Errno e = v < BY_VALUE.length ? BY_VALUE[v] : null;
        return e == null ? UNKNOWN : e;
    }
}
