package org.efaah.verbs;

import org.efaah.verbs.spi.CreatedAh;

/**
 * One AH that exists on the device ({@code struct ibv_ah}), made by
 * {@link ProtectionDomain#createAh}. Destroyed only by an explicit {@link #destroy()}: no garbage
 * collector action ever frees it.
 *
 * <p>Thread-safe: {@link #destroy()} runs at most once to success, after any send being posted
 * with this AH; a destroy that fails in the provider leaves the AH live (as rdma-core does) so it
 * can be retried. An AH obtained from an {@code AddressHandleCache} belongs to the cache: do not
 * destroy it yourself (every handle of its key would then refuse use).
 */
public final class HardwareAddressHandle extends UseCountGuard {
    // The guard is this object's own use count (a superclass, not a field): posts are its uses and
    // the destroy its close, so no send races the ibv_destroy_ah, at 4 bytes per AH instead of a
    // read-write lock's 140 or so; a million peers means a million of these.
    private final ProtectionDomain pd;
    private final long handle;
    private final int ahn;
    // On EFA an AH made with forEfa(dgid) (every one the cache makes there) is kept as its dgid
    // alone, 64 bytes less per AH at a million peers; attributes() rebuilds the rest.
    private final Object address;
    // The PD's list of its AHs, guarded by the PD.
    HardwareAddressHandle prevInPd;
    HardwareAddressHandle nextInPd;

    HardwareAddressHandle(ProtectionDomain pd, long handle, int ahn, AddressHandleAttributes attributes) {
        this.pd = pd;
        this.handle = handle;
        this.ahn = ahn;
        this.address = pd.device().isEfa() && attributes.isForEfa() ? attributes.dgid() : attributes;
    }

    /**
     * {@return the PD the AH was created in}
     */
    public ProtectionDomain pd() {
        return pd;
    }

    /**
     * The attributes it was created with; on EFA a new object equal to them for an AH made with
     * {@link AddressHandleAttributes#forEfa} (kept as its dgid alone).
     *
     * @return attributes equal to those passed to the create
     */
    public AddressHandleAttributes attributes() {
        return address instanceof Gid g ? AddressHandleAttributes.forEfa(g) : (AddressHandleAttributes) address;
    }

    /**
     * The destination GID, without building the attributes.
     *
     * @return the dgid it was created with (16 bytes, network order), or null for a non-global AH
     */
    public Gid dgid() {
        return address instanceof Gid g ? g : ((AddressHandleAttributes) address).dgid();
    }

    /** {@return the EFA AH number (0..65535), or {@link CreatedAh#NO_AHN} on a device without one} */
    public int ahn() {
        return ahn;
    }

    /**
     * Whether {@code ibv_destroy_ah} has succeeded for this AH, or its device was closed:
     * its handle must then not be used.
     *
     * @return true once the AH was destroyed (or freed with its device)
     */
    public boolean isDestroyed() {
        return isClosed();
    }

    /**
     * The provider's handle (the {@code struct ibv_ah *} for the native provider), for posting sends.
     *
     * @throws IllegalStateException once destroyed
     * @return the opaque handle passed to {@link org.efaah.verbs.spi.DatagramVerbs#postSend}
     */
    public long nativeHandle() {
        if (isClosed()) {
            throw new IllegalStateException("AH " + this + " is destroyed");
        }
        return handle;
    }

    long handleForProvider() {
        return handle;
    }

    /**
     * Destroys the AH ({@code ibv_destroy_ah(3)}).
     *
     * @throws IllegalStateException if it was already destroyed
     * @throws VerbsException        if the provider fails; the AH then still exists
     */
    public void destroy() {
        if (!destroyIfLive()) {
            throw new IllegalStateException("AH " + this + " is already destroyed");
        }
    }

    /** Destroys the AH unless already destroyed; returns whether this call destroyed it. */
    boolean destroyIfLive() {
        // PD lock before the AH's own, the order a forced device close takes them in.
        return pd.guard().get(() -> closeAfterUses(() -> pd.destroyAh(this)));
    }

    /**
     * For a forced close of the device: destroys the AH, counting it destroyed whatever the
     * provider says (the context's close frees it anyway). Returns the failure, or null.
     */
    RuntimeException destroyUnderDevice() {
        RuntimeException[] failure = {null};
        pd.guard().get(() -> closeAfterUses(() -> {
            try {
                pd.destroyAh(this);
            } catch (RuntimeException e) {
                failure[0] = e;
            }
        }));
        return failure[0];
    }

    /** The guard posts enter: this AH itself. */
    UseCountGuard guard() {
        return this;
    }

    @Override
    String describe() {
        return toString();
    }

    @Override
    public String toString() {
        return "AH[" + (ahn >= 0 ? "ahn=" + ahn + ", " : "") + "dgid=" + dgid() + "]";
    }
}
