package org.efaah.ud;

import org.efaah.cache.AddressHandle;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.WorkCompletion;

/**
 * How a device kind names the sender of a receive, and how a reply reaches it: chosen once when
 * an endpoint opens ({@link GrhSourceResolver} for InfiniBand and RoCE, {@link EfaSourceResolver}
 * for EFA), so that the endpoint has no per-device branches. Thread-safe.
 */
interface SourceResolver {

    /** The datagram for a successful receive completion {@code wc} (a private copy) and its 40-byte area. */
    Datagram resolve(byte[] payload, byte[] area, WorkCompletion wc);

    /** The attributes of an AH back to the sender of {@code datagram}. */
    AddressHandleAttributes replyAttributes(Datagram datagram);

    /** A handle, from the cache, to an AH back to the sender of {@code datagram}. */
    AddressHandle acquireReplyAh(Datagram datagram);
}
