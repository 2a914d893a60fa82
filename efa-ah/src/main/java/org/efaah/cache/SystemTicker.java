package org.efaah.cache;

/** {@link Ticker#system()}: one object, so that the cache can tell it apart and read the clock once per create. */
enum SystemTicker implements Ticker {
    INSTANCE;

    @Override
    public long read() {
        return System.nanoTime();
    }
}
