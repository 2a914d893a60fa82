package org.efaah.ud;

/**
 * Whether an endpoint has closed past its drain, after which no call may use its QP or its slots.
 * The endpoint sets it; its parts read it (a step refuses to start, a wait stops), so that none of
 * them needs the endpoint itself. Any thread, no lock.
 */
final class CloseFlag {
    private volatile boolean closed;

    /** Past the drain: every later {@link #checkOpen()} throws. */
    void set() {
        closed = true;
    }

    boolean isClosed() {
        return closed;
    }

    /** @throws IllegalStateException once {@link #set()} */
    void checkOpen() {
        if (closed) {
            throw new IllegalStateException("UD endpoint is closed");
        }
    }
}
