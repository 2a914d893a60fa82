package org.efaah.bench;

import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Gid;

/** Destination attributes for the benchmarks: distinct link-local GIDs, as EFA peers have. */
final class Keys {
    private Keys() {
    }

    static AddressHandleAttributes key(long i) {
        return AddressHandleAttributes.forGid(Gid.of(0xfe80_0000_0000_0000L, 0x0a00_0000_0000_0000L + i));
    }

    static AddressHandleAttributes[] keys(int n) {
        AddressHandleAttributes[] keys = new AddressHandleAttributes[n];
        for (int i = 0; i < n; i++) {
            keys[i] = key(i);
        }
        return keys;
    }
}
