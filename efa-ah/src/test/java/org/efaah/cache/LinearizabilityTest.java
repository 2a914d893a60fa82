package org.efaah.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.mock.DuplicatePolicy;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;

/**
 * Linearizability of acquire, close and use on a few keys, checked against a sequential model of
 * the cache over the mock device (per key: a hardware AH exists iff its reference count is
 * positive; a create takes the lowest free AHN of the device, as the mock does).
 *
 * <p>Each history is a few seeded random operations per thread, run for real on three threads,
 * with invocation and response times. A history passes when some order of its operations that
 * respects real time (an operation that returned before another started comes first) gives, in
 * the model, every result the threads saw, and ends in the device state the mock is in (the
 * same live AHNs, the same number of hardware creates). The search is Wing and Gong's, with the
 * states already explored remembered. Faults are left to {@link FaultInjectionTest}: here the
 * model is deterministic, so every AHN observed must be explained.
 */
class LinearizabilityTest {

    private static final int THREADS = 3;
    private static final int OPS_PER_THREAD = 5;
    private static final int HISTORIES = 1500;
    /** On a loaded machine fewer histories are checked rather than overrunning the CI budget. */
    private static final long BUDGET_NANOS = TimeUnit.SECONDS.toNanos(25);
    private static final int MIN_HISTORIES = 300;
    private static final int ISE = -2;

    enum Kind { ACQUIRE, CLOSE, USE }

    /** One operation: handle is the id of the handle acquired (ACQUIRE) or acted on. */
    record Op(int thread, Kind kind, int key, int handle, long invoked, long returned, int result) {
    }

    @Test
    void randomHistoriesOnFewKeysAreLinearizable() throws Exception {
        long start = System.nanoTime();
        long concurrentPairs = 0;
        int checked = 0;
        for (int h = 0; h < HISTORIES && (h < MIN_HISTORIES || System.nanoTime() - start < BUDGET_NANOS); h++) {
            long seed = 0x5eed_0000L + h;
            History history = runHistory(seed);
            String verdict = history.check();
            if (verdict != null) {
                fail("history of seed " + seed + " is not linearizable: " + verdict + "\n" + history);
            }
            concurrentPairs += history.overlappingPairs();
            checked++;
        }
        // A checker that only ever saw sequential histories would prove little.
        assertTrue(concurrentPairs > checked, "operations overlapped " + concurrentPairs + " times in " + checked);
    }

    @Test
    void theCheckerRejectsWhatNoSequentialOrderExplains() {
        // Two acquires of one key, the second after the first returned and with its handle still
        // open, may not see two different AHs.
        List<Op> twoAhs = List.of(
                new Op(0, Kind.ACQUIRE, 0, 0, 0, 10, 0),
                new Op(1, Kind.ACQUIRE, 0, 1, 20, 30, 1));
        assertFalse(new History(twoAhs, new int[] {0, 1}, 2).check() == null);
        // Using a handle after its own close returned must fail.
        List<Op> useAfterClose = List.of(
                new Op(0, Kind.ACQUIRE, 0, 0, 0, 10, 0),
                new Op(0, Kind.CLOSE, 0, 0, 20, 30, 0),
                new Op(0, Kind.USE, 0, 0, 40, 50, 0));
        assertFalse(new History(useAfterClose, new int[0], 1).check() == null);
        // The device must end as the model does: an AH left behind is caught.
        List<Op> leaked = List.of(
                new Op(0, Kind.ACQUIRE, 0, 0, 0, 10, 0),
                new Op(0, Kind.CLOSE, 0, 0, 20, 30, 0));
        assertFalse(new History(leaked, new int[] {0}, 1).check() == null);
        // Overlapping operations may be ordered either way: this one is explained by close first.
        List<Op> reordered = List.of(
                new Op(0, Kind.ACQUIRE, 0, 0, 0, 10, 0),
                new Op(0, Kind.CLOSE, 0, 0, 20, 60, 0),
                new Op(1, Kind.ACQUIRE, 1, 1, 30, 50, 0));
        assertEquals(null, new History(reordered, new int[] {0}, 2).check());
    }

