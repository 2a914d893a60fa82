package org.efaah.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.efaah.fixture.LogCapture;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.DeviceEvent;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.mock.MockConfig;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 22 case 1 and its kind: {@code close()} racing whatever moves entries out of their
 * tables (an invalidation by call, or by a device event on the event thread) destroys every AH.
 * Before the fix, close copied the detached set and then the tables, and an entry moved between
 * the two copies was in neither: its AH stayed on the device, its handle kept working, and the PD
 * refused to deallocate.
 *
 * <p>The interleaving is forced: a first PD's table is large, so close takes a while to copy it
 * (or, when the invalidation moved it first, the detached set); the invalidation is held, spinning,
 * in the provider's destroy of the first entry of the second PD's table (an unreferenced one), and
 * let go just before close, so that it moves the second table's entries while close copies.
 */
@ExtendWith(CacheInvariants.class)
class CloseDrainTest {
    private static final int FIRST = 6_000;
    private static final int SECOND = 1_500;
    private static final int ROUNDS = 3;

    /** RoCE (a held AH moves to the detached set) and EFA (a held AH stays in its table). */
    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void closeRacingAnInvalidationByCallLeavesNoAhAlive(boolean efa) throws Exception {
        for (int round = 0; round < ROUNDS; round++) {
            race(efa, round, (f, second) -> f.cache.invalidate(second));
        }
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void closeRacingAPortEventOnTheEventThreadLeavesNoAhAlive(boolean efa) throws Exception {
        for (int round = 0; round < ROUNDS; round++) {
            race(efa, round, (f, second) -> f.provider.mock.raiseEvent(f.device.name(), DeviceEvent.Kind.PORT_ERR, 1));
        }
    }

    private static void race(boolean efa, int round, java.util.function.BiConsumer<FaultyFixture, ProtectionDomain> invalidation)
            throws Exception {
        MockConfig config = MockFixture.strictDevice().efa(efa).maxAh(2 * (FIRST + SECOND)).build();
        FaultyFixture f = new FaultyFixture(config, AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED)
                .retention(RetentionPolicy.idle(Duration.ofHours(1), FIRST + SECOND)));
        try (LogCapture log = LogCapture.of(AddressHandleCache.class, Device.class)) {
            ProtectionDomain other = f.device.allocatePd();
            List<AddressHandle> pinned = List.of(f.cache.acquire(f.pd, MockFixture.peer(1)),
                    f.cache.acquire(other, MockFixture.peer(1)));
            // The PDs in the order the cache's tables are walked (fixed once both are there): the
            // one walked first gets the large table.
            List<ProtectionDomain> order = new ArrayList<>(f.cache.tables.tables().stream().map(EntryTables.PdTable::pd).toList());
            assertEquals(2, order.size());
            ProtectionDomain first = order.get(0);
            ProtectionDomain second = order.get(1);
            List<AddressHandle> held = new ArrayList<>();
            List<AddressHandle> secondHandles = new ArrayList<>();
            for (int i = 1; i < FIRST; i++) {
                held.add(f.cache.acquire(first, MockFixture.peer(i + 1)));
            }
            for (int i = 1; i < SECOND; i++) {
                secondHandles.add(f.cache.acquire(second, MockFixture.peer(i + 1)));
            }
            held.add(pinned.get(first == f.pd ? 0 : 1));
            secondHandles.add(pinned.get(first == f.pd ? 1 : 0));
            List<AddressHandle> onOther = secondHandles;
            Entry pivot = f.cache.tables.tableIfPresent(second).values().iterator().next();
            AddressHandle pivotHandle = secondHandles.stream().filter(h -> h.entry == pivot).findFirst().orElseThrow();
            secondHandles.remove(pivotHandle);
            pivotHandle.close(); // retained: its invalidation calls the provider, where it is held

            AtomicInteger phase = new AtomicInteger(); // 0 not yet, 1 held in the destroy, 2 let go
            Thread[] invalidatingThread = {null};
            f.provider.onDestroy = h -> {
                if (phase.compareAndSet(0, 1)) {
                    invalidatingThread[0] = Thread.currentThread();
                    while (phase.get() == 1) {
                        Thread.onSpinWait();
                    }
                }
            };
            Thread invalidator = new Thread(() -> invalidation.accept(f, second), "invalidator");
            invalidator.start();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (phase.get() == 0 && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            assertEquals(1, phase.get(), "the invalidation reached the pivot's destroy");
            phase.set(2);
            f.cache.close();
            invalidator.join(10_000);
            long alive = f.provider.mock.counters().liveAhs();
            assertEquals(0, alive, (efa ? "EFA" : "RoCE") + " round " + round + ": " + alive + " of "
                    + (FIRST + SECOND) + " AHs alive after close() returned");
            assertEquals(FIRST + SECOND - 1, f.cache.stats().leaksReported(), "every held handle counted as a leak");
            for (List<AddressHandle> handles : List.of(held, onOther)) {
                for (AddressHandle h : handles) {
                    if (h != pivotHandle) {
                        assertThrows(IllegalStateException.class, h::nativeHandle, "a handle refuses use after close");
                        h.close();
                    }
                }
            }
            assertEquals(0, f.cache.inspection().liveEntries());
            assertEquals(0, f.cache.inspection().retainedEntries());
            other.close(); // no EBUSY: no AH of the cache is left in either PD
            f.pd.close();
            assertTrue(log.messages(ch.qos.logback.classic.Level.WARN).stream().allMatch(m -> m.contains("LEAK")),
                    log.messages(ch.qos.logback.classic.Level.WARN).toString());
        } finally {
            f.device.close();
        }
    }
}
