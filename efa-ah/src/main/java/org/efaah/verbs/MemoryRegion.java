package org.efaah.verbs;

import java.nio.ByteBuffer;

/**
 * A registered direct buffer ({@code struct ibv_mr}, local write access), made by
 * {@link ProtectionDomain#registerMemory(ByteBuffer)}. Holds the buffer, so that the memory
 * stays allocated while the device may write to it. Thread-safe; close is idempotent.
 */
public final class MemoryRegion implements AutoCloseable {
    private final ProtectionDomain pd;
    final long handle;
    private final ByteBuffer buffer;
    private final Guard guard;

    MemoryRegion(ProtectionDomain pd, long handle, ByteBuffer buffer) {
        this.pd = pd;
        this.handle = handle;
        this.buffer = buffer;
        this.guard = new Guard("memory region");
    }

    /**
     * {@return the PD the memory is registered in}
     */
    public ProtectionDomain pd() {
        return pd;
    }

    /** {@return the registered buffer (its whole capacity is registered)} */
    public ByteBuffer buffer() {
        return buffer;
    }

    /** {@return the number of bytes registered} */
    public int length() {
        return buffer.capacity();
    }

    Guard guard() {
        return guard;
    }

    void checkRange(int offset, int length) {
        if (offset < 0 || length < 0 || (long) offset + length > buffer.capacity()) {
            throw new IllegalArgumentException("offset/length: " + offset + "+" + length
                    + " is outside the registered 0.." + buffer.capacity() + " bytes");
        }
    }

    /**
     * Whether the region is deregistered: posting from it is then refused.
     *
     * @return true once deregistered (or freed with its PD or device)
     */
    public boolean isClosed() {
        return guard.isClosed();
    }

    /** {@code ibv_dereg_mr(3)}. */
    @Override
    public void close() {
        guard.close(() -> {
            pd.device().provider().datagrams().deregisterMemory(handle);
            pd.forget(this);
        });
    }

    /** For a forced close of the device: deregisters, counting it closed whatever the provider says. */
    RuntimeException closeUnderDevice() {
        return Device.closeAnyway(guard, () -> pd.device().provider().datagrams().deregisterMemory(handle));
    }
}
