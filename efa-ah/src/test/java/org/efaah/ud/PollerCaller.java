package org.efaah.ud;

import java.util.function.Consumer;

/**
 * An application of its own class loader, run by {@link ChannelPollerLifetimeTest}: on a thread of
 * its own (its protection domain in the access control context that thread inherits, its loader
 * the context loader, one of its objects in an inheritable thread local), it runs the wait that
 * starts the library's poller thread.
 */
public final class PollerCaller implements Consumer<Runnable> {
    private static final InheritableThreadLocal<Object> MINE = new InheritableThreadLocal<>();

    @Override
    public void accept(Runnable wait) {
        Thread t = new Thread(() -> {
            MINE.set(this);
            try {
                wait.run();
            } finally {
                MINE.remove();
            }
        }, "poller-caller");
        t.setContextClassLoader(PollerCaller.class.getClassLoader());
        MINE.set(this); // inherited by t
        try {
            t.start();
        } finally {
            MINE.remove();
        }
        try {
            t.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
