package org.efaah.cache;

import java.util.concurrent.atomic.AtomicLong;
import org.efaah.fixture.FaultyProvider;
import org.efaah.verbs.Device;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;

/** A {@link FaultyProvider} over a mock, its device and PD, and a cache; closed in that order; checked after the test by {@link CacheInvariants}. */
final class FaultyFixture implements AutoCloseable {
    final FaultyProvider provider;
    final Device device;
    final ProtectionDomain pd;
    final AddressHandleCache cache;
    /** The fake clock of caches built with {@link #withRetention}. */
    final AtomicLong now = new AtomicLong(1_000_000_000L);

    FaultyFixture() {
        this(MockFixture.strictDevice().build(), AddressHandleCache.builder().leakDetection(LeakDetection.PARANOID));
    }

    FaultyFixture(MockConfig config, AddressHandleCache.Builder builder) {
        provider = new FaultyProvider(new MockVerbsProvider(config));
        device = Device.openFirst(provider);
        pd = device.allocatePd();
        cache = builder.ticker(now::get).build();
        CacheInvariants.track(cache, provider.mock);
    }

    /** A cache keeping unreferenced AHs {@code idleSeconds} of fake time, at most {@code max}. */
    static FaultyFixture withRetention(MockConfig config, long idleSeconds, int max) {
        return new FaultyFixture(config, AddressHandleCache.builder().leakDetection(LeakDetection.PARANOID)
                .retention(RetentionPolicy.idle(java.time.Duration.ofSeconds(idleSeconds), max)));
    }

    static FaultyFixture withRetention(long idleSeconds, int max) {
        return withRetention(MockFixture.strictDevice().build(), idleSeconds, max);
    }

    void advanceSeconds(long seconds) {
        now.addAndGet(seconds * 1_000_000_000L);
    }

    @Override
    public void close() {
        cache.close();
        pd.close();
        device.close();
    }
}
