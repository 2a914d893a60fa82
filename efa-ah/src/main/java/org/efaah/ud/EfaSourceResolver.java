package org.efaah.ud;

import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Gid;
import org.efaah.verbs.InterruptedOperationException;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.WorkCompletion;

/**
 * EFA: a receive never carries a GRH, and the 40 bytes in front of the payload are not one.
 * {@code wc.slid} holds the AHN of this PD's own AH for the sender as the device found it when the
 * datagram arrived ({@code efa_process_cqe} copies it from the completion descriptor), looked up
 * in the cache's (PD, AHN) index (a hit, no device call); {@code 0xFFFF} means the PD had none,
 * and the sender's GID is then read from the completion ({@code efadv_wc_read_sgid}). Replies go
 * through an AH made from the GID alone, never through {@code ibv_init_ah_from_wc} (which yields
 * a non-global attribute set EFA refuses). The pattern of rdma-core's {@code efa_cq_fill_pfns} and
 * libfabric's {@code efa_av_reverse_lookup}.
 */
/*
 * The sender as it was at arrival. The AHN is written by the device at arrival and looked up at
 * poll: an AH of this PD destroyed in between, its AHN then given to another peer's new AH, would
 * credit the datagram to that peer. The look-up therefore passes a mark of AHN reuses
 * (ProtectionDomain.ahnMark) read before the datagram arrived (ArrivalMarks): the cache answers
 * only if no create in the PD (by the cache or anyone else) returned that AHN since, and a
 * datagram it does not answer for is UNKNOWN: its sender was the destroyed
 * AH's peer or the new one's, and the completion cannot say which (efa_wc_read_sgid answers
 * -ENOENT for a slid that named an AH). Exact both ways (AhnIndex's note): no datagram is
 * credited to the wrong AH, and one whose AHN was not given again since the mark is credited as
 * before. The price is an UNKNOWN for a datagram whose AHN was given again between a mark and its
 * arrival, which only an AH destroyed while its peer still sends can cause, and only until the
 * mark moves on: ReceiveSlots empties the CQ at every call and looks each datagram up as it leaves
 * the CQ, so the mark is the one read at the receiver's call before, however long its backlog.
 * libfabric's RDM protocol tells such datagrams apart by a connection ID its packets carry
 * (efa_av_reverse_lookup_rdm); a datagram here carries the caller's bytes alone.
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
    public void resolve(DatagramView view, long arrivalMark) {
        WorkCompletion wc = view.completion;
        Gid gid = sourceGid(wc, arrivalMark);
        view.source(gid, origin(wc, gid), sourceAhn(wc));
    }

    @Override
    public void resolve(Datagram datagram, long arrivalMark) {
        WorkCompletion wc = datagram.completion();
        Gid gid = sourceGid(wc, arrivalMark);
        datagram.source(gid, origin(wc, gid), sourceAhn(wc));
    }

    private Gid sourceGid(WorkCompletion wc, long arrivalMark) {
        if (wc.slid != WorkCompletion.EFA_UNKNOWN_AHN) {
            try (AddressHandle known = acquireAtArrival(wc.slid, arrivalMark)) {
                return known == null ? null : known.dgid();
            }
        }
        return wc.hasSourceGid ? Gid.of(wc.sourceGid.clone()) : null;
    }

    private static SourceOrigin origin(WorkCompletion wc, Gid gid) {
        if (gid == null) {
            return SourceOrigin.UNKNOWN;
        }
        return wc.slid != WorkCompletion.EFA_UNKNOWN_AHN ? SourceOrigin.AHN : SourceOrigin.COMPLETION_GID;
    }

    private static int sourceAhn(WorkCompletion wc) {
        return wc.slid != WorkCompletion.EFA_UNKNOWN_AHN ? wc.slid : Datagram.NO_AHN;
    }

    /*
     * Asked of a datagram already taken from the CQ, so an interrupt may not end this look-up (the
     * answer is kept, and must not depend on the asker's interrupt status): its only wait is for
     * another thread's create or destroy of that one AH (one provider call). The interrupt status
     * is set again for the caller's next wait.
     */
    private AddressHandle acquireAtArrival(int ahn, long arrivalMark) {
        boolean interrupted = false;
        try {
            for (;;) {
                try {
                    return cache.acquireByAhn(pd, ahn, arrivalMark);
                } catch (IllegalStateException e) {
                    if (cache.isClosed() || pd.isClosed()) {
                        // The cache closed before this endpoint (against UdEndpoint.open's rule),
                        // or a copied datagram is asked after its PD closed: no AHN is vouched
                        // for any more, and the datagram, already off the CQ, reads UNKNOWN
                        // rather than throwing.
                        return null;
                    }
                    throw e;
                } catch (InterruptedOperationException e) {
                    Thread.interrupted(); // cleared for the retry's wait, set again below
                    interrupted = true;
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public long reuseMarkNow() {
        return cache.ahnReuseMark();
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
            AddressHandle held = cache.acquireByAhn(pd, ahn, cache.ahnReuseMark());
            // The AH with that AHN now: the one the sender was credited to, unless that was destroyed
            // since (its AHN may then be another's, whose GID differs).
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
            throw new IllegalArgumentException("datagram: its sender is unknown ("
                    + (ahn == Datagram.NO_AHN ? "no AHN" : "AHN " + ahn + " named no AH the cache could vouch"
                    + " for: none held it, or it was given to a new AH after the datagram's arrival")
                    + ", and the completion carried no GID): no reply is possible");
        }
        return gid;
    }
}
