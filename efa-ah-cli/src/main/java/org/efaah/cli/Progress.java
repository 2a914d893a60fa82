package org.efaah.cli;

import java.io.PrintWriter;
import java.util.function.Supplier;

/**
 * One progress line on standard error every few seconds while a long run goes on; silent with
 * {@code --quiet}. The line comes from a supplier that reads the run's counters.
 */
final class Progress implements AutoCloseable {
    private final Thread thread;

    private Progress(Thread thread) {
        this.thread = thread;
    }

    static Progress start(PrintWriter err, OutputOptions output, long intervalMillis, Supplier<String> line) {
        if (output.quiet) {
            return new Progress(null);
        }
        long start = System.nanoTime();
        Thread t = new Thread(() -> {
            try {
                for (;;) {
                    Thread.sleep(intervalMillis);
                    err.printf("[%6.1f s] %s%n", (System.nanoTime() - start) / 1e9, line.get());
                    err.flush();
                }
            } catch (InterruptedException e) {
                // closed
            }
        }, "efa-ah-progress");
        t.setDaemon(true);
        t.start();
        return new Progress(t);
    }

    @Override
    public void close() {
        if (thread != null) {
            thread.interrupt();
            try {
                thread.join(1000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
