package org.efaah.verbs;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A batch of send work requests laid out in native memory, for {@link UdQueuePair#postSends(
 * HardwareAddressHandle, int, long, MemoryRegion, SendRequests, int)}: request {@code i} is
 * {@code length} bytes at {@code offset} in a registered region, with its {@code wr_id}. Made once
 * and filled again for every post, so that a post copies no Java arrays in or out.
 * Not thread-safe: one owner fills and posts it.
 */
public final class SendRequests {
    /*
     * struct efa_ah_send_req of efa_ah_native.h, 16 bytes, native order:
     *   0: uint64_t wr_id   8: uint32_t offset   12: uint32_t length
     * The native provider hands the buffer to the stub as it is; others read it through the getters.
     */
    private static final int STRIDE = 16;
    private static final int OFFSET = 8;
    private static final int LENGTH = 12;

    private final ByteBuffer buffer;
    private final int capacity;

    private SendRequests(int capacity) {
        this.capacity = capacity;
        this.buffer = ByteBuffer.allocateDirect(capacity * STRIDE).order(ByteOrder.nativeOrder());
    }

    /**
     * A batch of room for {@code capacity} requests.
     *
     * @param capacity requests, 1..65536
     * @return the batch, every request 0
     * @throws IllegalArgumentException if {@code capacity} is out of range
     */
    public static SendRequests allocate(int capacity) {
        org.efaah.internal.Ranges.check("capacity", capacity, 1, 65536);
        return new SendRequests(capacity);
    }

    /** {@return how many requests the batch holds} */
    public int capacity() {
        return capacity;
    }

    /**
     * Sets request {@code i}.
     *
     * @param i      0..capacity-1
     * @param offset byte offset of the payload in the region, 0..
     * @param length payload bytes, 0..
     * @param wrId   the id its completion returns
     * @throws IndexOutOfBoundsException if {@code i} is out of range
     */
    public void set(int i, int offset, int length, long wrId) {
        int at = Math.multiplyExact(java.util.Objects.checkIndex(i, capacity), STRIDE);
        buffer.putLong(at, wrId);
        buffer.putInt(at + OFFSET, offset);
        buffer.putInt(at + LENGTH, length);
    }

    /**
     * {@return request {@code i}'s byte offset}
     *
     * @param i 0..capacity-1
     */
    public int offset(int i) {
        return buffer.getInt(java.util.Objects.checkIndex(i, capacity) * STRIDE + OFFSET);
    }

    /**
     * {@return request {@code i}'s length}
     *
     * @param i 0..capacity-1
     */
    public int length(int i) {
        return buffer.getInt(java.util.Objects.checkIndex(i, capacity) * STRIDE + LENGTH);
    }

    /**
     * {@return request {@code i}'s {@code wr_id}}
     *
     * @param i 0..capacity-1
     */
    public long wrId(int i) {
        return buffer.getLong(java.util.Objects.checkIndex(i, capacity) * STRIDE);
    }

    /**
     * The requests' memory, for a provider that passes it to native code as it is (the layout of
     * {@code struct efa_ah_send_req}); a duplicate's position and limit are its own, the bytes shared.
     *
     * @return the direct buffer, position 0
     */
    public ByteBuffer buffer() {
        return buffer;
    }
}
