package org.efaah.metrics;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.binder.cache.CacheMeterBinder;
import io.micrometer.core.instrument.distribution.TimeWindowMax;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.AddressHandleCacheListener;
import org.efaah.cache.RemovalCause;
import org.efaah.verbs.Errno;

/**
 * Micrometer meters for an {@link AddressHandleCache}, named as Micrometer's
 * {@code CaffeineCacheMetrics} names them where they apply: {@code cache.size} (live entries),
 * {@code cache.gets} ({@code result=hit|miss}), {@code cache.puts} (hardware creates),
 * {@code cache.evictions} (AHs destroyed to save resources), {@code cache.load}
 * ({@code result=success|failure}: provider creates) and {@code cache.load.duration} (time spent
 * in successful provider creates); plus the AH-specific ones under {@code efa_ah.*}: destroys by
 * cause, create failures by errno (a series appears the first time its errno occurs), the
 * longest create of the last one to two minutes ({@code efa_ah.create.time.max}, a Micrometer
 * {@link TimeWindowMax} of two buffers rotated every minute, so it decays), handles, retained entries and the health status
 * ({@code efa_ah.health}: 0 up, 1 degraded, 2 down; see {@link org.efaah.cache.CacheInspection#health()}).
 *
 * <p>Meters read the cache's {@link AddressHandleCache#stats()} snapshot or a cache query through
 * a function, so they cost the cache nothing per acquire; the binder listens to creates (never to
 * hits) for the time-window maximum and the errno series. The cache is held weakly: a collected
 * cache's meters read NaN. <b>When the cache closes</b>, every meter this binder registered is
 * removed from the registry, so binding a new cache under the same name and tags then shows the
 * new cache (without the removal Micrometer would hand back the closed cache's meters). A closed
 * cache registers nothing.
 *
 * <p>Micrometer is an optional dependency of efa-ah: this package is the only one that needs it.
 * Thread-safe.
 *
 * <pre>{@code
 * AddressHandleCacheMetrics.monitor(registry, cache, "main");
 * }</pre>
 */
public final class AddressHandleCacheMetrics extends CacheMeterBinder<AddressHandleCache> {
    private static final long MAX_ROTATE_MILLIS = 60_000;

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
     * Safe to call from any thread; binding the same open cache twice under the same name and
     * tags returns the meters already registered (Micrometer's rule).
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
        return c == null ? null : c.inspection().liveEntries();
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
        Binding binding = new Binding(registry, getTagsWithCacheName());
        binding.adoptCommonMeters();
        cache.inspection().addListener(binding);
        binding.registerAll(cache);
        if (cache.isClosed()) {
            // Closed before or while binding: its close may not have seen the listener.
            binding.closed();
        }
    }

    /** The meters of one bind to one registry, removed together when the cache closes. */
    private final class Binding implements AddressHandleCacheListener {
        private final MeterRegistry registry;
        private final Iterable<Tag> tags;
        private final TimeWindowMax createTimeMax;
        private final List<Meter> meters = new ArrayList<>();
        private final Set<Errno> errnos = EnumSet.noneOf(Errno.class);
        private boolean removed;

        Binding(MeterRegistry registry, Iterable<Tag> tags) {
            this.registry = registry;
            this.tags = tags;
            // Two buffers rotated every minute: a create is remembered for one to two minutes.
            this.createTimeMax = new TimeWindowMax(registry.config().clock(), MAX_ROTATE_MILLIS, 2);
        }

        /** The meters {@link CacheMeterBinder#bindTo} registered before calling us, with exactly our tags. */
        void adoptCommonMeters() {
            Set<Tag> own = new HashSet<>();
            tags.forEach(own::add);
            for (String name : List.of("cache.size", "cache.gets", "cache.puts", "cache.evictions")) {
                for (Meter m : registry.find(name).tags(tags).meters()) {
                    Set<Tag> theirs = new HashSet<>(m.getId().getTags());
                    theirs.removeIf(t -> t.getKey().equals("result"));
                    if (theirs.equals(own)) {
                        meters.add(m);
                    }
                }
            }
        }

