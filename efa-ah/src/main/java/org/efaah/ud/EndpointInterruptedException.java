package org.efaah.ud;

/**
 * A blocking call of a {@link UdEndpoint} ({@code receive}, {@code send} waiting for a free slot,
 * {@code flush}) stopped because its thread was interrupted. Unchecked, so that the endpoint's
 * signatures stay free of {@link InterruptedException}; the thread's interrupt flag is set again
 * before it is thrown, so code above still sees the interrupt. Nothing was sent or received by
 * the interrupted call; the endpoint stays usable.
 */
public final class EndpointInterruptedException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    EndpointInterruptedException(String operation) {
        super(operation + " interrupted");
    }
}
