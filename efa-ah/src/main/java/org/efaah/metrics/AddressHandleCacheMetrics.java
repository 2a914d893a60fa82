package org.efaah.metrics;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.cache.CacheMeterBinder;
import java.util.concurrent.TimeUnit;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.RemovalCause;
import org.efaah.verbs.Errno;

/**
 * Micrometer meters for an {@link AddressHandleCache}, in the manner of Micrometer's
 * {@code CaffeineCacheMetrics}: the common {@code cache.*} meters ({@code cache.size} = live
 * entries, {@code cache.gets} with {@code result=hit|miss}, {@code cache.puts} = hardware creates,
 * {@code cache.evictions} = AHs destroyed to save resources), plus the AH-specific ones under
 * {@code efa_ah.*}. Every meter reads the cache's {@link AddressHandleCache#stats()} snapshot or
 * a cache query through a function, so binding costs the cache nothing per acquire. The cache is
 * held weakly: a collected cache's meters read NaN.
 *
 * <p>Micrometer is an optional dependency of efa-ah: this class is the only one that needs it.
 *
 * <pre>{@code
 * AddressHandleCacheMetrics.monitor(registry, cache, "main");
 * }</pre>
 */
public final class AddressHandleCacheMetrics extends CacheMeterBinder<AddressHandleCache> {

    /**
     * @param cache     the cache to observe (held weakly)
     * @param cacheName the {@code cache} tag's value
     * @param tags      more tags for every meter
     */
    public AddressHandleCacheMetrics(AddressHandleCache cache, String cacheName, Iterable<Tag> tags) {
        super(cache, cacheName, tags);
    }

    /**
     * Binds the meters of {@code cache} to {@code registry}; a convenience for
     * {@code new AddressHandleCacheMetrics(cache, cacheName, Tags.of(tags)).bindTo(registry)}.
     * Safe to call from any thread; binding the same cache twice under the same name and tags
     * returns the meters already registered (Micrometer's rule).
     *
     * @param registry  the registry to register the meters in
     * @param cache     the cache to observe (held weakly)
     * @param cacheName the {@code cache} tag's value
     * @param tags      more tags as key/value pairs ({@code "k1", "v1", "k2", "v2"})
     * @return {@code cache}, for chaining
     * @throws IllegalArgumentException if {@code tags} has an odd number of elements
     */
    public static AddressHandleCache monitor(MeterRegistry registry, AddressHandleCache cache, String cacheName,
                                             String... tags) {
        new AddressHandleCacheMetrics(cache, cacheName, Tags.of(tags)).bindTo(registry);
        return cache;
    }

    @Override
    protected Long size() {
        AddressHandleCache c = getCache();
        return c == null ? null : c.liveEntries();
    }

    @Override
    protected long hitCount() {
        AddressHandleCache c = getCache();
        return c == null ? 0 : c.stats().hits();
    }

    @Override
    protected Long missCount() {
        AddressHandleCache c = getCache();
        return c == null ? null : c.stats().misses();
    }

    @Override
    protected Long evictionCount() {
        AddressHandleCache c = getCache();
        return c == null ? null : c.stats().evictions();
    }

    @Override
    protected long putCount() {
        AddressHandleCache c = getCache();
        return c == null ? 0 : c.stats().hardwareCreates();
    }

    @Override
    protected void bindImplementationSpecificMetrics(MeterRegistry registry) {
        AddressHandleCache cache = getCache();
        if (cache == null) {
            return;
        }
        Iterable<Tag> tags = getTagsWithCacheName();
        counter(registry, cache, "efa_ah.creates", "AHs created through the provider (ibv_create_ah)", tags,
                c -> c.stats().hardwareCreates());
        for (RemovalCause cause : RemovalCause.values()) {
            counter(registry, cache, "efa_ah.destroys", "AHs destroyed through the provider (ibv_destroy_ah), by cause",
                    Tags.concat(tags, "cause", cause.name()), c -> c.stats().destroysBy(cause));
        }
        for (Errno errno : Errno.values()) {
            counter(registry, cache, "efa_ah.create.failures", "provider creates that failed, by errno",
                    Tags.concat(tags, "errno", errno.name()), c -> c.stats().createFailures(errno));
        }
        counter(registry, cache, "efa_ah.destroy.failures", "provider destroys that failed (the AH is kept and retried)",
                tags, c -> c.stats().destroyFailures());
        counter(registry, cache, "efa_ah.retained", "last closes that kept their AH", tags, c -> c.stats().retained());
        counter(registry, cache, "efa_ah.revived", "acquires that took back a kept AH (creates saved)", tags,
                c -> c.stats().revived());
        counter(registry, cache, "efa_ah.invalidated", "entries invalidated", tags, c -> c.stats().invalidated());
        counter(registry, cache, "efa_ah.leaks", "handles leaked (collected unclosed, or open at cache close)", tags,
                c -> c.stats().leaksReported());
        FunctionCounter.builder("efa_ah.create.time", cache, c -> c.stats().totalCreateNanos() / 1e9)
                .tags(tags).description("time spent in successful provider creates").baseUnit("seconds")
                .register(registry);
        Gauge.builder("efa_ah.create.time.max", cache,
                        c -> (double) c.stats().maxCreateNanos() / TimeUnit.SECONDS.toNanos(1))
                .tags(tags).description("the longest successful provider create").baseUnit("seconds").register(registry);
        Gauge.builder("efa_ah.handles", cache, AddressHandleCache::liveHandles).tags(tags)
                .description("handles acquired and not yet closed").register(registry);
        Gauge.builder("efa_ah.retained.entries", cache, AddressHandleCache::retainedEntries).tags(tags)
                .description("unreferenced AHs kept now").register(registry);
    }

    private static void counter(MeterRegistry registry, AddressHandleCache cache, String name, String description,
                                Iterable<Tag> tags, java.util.function.ToDoubleFunction<AddressHandleCache> f) {
        FunctionCounter.builder(name, cache, f).tags(tags).description(description).register(registry);
    }
}
