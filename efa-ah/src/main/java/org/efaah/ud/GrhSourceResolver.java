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
 * GRH from registered memory: a scratch slot, guarded by its own lock (held for the copy and the
 * call, never while waiting).
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
    public Datagram resolve(byte[] payload, byte[] area, WorkCompletion wc) {
        Gid source = (wc.wcFlags & WorkCompletion.FLAG_GRH) != 0 ? Grh.sourceGid(area) : null;
        return new Datagram(payload, source, source == null ? SourceOrigin.UNKNOWN : SourceOrigin.GRH,
                Datagram.NO_AHN, area, wc);
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
}
