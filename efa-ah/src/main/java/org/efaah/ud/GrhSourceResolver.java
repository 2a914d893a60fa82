package org.efaah.ud;

import java.util.concurrent.locks.ReentrantLock;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.Gid;
import org.efaah.verbs.Grh;
import org.efaah.verbs.MemoryRegion;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.WorkCompletion;

/**
 * InfiniBand, RoCE and rxe: the sender is in the GRH, read only when {@code IBV_WC_GRH} is set
 * and told apart (IPv6 GRH or RoCE v2 IPv4 header) by {@link Grh#version}, the decision
 * libibverbs makes; a reply's attributes come from {@code ibv_init_ah_from_wc}, which reads the
 * GRH from registered memory: in place in a lent receive slot, or for a {@link Datagram} copied
 * into a scratch slot, guarded by its own lock (held for the copy and the call, never while waiting).
 */
final class GrhSourceResolver implements SourceResolver {
    private final Device device;
    private final ProtectionDomain pd;
    private final AddressHandleCache cache;
    private final int portNum;
    private final MemoryRegion scratch;
    private final int scratchOffset;
    private final ReentrantLock scratchLock = new ReentrantLock();

    GrhSourceResolver(ProtectionDomain pd, AddressHandleCache cache, int portNum, MemoryRegion scratch,
                      int scratchOffset) {
        this.device = pd.device();
        this.pd = pd;
        this.cache = cache;
        this.portNum = portNum;
        this.scratch = scratch;
        this.scratchOffset = scratchOffset;
    }

    @Override
    public void resolve(DatagramView view, long arrivalMark) {
        Gid source = (view.completion.wcFlags & WorkCompletion.FLAG_GRH) != 0 ? Grh.sourceGid(view.area()) : null;
        view.source(source, source == null ? SourceOrigin.UNKNOWN : SourceOrigin.GRH, Datagram.NO_AHN);
    }

    @Override
    public void resolve(Datagram datagram, long arrivalMark) {
        Gid source = (datagram.completion().wcFlags & WorkCompletion.FLAG_GRH) != 0 ? Grh.sourceGid(datagram.grh()) : null;
        datagram.source(source, source == null ? SourceOrigin.UNKNOWN : SourceOrigin.GRH, Datagram.NO_AHN);
    }

    /** The GRH names the sender whenever it is read: no mark needed. */
    @Override
    public long reuseMarkNow() {
        return 0;
    }

    @Override
    public AddressHandleAttributes replyAttributes(Datagram datagram) {
        scratchLock.lock();
        try {
            scratch.buffer().put(scratchOffset, datagram.grh());
            return device.initAhFromWc(portNum, datagram.completion(), scratch, scratchOffset);
        } finally {
            scratchLock.unlock();
        }
    }

    @Override
    public AddressHandle acquireReplyAh(Datagram datagram) {
        return cache.acquire(pd, replyAttributes(datagram));
    }

    /** The GRH is still in place in the lent slot, which nothing else writes: no scratch copy. */
    @Override
    public AddressHandleAttributes replyAttributes(DatagramView view) {
        if (view.slot < 0) {
            return replyAttributes(view.copy());
        }
        return device.initAhFromWc(portNum, view.completion, scratch, view.offset);
    }

    @Override
    public AddressHandle acquireReplyAh(DatagramView view) {
        return cache.acquire(pd, replyAttributes(view));
    }
}
