package org.efaah.ud;

/**
 * How a part tells the one that composes it that it has just left state no completion event will
 * announce (a send queued for a resend, a recovery begun, datagrams kept for the next caller): a
 * wait asleep on a CQ's channel is to wake and step again. The part does not know who waits; the
 * endpoint wires each part to the waits it concerns. Any thread, no lock held by the callee.
 */
@FunctionalInterface
interface Waker {
    void wake();
}
