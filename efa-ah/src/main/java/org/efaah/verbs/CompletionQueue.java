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
    /** Made by {@code efadv_create_cq} with the sender's GID: polled through {@link EfaVerbs}. */
    private final boolean withSourceGid;

    CompletionQueue(Device device, long handle, int entries) {
        this(device, handle, entries, false);
    }

    CompletionQueue(Device device, long handle, int entries, boolean withSourceGid) {
        this.device = device;
        this.handle = handle;
        this.entries = entries;
        this.withSourceGid = withSourceGid;
    }

    /** {@return whether receive completions carry the sender's GID ({@link Device#createCqWithSourceGid})} */
    public boolean withSourceGid() {
        return withSourceGid;
    }

    /**
     * The device that owns this CQ.
     *
     * @return the device the CQ was created on
     */
    public Device device() {
        return device;
    }

    /** {@return the number of CQEs it was created with} */
    public int entries() {
        return entries;
    }

    /**
     * {@code ibv_poll_cq(3)}: fills up to {@code into.length} completions, without blocking.
     *
     * @return how many were filled, 0 when none was ready
     * @throws IllegalStateException if closed
     * @throws VerbsException        if the provider fails
     * @param into holders overwritten in order; their previous values are lost
     */
    public int poll(WorkCompletion[] into) {
        guard.enter();
        try {
            return withSourceGid ? device.provider().efa().pollCqWithSourceGid(handle, into)
                    : device.provider().pollCq(handle, into);
        } finally {
            guard.exit();
        }
    }

    Guard guard() {
        return guard;
    }

    /**
     * Whether the CQ is closed: polling it is then refused.
     *
     * @return true once {@link #close()} has completed
     */
    public boolean isClosed() {
        return guard.isClosed();
    }

    /** {@code ibv_destroy_cq(3)}; fails with EBUSY while a QP uses it. */
    @Override
    public void close() {
        guard.close(() -> {
            device.provider().destroyCq(handle);
            device.forget(this);
        });
    }

    /**
     * For {@link Device#close()}, after its QPs are gone: destroys the CQ and counts it closed
     * even when the destroy fails, since the context's close frees it anyway.
     */
    RuntimeException closeUnderDevice() {
        return Device.closeAnyway(guard, () -> device.provider().destroyCq(handle));
    }
}
