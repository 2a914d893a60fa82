package org.efaah.ud;

import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.verbs.AddressHandleAttributes;

/**
 * How a device kind names the sender of a receive, and how a reply reaches it: chosen once when
 * an endpoint opens ({@link GrhSourceResolver} for InfiniBand and RoCE, {@link EfaSourceResolver}
 * for EFA), so that the endpoint has no per-device branches. Thread-safe.
 */
interface SourceResolver {

    /**
     * Names the sender of the successful receive a lent view shows ({@link DatagramView#source}),
     * when the view is first asked. {@code arrivalMark}: on EFA, a value of the cache's
     * {@link AddressHandleCache#ahnReuseMark()} read before this datagram arrived
     * ({@link ArrivalMarks}); 0, older than any, when none is known. Unused elsewhere.
     */
    void resolve(DatagramView view, long arrivalMark);

    /** As {@link #resolve(DatagramView, long)}, for a datagram copied out before its sender was asked ({@link Datagram#source}). */
    void resolve(Datagram datagram, long arrivalMark);

    /** The mark read before each poll of the receive CQ ({@link ArrivalMarks}): EFA's AHN reuse mark; else 0. */
    long reuseMarkNow();

    /** The attributes of an AH back to the sender of {@code datagram}. */
    AddressHandleAttributes replyAttributes(Datagram datagram);

    /** A handle, from the cache, to an AH back to the sender of {@code datagram}. */
    AddressHandle acquireReplyAh(Datagram datagram);

    /** The attributes of an AH back to the sender of a lent view's datagram. */
    AddressHandleAttributes replyAttributes(DatagramView view);

    /** A handle, from the cache, to an AH back to the sender of a lent view's datagram. */
    AddressHandle acquireReplyAh(DatagramView view);
}
