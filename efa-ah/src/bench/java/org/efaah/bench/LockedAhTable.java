package org.efaah.bench;

import java.util.HashMap;
import java.util.Map;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.HardwareAddressHandle;
import org.efaah.verbs.ProtectionDomain;

/**
 * The baseline every figure is compared with: the AH cache design of libfabric's EFA provider
 * and UCX, one lock around a hash map of refcounted AH entries. Acquire locks, gets or creates,
 * counts, unlocks; release locks, uncounts, destroys at zero, unlocks. Create and destroy run
 * under the lock, as they do there, so a slow device call stalls every other caller.
 *
 * <p>It does the same per-call work as {@code AddressHandleCache} apart from the concurrency
 * design: the same validation and the same key (the dgid on EFA), over the same
 * {@link ProtectionDomain}. Like those C implementations it hands out the shared entry itself,
 * so unlike efa-ah it allocates nothing per acquire and cannot tell a double release from two.
 */
final class LockedAhTable {
    static final class Slot {
        final ProtectionDomain pd;
        final Object key;
        final HardwareAddressHandle hardware;
        int refs; // guarded by the table's monitor

        Slot(ProtectionDomain pd, Object key, HardwareAddressHandle hardware) {
            this.pd = pd;
            this.key = key;
            this.hardware = hardware;
        }
    }

    // Per PD, as libfabric keeps a map per domain; with one PD this is one lock over one map.
    private final Map<ProtectionDomain, Map<Object, Slot>> tables = new HashMap<>();

    Slot acquire(ProtectionDomain pd, AddressHandleAttributes attributes) {
        Device device = pd.device();
        device.validate(attributes);
        Object key = device.isEfa() ? attributes.dgid() : attributes;
        synchronized (this) {
            Map<Object, Slot> table = tables.computeIfAbsent(pd, p -> new HashMap<>());
            Slot s = table.get(key);
            if (s == null) {
                s = new Slot(pd, key, pd.createAh(attributes));
                table.put(key, s);
            }
            s.refs++;
            return s;
        }
    }

    synchronized void release(Slot s) {
        if (--s.refs == 0) {
            s.hardware.destroy();
            tables.get(s.pd).remove(s.key);
        }
    }

    synchronized int size() {
        return tables.values().stream().mapToInt(Map::size).sum();
    }
}