        synchronized void registerAll(AddressHandleCache cache) {
            if (removed) {
                return; // the cache closed while binding
            }
            counter(cache, "cache.load", "provider creates (ibv_create_ah) that succeeded or failed",
                    Tags.concat(tags, "result", "success"), c -> c.stats().hardwareCreates());
            counter(cache, "cache.load", "provider creates (ibv_create_ah) that succeeded or failed",
                    Tags.concat(tags, "result", "failure"), c -> c.stats().createFailures());
            meters.add(TimeGauge.builder("cache.load.duration", cache, TimeUnit.NANOSECONDS,
                            c -> c.stats().totalCreateNanos())
                    .tags(tags).description("time spent in successful provider creates").register(registry));
            counter(cache, "efa_ah.creates", "AHs created through the provider (ibv_create_ah)", tags,
                    c -> c.stats().hardwareCreates());
            for (RemovalCause cause : RemovalCause.values()) {
                counter(cache, "efa_ah.destroys", "AHs destroyed through the provider (ibv_destroy_ah), by cause",
                        Tags.concat(tags, "cause", cause.name()), c -> c.stats().destroysBy(cause));
            }
            for (Errno errno : cache.stats().createFailuresByErrno().keySet()) {
                registerErrno(cache, errno);
            }
            counter(cache, "efa_ah.destroy.failures", "provider destroys that failed (the AH is kept and retried)",
                    tags, c -> c.stats().destroyFailures());
            counter(cache, "efa_ah.retained", "last closes that kept their AH", tags, c -> c.stats().retained());
            counter(cache, "efa_ah.revived", "acquires that took back a kept AH (creates saved)", tags,
                    c -> c.stats().revived());
            counter(cache, "efa_ah.invalidated", "entries invalidated", tags, c -> c.stats().invalidated());
            counter(cache, "efa_ah.leaks", "handles leaked (collected unclosed, or open at cache close)", tags,
                    c -> c.stats().leaksReported());
            meters.add(TimeGauge.builder("efa_ah.create.time.max", createTimeMax, TimeUnit.SECONDS,
                            m -> m.poll(TimeUnit.SECONDS))
                    .tags(tags).description("the longest successful provider create of the last 1 to 2 minutes")
                    .register(registry));
            meters.add(Gauge.builder("efa_ah.handles", cache, c -> c.inspection().liveHandles()).tags(tags)
                    .description("handles acquired and not yet closed").register(registry));
            meters.add(Gauge.builder("efa_ah.health", cache, c -> c.inspection().health().status().ordinal()).tags(tags)
                    .description("the cache's health: 0 UP, 1 DEGRADED, 2 DOWN (see CacheInspection.health())")
                    .register(registry));
            meters.add(Gauge.builder("efa_ah.retained.entries", cache, c -> c.inspection().retainedEntries()).tags(tags)
                    .description("unreferenced AHs kept now").register(registry));
        }

        private void registerErrno(AddressHandleCache cache, Errno errno) {
            if (!removed && errnos.add(errno)) {
                counter(cache, "efa_ah.create.failures", "provider creates that failed, by errno",
                        Tags.concat(tags, "errno", errno.name()), c -> c.stats().createFailures(errno));
            }
        }

        private void counter(AddressHandleCache cache, String name, String description, Iterable<Tag> meterTags,
                             ToDoubleFunction<AddressHandleCache> f) {
            meters.add(FunctionCounter.builder(name, cache, f).tags(meterTags).description(description)
                    .register(registry));
        }

        @Override
        public void created(long nanos) {
            createTimeMax.record(nanos, TimeUnit.NANOSECONDS);
        }

        @Override
        public synchronized void createFailed(Errno errno, long nanos) {
            AddressHandleCache cache = getCache();
            if (cache != null) {
                registerErrno(cache, errno == null ? Errno.UNKNOWN : errno);
            }
        }

        @Override
        public synchronized void closed() {
            if (removed) {
                return;
            }
            removed = true;
            for (Meter m : meters) {
                registry.remove(m);
            }
            meters.clear();
        }
    }
}
