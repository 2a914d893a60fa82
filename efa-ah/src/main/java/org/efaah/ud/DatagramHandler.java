package org.efaah.ud;

/**
 * Takes the datagrams of {@link UdEndpoint#poll(DatagramHandler, int)} and
 * {@link UdEndpoint#receive(DatagramHandler, int, long, java.util.concurrent.TimeUnit)} without a
 * copy: each is shown as a {@link DatagramView} over the endpoint's registered receive slot, the shape
 * of Aeron's {@code FragmentHandler} and Netty's pooled {@code ByteBuf} reads.
 *
 * <p><b>Lifetime.</b> The view and the buffer it returns are valid only during the call: the slot is
 * posted again for the next datagram once the handler returns, and the endpoint reuses the view. A
 * handler that keeps anything copies it ({@link DatagramView#copy()}, or the payload into its own
 * buffer). It runs on the receiving thread, with no lock of the endpoint held, so it may send and
 * reply; the slot it reads stays out of the ring until it returns, so a slow handler leaves fewer
 * receives posted.
 */
@FunctionalInterface
public interface DatagramHandler {

    /**
     * One received datagram.
     *
     * @param datagram the datagram, valid only until this call returns
     */
    void onDatagram(DatagramView datagram);
}
