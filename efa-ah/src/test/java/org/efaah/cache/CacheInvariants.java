package org.efaah.cache;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * After each test, for every cache a shared fixture made on the test's thread ({@link MockFixture},
 * {@link FaultyFixture}), what no test sees from outside: the cache's live entries equal its
 * mock's live AHs, and no DEAD or FAILED entry sits in a table or the detached set. One walk of
 * the tables per cache. The cache's reaper may be inside a round when the test ends (see
 * RetentionStressTest's settled check): a disagreement is looked at again for up to 2 s.
 */
final class CacheInvariants implements BeforeEachCallback, AfterEachCallback {
    private static final ThreadLocal<List<Tracked>> MADE = new ThreadLocal<>();

    private record Tracked(AddressHandleCache cache, MockVerbsProvider mock) {
    }

    /** Called by the fixtures: checked after the test, if the test's class has this extension. */
    static void track(AddressHandleCache cache, MockVerbsProvider mock) {
        List<Tracked> made = MADE.get();
        if (made != null) {
            made.add(new Tracked(cache, mock));
        }
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        MADE.set(new ArrayList<>());
    }

    @Override
    public void afterEach(ExtensionContext context) throws InterruptedException {
        List<Tracked> made = MADE.get();
        MADE.remove();
        if (made == null || context.getExecutionException().isPresent()) {
            return; // the test's own failure says more
        }
        List<String> violations = new ArrayList<>();
        for (Tracked t : made) {
            violations.addAll(settled(t));
        }
        if (!violations.isEmpty()) {
            throw new AssertionError("cache invariants after " + context.getDisplayName() + ": " + violations);
        }
    }

    private static List<String> settled(Tracked t) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
        List<String> found = check(t);
        while (!found.isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(1);
            found = check(t);
        }
        return found;
    }

    private static List<String> check(Tracked t) {
        List<String> found = new ArrayList<>();
        long live = t.cache.inspection().liveEntries();
        long onDevice = t.mock.counters().liveAhs();
        if (live != onDevice) {
            found.add("the cache counts " + live + " live entries, the mock holds " + onDevice + " AH(s)");
        }
        for (EntryTables.PdTable table : t.cache.tables.tables()) {
            for (Entry e : table.table().values()) {
                if (ended(e)) {
                    found.add(e.state() + " entry " + e.key + " in its table");
                }
            }
        }
        for (Entry e : t.cache.detached) {
            if (ended(e)) {
                found.add(e.state() + " entry " + e.key + " in the detached set");
            }
        }
        return found;
    }

    private static boolean ended(Entry e) {
        return e.state() == Entry.State.DEAD || e.state() == Entry.State.FAILED;
    }
}
