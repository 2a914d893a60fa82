package org.efaah.roce;

import org.efaah.verbs.Device;
import org.efaah.verbs.spi.VerbsProvider;
import java.util.concurrent.TimeUnit;

/** What tests of other packages may ask of a provider's network watcher. */
public final class NetworkWatchers {
    private NetworkWatchers() {
    }

    /**
     * Waits until the watcher of {@code provider} runs and has read the link and neighbour tables,
     * so that what a test changes next is judged against them.
     *
     * @throws AssertionError if that does not happen within {@code seconds}
     */
    public static void awaitTablesRead(VerbsProvider provider, long seconds) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (System.nanoTime() - deadline < 0) {
            NetworkWatcher w = NetworkWatcher.of(provider);
            if (w != null && w.tablesRead()) {
                return;
            }
            TimeUnit.MILLISECONDS.sleep(2);
        }
        throw new AssertionError("the network watcher of " + provider + " had not read its tables after " + seconds + " s");
    }

    /** Whether a network reader thread of {@code provider} runs now. */
    public static boolean running(VerbsProvider provider) {
        NetworkWatcher w = NetworkWatcher.of(provider);
        return w != null && w.running();
    }

    /** Whether {@code device} is subscribed to its provider's network reader. */
    public static boolean watches(Device device) {
        return NetworkWatcher.watches(device);
    }
}
