package org.efaah.verbs;

/**
 * A completion queue ({@code struct ibv_cq}), made by {@link Device#createCq(int)}. Thread-safe;
 * {@link #close()} waits for a poll in progress and is idempotent.
 */
public final class CompletionQueue implements AutoCloseable {
    private final Device device;
    final long handle;
    private final int entries;
    private final Guard guard = new Guard("completion queue");

    CompletionQueue(Device device, long handle, int entries) {
        this.device = device;
        this.handle = handle;
        this.entries = entries;
    }

    public Device device() {
        return device;
    }

    /** The number of CQEs it was created with. */
    public int entries() {
        return entries;
    }

    /**
     * {@code ibv_poll_cq(3)}: fills up to {@code into.length} completions, without blocking.
     *
     * @return how many were filled, 0 when none was ready
     * @throws IllegalStateException if closed
     * @throws VerbsException        if the provider fails
     */
    public int poll(WorkCompletion[] into) {
        guard.enter();
        try {
            return device.provider().pollCq(handle, into);
        } finally {
            guard.exit();
        }
    }

    Guard guard() {
        return guard;
    }

    /** {@code ibv_destroy_cq(3)}; fails with EBUSY while a QP uses it. */
    @Override
    public void close() {
        guard.close(() -> device.provider().destroyCq(handle));
    }
}
