package org.efaah.ud;

import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Gid;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.WorkCompletion;

/**
 * EFA: a receive never carries a GRH, and the 40 bytes in front of the payload are not one.
 * {@code wc.slid} holds the AHN of this PD's own AH for the sender, looked up in the cache's
 * (PD, AHN) index (a hit, no device call); {@code 0xFFFF} means the PD has none, and the sender's
 * GID is then read from the completion ({@code efadv_wc_read_sgid}). Replies go through an AH
 * made from the GID alone, never through {@code ibv_init_ah_from_wc} (which yields a non-global
 * attribute set EFA refuses). The pattern of rdma-core's {@code efa_cq_fill_pfns} and libfabric's
 * {@code efa_av_reverse_lookup}.
 */
/*
 * A window remains: the AHN is looked up at poll, and an AH of this PD destroyed between the
 * datagram's arrival and the poll, its AHN given to another peer's new AH, credits the datagram to
 * that peer. Telling it would take a per-PD count of AHNs retired, read at the end of a poll that
 * emptied the CQ and again at the next: unchanged, every AHN polled in between is exact; changed,
 * a datagram named by AHN would be UNKNOWN (efadv_wc_read_sgid gives no GID for a known AHN,
 * -ENOENT). The count would cost nothing on the hit path (it moves on destroy), but the cache
 * offers no such method and this package may reach the cache through public methods only.
 */
final class EfaSourceResolver implements SourceResolver {
    private final ProtectionDomain pd;
    private final AddressHandleCache cache;
    private final int portNum;

    EfaSourceResolver(ProtectionDomain pd, AddressHandleCache cache, int portNum) {
        this.pd = pd;
        this.cache = cache;
        this.portNum = portNum;
    }

    @Override
    public void resolve(DatagramView view) {
        WorkCompletion wc = view.completion;
        if (wc.slid != WorkCompletion.EFA_UNKNOWN_AHN) {
            try (AddressHandle known = cache.acquireByAhn(pd, wc.slid)) {
                Gid gid = known == null ? null : known.dgid();
                view.source(gid, gid == null ? SourceOrigin.UNKNOWN : SourceOrigin.AHN, wc.slid);
            }
        } else if (wc.hasSourceGid) {
            view.source(Gid.of(wc.sourceGid.clone()), SourceOrigin.COMPLETION_GID, Datagram.NO_AHN);
        } else {
            view.source(null, SourceOrigin.UNKNOWN, Datagram.NO_AHN);
        }
    }

    @Override
    public AddressHandleAttributes replyAttributes(Datagram datagram) {
        return attributes(known(datagram.sourceGid(), datagram.sourceAhn()));
    }

    @Override
    public AddressHandleAttributes replyAttributes(DatagramView view) {
        return attributes(known(view.sourceGid(), view.sourceAhn()));
    }

    @Override
    public AddressHandle acquireReplyAh(Datagram datagram) {
        return acquire(datagram.sourceGid(), datagram.sourceAhn());
    }

    @Override
    public AddressHandle acquireReplyAh(DatagramView view) {
        return acquire(view.sourceGid(), view.sourceAhn());
    }

    private AddressHandleAttributes attributes(Gid gid) {
        return AddressHandleAttributes.builder().dgid(gid).portNum(portNum).build();
    }

    private AddressHandle acquire(Gid gid, int ahn) {
        if (ahn != Datagram.NO_AHN) {
            AddressHandle held = cache.acquireByAhn(pd, ahn);
            // The same AH as at receive time, unless it was destroyed since (its AHN may then be another's).
            if (held != null && held.dgid().equals(gid)) {
                return held;
            }
            if (held != null) {
                held.close();
            }
        }
        return cache.acquire(pd, attributes(known(gid, ahn)));
    }

    private static Gid known(Gid gid, int ahn) {
        if (gid == null) {
            throw new IllegalArgumentException("datagram: its sender is unknown (AHN " + ahn
                    + " is not in the cache, and the completion carried no GID): no reply is possible");
        }
        return gid;
    }
}