    private static History runHistory(long seed) throws Exception {
        SplittableRandom random = new SplittableRandom(seed);
        long[] latencies = {0, 0, 2_000, 20_000};
        DuplicatePolicy[] policies = DuplicatePolicy.values();
        MockConfig config = MockFixture.strictDevice()
                .maxAh(64)
                .duplicatePolicy(policies[random.nextInt(policies.length)])
                .createLatencyNanos(latencies[random.nextInt(latencies.length)])
                .destroyLatencyNanos(latencies[random.nextInt(latencies.length)])
                .build();
        MockVerbsProvider mock = new MockVerbsProvider(config);
        try (Device device = Device.openFirst(mock)) {
            ProtectionDomain[] pds = {device.allocatePd(), device.allocatePd()};
            // Two or three keys: a GID on one PD, the same GID on the other PD, another GID.
            int keyCount = 2 + random.nextInt(2);
            ProtectionDomain[] keyPd = {pds[0], pds[1], pds[0]};
            AddressHandleAttributes[] keyAttributes = {AddressHandleAttributes.forGid("fe80::1"),
                    AddressHandleAttributes.forGid("fe80::1"), AddressHandleAttributes.forGid("fe80::2")};
            AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED).build();
            Op[][] ops = new Op[THREADS][OPS_PER_THREAD];
            List<List<AddressHandle>> held = new ArrayList<>();
            CyclicBarrier go = new CyclicBarrier(THREADS);
            Throwable[] crashed = new Throwable[THREADS];
            Thread[] threads = new Thread[THREADS];
            for (int t = 0; t < THREADS; t++) {
                int thread = t;
                SplittableRandom own = random.split();
                List<AddressHandle> handles = new ArrayList<>();
                held.add(handles);
                threads[t] = new Thread(() -> {
                    try {
                        go.await(10, TimeUnit.SECONDS);
                        runThread(thread, own, cache, keyPd, keyAttributes, keyCount, ops[thread], handles);
                    } catch (Throwable e) {
                        crashed[thread] = e;
                    }
                }, "lin-" + t);
                threads[t].start();
            }
            for (Thread t : threads) {
                t.join(TimeUnit.SECONDS.toMillis(20));
                assertFalse(t.isAlive(), t.getName() + " is stuck");
            }
            for (Throwable c : crashed) {
                if (c != null) {
                    throw new AssertionError("a thread failed in history of seed " + seed, c);
                }
            }
            int[] liveAhns = mock.liveAhns(0);
            long creates = mock.counters().hardwareCreates();
            List<Op> all = new ArrayList<>();
            for (Op[] perThread : ops) {
                all.addAll(Arrays.asList(perThread));
            }
            for (List<AddressHandle> handles : held) {
                for (AddressHandle h : handles) {
                    if (h != null) {
                        h.close();
                    }
                }
            }
            assertEquals(0, mock.counters().liveAhs(), "the last closes destroyed every AH");
            assertEquals(mock.counters().hardwareCreates(), mock.counters().hardwareDestroys());
            assertEquals(mock.counters().hardwareDestroys(), mock.counters().destroyCalls(), "nothing destroyed twice");
            assertEquals(0, cache.inspection().liveHandles());
            cache.close();
            assertEquals(0, cache.stats().leaksReported());
            for (ProtectionDomain pd : pds) {
                pd.close();
            }
            return new History(all, liveAhns, creates);
        }
    }

    private static void runThread(int thread, SplittableRandom random, AddressHandleCache cache,
                                  ProtectionDomain[] keyPd, AddressHandleAttributes[] keyAttributes, int keyCount,
                                  Op[] out, List<AddressHandle> handles) {
        List<Integer> handleKeys = new ArrayList<>();
        for (int i = 0; i < out.length; i++) {
            spin(random.nextInt(3_000));
            int choice = handles.isEmpty() ? 0 : random.nextInt(3);
            if (choice == 0) {
                int key = random.nextInt(keyCount);
                int id = thread * 100 + handles.size();
                long invoked = System.nanoTime();
                int result;
                AddressHandle h = null;
                try {
                    h = cache.acquire(keyPd[key], keyAttributes[key]);
                    result = h.ahn();
                } catch (VerbsException e) {
                    result = -100 - e.errnoValue();
                }
                long returned = System.nanoTime();
                out[i] = new Op(thread, Kind.ACQUIRE, key, id, invoked, returned, result);
                // A failed acquire leaves a placeholder so that ids stay positional.
                handles.add(h);
                handleKeys.add(key);
            } else {
                int index = random.nextInt(handles.size());
                AddressHandle h = handles.get(index);
                int id = thread * 100 + index;
                Kind kind = choice == 1 ? Kind.CLOSE : Kind.USE;
                long invoked = System.nanoTime();
                int result = 0;
                if (h != null) {
                    if (kind == Kind.CLOSE) {
                        h.close();
                    } else {
                        try {
                            result = h.ahn();
                        } catch (IllegalStateException e) {
                            result = ISE;
                        }
                    }
                }
                long returned = System.nanoTime();
                out[i] = new Op(thread, kind, handleKeys.get(index), id, invoked, returned, result);
            }
        }
    }

    private static void spin(long nanos) {
        long until = System.nanoTime() + nanos;
        while (System.nanoTime() < until) {
            Thread.onSpinWait();
        }
    }

    /** A recorded history, the device state it ended in, and the linearizability check. */
    static final class History {
        final Op[] ops;
        final int[] finalAhns;
        final long finalCreates;
        private final Set<String> explored = new HashSet<>();

        History(List<Op> ops, int[] finalAhns, long finalCreates) {
            this.ops = ops.toArray(new Op[0]);
            this.finalAhns = finalAhns;
            this.finalCreates = finalCreates;
        }

        long overlappingPairs() {
            long n = 0;
            for (int i = 0; i < ops.length; i++) {
                for (int j = i + 1; j < ops.length; j++) {
                    if (ops[i].thread != ops[j].thread && ops[i].invoked < ops[j].returned
                            && ops[j].invoked < ops[i].returned) {
                        n++;
                    }
                }
            }
            return n;
        }

        /** Null when linearizable, else why not. */
        String check() {
            explored.clear();
            return search(new BitSet(), new Model()) ? null : "no sequential order explains the results";
        }

        private boolean search(BitSet done, Model model) {
            if (done.cardinality() == ops.length) {
                return Arrays.equals(model.liveAhns(), finalAhns) && model.creates == finalCreates;
            }
            if (!explored.add(done + "|" + model)) {
                return false;
            }
            long firstReturn = Long.MAX_VALUE;
            for (int i = done.nextClearBit(0); i < ops.length; i = done.nextClearBit(i + 1)) {
                firstReturn = Math.min(firstReturn, ops[i].returned);
            }
            for (int i = done.nextClearBit(0); i < ops.length; i = done.nextClearBit(i + 1)) {
                Op op = ops[i];
                // Only an operation that started before every pending one returned can go next;
                // and a thread's own operations stay in program order (they never overlap anyway).
                if (op.invoked > firstReturn || !previousOfThreadDone(done, op)) {
                    continue;
                }
                Model next = model.copy();
                if (next.apply(op) == op.result) {
                    done.set(i);
                    boolean ok = search(done, next);
                    done.clear(i);
                    if (ok) {
                        return true;
                    }
                }
            }
            return false;
        }

        private boolean previousOfThreadDone(BitSet done, Op op) {
            for (int j = 0; j < ops.length; j++) {
                if (!done.get(j) && ops[j].thread == op.thread && ops[j].invoked < op.invoked) {
                    return false;
                }
            }
            return true;
        }

        @Override
        public String toString() {
            StringBuilder sb = new StringBuilder();
            Op[] sorted = ops.clone();
            Arrays.sort(sorted, (a, b) -> Long.compare(a.invoked, b.invoked));
            long t0 = sorted.length == 0 ? 0 : sorted[0].invoked;
            for (Op op : sorted) {
                sb.append(String.format("  t%d %-7s key=%d handle=%d [%d..%d] -> %d%n", op.thread, op.kind, op.key,
                        op.handle, op.invoked - t0, op.returned - t0, op.result));
            }
            sb.append("  device ends with AHNs ").append(Arrays.toString(finalAhns)).append(" after ")
                    .append(finalCreates).append(" creates");
            return sb.toString();
        }
    }

    /** The sequential cache over a device that hands out the lowest free AHN. */
    static final class Model {
        int[] refs = new int[4];
        int[] ahn = {-1, -1, -1, -1};
        BitSet deviceAhns = new BitSet();
        // handle id -> key + 1 while open, -(key + 1) once closed
        java.util.TreeMap<Integer, Integer> handles = new java.util.TreeMap<>();
        long creates;

        Model copy() {
            Model m = new Model();
            m.refs = refs.clone();
            m.ahn = ahn.clone();
            m.deviceAhns = (BitSet) deviceAhns.clone();
            m.handles = new java.util.TreeMap<>(handles);
            m.creates = creates;
            return m;
        }

        int apply(Op op) {
            switch (op.kind) {
                case ACQUIRE: {
                    int k = op.key;
                    if (refs[k] == 0) {
                        ahn[k] = deviceAhns.nextClearBit(0);
                        deviceAhns.set(ahn[k]);
                        creates++;
                    }
                    refs[k]++;
                    handles.put(op.handle, k + 1);
                    return ahn[k];
                }
                case CLOSE: {
                    Integer state = handles.get(op.handle);
                    if (state != null && state > 0) {
                        int k = state - 1;
                        handles.put(op.handle, -state);
                        if (--refs[k] == 0) {
                            deviceAhns.clear(ahn[k]);
                            ahn[k] = -1;
                        }
                    }
                    return 0;
                }
                default: {
                    Integer state = handles.get(op.handle);
                    if (state == null) {
                        return 0; // the acquire failed: the thread had no handle to use
                    }
                    return state > 0 ? ahn[state - 1] : ISE;
                }
            }
        }

        int[] liveAhns() {
            return deviceAhns.stream().toArray();
        }

        @Override
        public String toString() {
            return Arrays.toString(refs) + Arrays.toString(ahn) + handles + creates;
        }
    }
}
