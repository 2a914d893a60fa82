package org.efaah.cache;

import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.spi.CreatedAh;
import org.efaah.verbs.Gid;
import org.efaah.verbs.HardwareAddressHandle;
import org.efaah.verbs.ProtectionDomain;

/**
 * One caller's reference to a cached AH, returned by {@link AddressHandleCache#acquire}. Many
 * handles share one hardware AH; when the last of them is closed it is destroyed (or kept a while,
 * per the cache's {@link RetentionPolicy}).
 *
 * <p>{@link #close()} is idempotent and thread-safe: it releases this handle's reference exactly
 * once. A closed handle, or one whose AH was destroyed because the cache was closed, refuses use
 * with {@link IllegalStateException}. The accessors are thread-safe.
 */
public final class AddressHandle implements AutoCloseable {
    private final AddressHandleCache cache;
    final Entry entry;
    private final LeakTracker.Watch leak;
    private volatile boolean closed; // set once, under this handle's monitor, held through the release

    AddressHandle(AddressHandleCache cache, Entry entry, LeakTracker.Watch leak) {
        this.cache = cache;
        this.entry = entry;
        this.leak = leak;
    }

    /**
     * The PD the AH belongs to. Thread-safe; works after close.
     *
     * @return the PD passed to the acquire
     */
    public ProtectionDomain pd() {
        return entry.pd;
    }

    /**
     * The attributes the hardware AH was created with. On EFA, where only the dgid defines an AH,
     * these are the canonical attributes of the dgid (port 1, sgid_index 0, other fields at their
     * defaults), whatever this or any other caller asked for in the fields EFA ignores.
     *
     * @return the immutable attributes of the hardware AH ({@code ibv_ah_attr}); works after close
     */
    public AddressHandleAttributes attributes() {
        return entry.attributes();
    }

    /**
     * The destination GID. Works after close.
     *
     * @return the AH's dgid (16 bytes, network order)
     */
    public Gid dgid() {
        return entry.dgid();
    }

    /**
     * The EFA AH number ({@code efadv_query_ah}, efadv.h), what a receiver sees as the sender's
     * address.
     *
     * @return the AHN, 0..65535, or {@link CreatedAh#NO_AHN} (-1) on a device without one
     *
     * @throws IllegalStateException if this handle is closed or its AH destroyed
     */
    public int ahn() {
        return hardware().ahn();
    }

    /**
     * The provider's handle for the AH (a {@code struct ibv_ah *} under the native provider), to
     * name the destination of a send.
     *
     * @return the opaque provider handle, valid while this handle is open
     *
     * @throws IllegalStateException if this handle is closed or its AH destroyed
     */
    public long nativeHandle() {
        return hardware().nativeHandle();
    }

    /**
     * The hardware AH, to post sends with ({@code UdQueuePair.postSend}). It belongs to the cache:
     * never destroy it; keep this handle (or a {@link #duplicate()}) open until the send completes.
     *
     * @return the hardware AH, not null
     *
     * @throws IllegalStateException if this handle is closed or its AH destroyed
     */
    public HardwareAddressHandle hardware() {
        if (closed) {
            throw new IllegalStateException("address handle to " + dgid() + " is closed");
        }
        HardwareAddressHandle hw = entry.hardware();
        // An invalidated AH stays LIVE for its handles until the last one closes.
        if (hw == null || hw.isDestroyed() || entry.state() != Entry.State.LIVE) {
            throw destroyed();
        }
        return hw;
    }

    private IllegalStateException destroyed() {
        return new IllegalStateException("the AH to " + dgid() + " was destroyed ("
                + (pd().device().isClosed() ? "its device " + pd().device().name() : "its cache") + " was closed)");
    }

    /**
     * A second, independent handle to the same AH (one more reference), without a cache look-up:
     * what an endpoint holds while a send using this AH is in flight, so that closing this handle
     * cannot destroy the AH under the device. Close it too.
     *
     * @return a new open handle to the same AH
     *
     * @throws IllegalStateException if this handle is closed or its AH destroyed
     */
    public AddressHandle duplicate() {
        hardware();
        if (!entry.retainHeld()) {
            throw destroyed();
        }
        return cache.adopt(entry);
    }

    /**
     * Whether {@link #close()} was called on this handle (not whether the AH still exists).
     *
     * @return true once this handle is closed
     */
    public boolean isClosed() {
        return closed;
    }

    /**
     * Releases this caller's reference; the AH is destroyed when it was the last. Idempotent: a
     * close while another thread's runs returns once that one has released.
     */
    @Override
    public void close() {
        // A monitor, not a compare-and-set of the flag: C2 removes the monitor of a handle that
        // never leaves the caller's compiled code (and then the handle itself), whereas an atomic
        // update of one of its fields keeps the object on the heap.
        // The release inside the monitor: a close while another thread's runs returns only once
        // that one released (and maybe destroyed) the AH. The cache takes no handle's monitor.
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            if (leak != null) {
                leak.close();
            }
            cache.release(entry);
        }
    }

    @Override
    public String toString() {
        HardwareAddressHandle hw = entry.hardware();
        return "AddressHandle[" + (hw == null ? "dgid=" + dgid() : hw.toString()) + (isClosed() ? ", closed" : "") + "]";
    }
}
