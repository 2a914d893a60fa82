package org.efaah.cache;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.efaah.health.HealthCheck;
import org.efaah.health.HealthReport;
import org.efaah.health.HealthStatus;
import org.efaah.health.HealthThresholds;
import org.efaah.verbs.Device;
import org.efaah.verbs.ProtectionDomain;

/**
 * A cache's health report: open; each device it holds AHs on ({@link Device#health}) and, on RoCE,
 * the network reader its AHs follow ({@link org.efaah.roce.RoceNetwork.Subscription#health()}); create
 * failures within the window, by errno; AHs whose destroy failed and that still exist; leaked
 * handles. Reads without taking any lock a hit or a create needs: the figures of a cache in use
 * are a moment's, not a snapshot.
 */
final class CacheHealth {
    private CacheHealth() {
    }

    static HealthReport check(AddressHandleCache cache, HealthThresholds t) {
        List<HealthCheck> checks = new ArrayList<>();
        if (cache.closed) {
            checks.add(new HealthCheck("cache_open", "", HealthStatus.DOWN, 0, -1, "the cache is closed"));
            return HealthReport.of(checks);
        }
        checks.add(new HealthCheck("cache_open", "", HealthStatus.UP, 1, -1,
                "open, " + cache.inspection().liveEntries() + " AH(s) on " + devices(cache).size() + " device(s)"));
        HealthReport report = HealthReport.of(checks);
        Set<Device> devices = devices(cache);
        List<HealthReport> deviceReports = new ArrayList<>();
        List<String> down = new ArrayList<>();
        for (Device d : devices) {
            HealthReport r = d.health(t);
            deviceReports.add(r);
            if (r.status() == HealthStatus.DOWN) {
                down.add(d.name());
            }
        }
        /*
         * A host has several NICs (4 EFA devices on a p4d, 32 on a p5): one fatal device is DOWN in its own
         * report (Device.health) but leaves the cache serving AHs on the others, so here its DOWN checks
         * count as DEGRADED, and the cache is DOWN only when every device is. devices_down says which.
         */
        boolean others = devices.size() > 1 && down.size() < devices.size();
        int i = 0;
        for (Device d : devices) {
            HealthReport r = deviceReports.get(i++);
            report = report.and(others && r.status() == HealthStatus.DOWN ? degraded(r, down.size(), devices.size()) : r);
            // The RoCE network reader the device's AHs follow (org.efaah.roce, which verbs does not know).
            report = report.and(HealthReport.of(cache.network.health(d).stream().toList()));
        }
        if (devices.size() > 1) {
            HealthStatus s = down.isEmpty() ? HealthStatus.UP : others ? HealthStatus.DEGRADED : HealthStatus.DOWN;
            report = report.and(HealthReport.of(List.of(new HealthCheck("devices_down", "", s, down.size(),
                    devices.size(), down.size() + " of " + devices.size() + " device(s) DOWN"
                    + (down.isEmpty() ? "" : " (" + String.join(", ", down) + ")")
                    + "; DEGRADED from 1, DOWN when all are"))));
        }
        List<HealthCheck> own = new ArrayList<>();
        long windowNanos = t.failureWindow().toNanos();
        Map<String, Long> failures = cache.events.recentFailures.byErrno(windowNanos);
        String window = text(t.failureWindow());
        if (failures.isEmpty()) {
            own.add(new HealthCheck("create_failures", "", HealthStatus.UP, 0, 0,
                    "no provider create failed in the last " + window + "; DEGRADED from 1"));
        }
        failures.forEach((errno, n) -> own.add(new HealthCheck("create_failures", errno, HealthStatus.DEGRADED, n, 0,
                n + " provider create(s) failed with " + errno + " in the last " + window + "; DEGRADED from 1")));
        long undestroyed = undestroyed(cache);
        own.add(new HealthCheck("undestroyed_ahs", "", undestroyed > 0 ? HealthStatus.DEGRADED : HealthStatus.UP,
                undestroyed, 0, undestroyed + " AH(s) whose ibv_destroy_ah failed still exist (retried); DEGRADED from 1"));
        // The leaks of the window, not of the cache's life: one forgotten close() must not fail a
        // DEGRADED probe for ever (HealthThresholds). Handles open at close do not count here: a
        // closed cache is DOWN.
        long leaks = cache.leaksWithin(t.leakWindow().toNanos());
        long total = cache.stats().leaksReported();
        own.add(new HealthCheck("leaked_handles", "", leaks > 0 ? HealthStatus.DEGRADED : HealthStatus.UP, leaks, 0,
                leaks + " handle(s) found garbage-collected without close() in the last " + text(t.leakWindow())
                        + " (" + total + " since the cache was made; entries name their AHs); DEGRADED from 1"));
        return report.and(HealthReport.of(own));
    }

    /** {@code r}, a DOWN device's report, with its DOWN checks DEGRADED for a cache that other devices still serve. */
    private static HealthReport degraded(HealthReport r, int down, int of) {
        List<HealthCheck> out = new ArrayList<>();
        for (HealthCheck c : r.checks()) {
            out.add(c.status() != HealthStatus.DOWN ? c : new HealthCheck(c.name(), c.subject(), HealthStatus.DEGRADED,
                    c.value(), c.limit(), c.message() + " (DOWN for the device; DEGRADED for the cache while "
                    + (of - down) + " of " + of + " devices are not)"));
        }
        return HealthReport.of(out);
    }

    private static String text(java.time.Duration d) {
        return d.toString().substring(2).toLowerCase(java.util.Locale.ROOT);
    }

    /** The devices of the PDs the cache has tables for (PDs deallocated with an empty table apart). */
    static Set<Device> devices(AddressHandleCache cache) {
        Set<Device> out = new LinkedHashSet<>();
        for (EntryTables.PdTable t : cache.tables.tables()) {
            if (!t.pd().isClosed() || !t.table().isEmpty()) {
                out.add(t.pd().device());
            }
        }
        return out;
    }

    private static long undestroyed(AddressHandleCache cache) {
        long n = 0;
        for (EntryTables.PdTable t : cache.tables.tables()) {
            for (Entry e : t.table().values()) {
                n += !e.isStale() && e.destroyFailed && e.state() == Entry.State.LIVE ? 1 : 0;
            }
        }
        for (Entry e : cache.tables.detached) { // each AH once: an entry still in its table was counted there
            n += e.isStale() && e.destroyFailed && e.state() == Entry.State.LIVE ? 1 : 0;
        }
        return n;
    }
}
