package org.efaah.cache;

/**
 * Thrown by {@link AddressHandleCache#acquire} when the calling thread is interrupted while it
 * waits for another thread's create or destroy of the same AH. The acquire took no reference,
 * the thread's interrupt status is still set, and the cause is the {@link InterruptedException}.
 * Unchecked because {@code acquire} is: most calls never wait.
 */
public final class AcquireInterruptedException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    AcquireInterruptedException(String message, InterruptedException cause) {
        super(message, cause);
    }
}
