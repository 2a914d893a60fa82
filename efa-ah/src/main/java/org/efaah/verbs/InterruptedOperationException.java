package org.efaah.verbs;

/**
 * A blocking call of efa-ah stopped waiting because its thread was interrupted: an
 * {@code AddressHandleCache} acquire waiting for another thread's create or destroy of the same AH,
 * or a {@code UdEndpoint} {@code receive}, {@code send} waiting for a free slot, or {@code flush}.
 * The message names the operation. Unchecked, so that signatures stay free of
 * {@link InterruptedException} (most calls never wait).
 *
 * <p>The thread's interrupt status is set again before this is thrown, so code above still sees
 * the interrupt. An interrupted acquire took no reference; an interrupted endpoint call sent or
 * received nothing after its wait began ({@code sendBatch} keeps the sends it posted before), and
 * the endpoint stays usable. The cause, where there is one, is
 * the {@link InterruptedException}.
 */
public final class InterruptedOperationException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * An interrupted wait of an operation.
     *
     * @param message the operation and what it waited for, e.g. {@code receive interrupted}
     * @param cause   the {@link InterruptedException} the wait threw, or null where the wait saw
     *                the interrupt status instead
     */
    public InterruptedOperationException(String message, InterruptedException cause) {
        super(message, cause);
    }
}
