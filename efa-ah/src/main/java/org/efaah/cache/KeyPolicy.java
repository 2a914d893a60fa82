package org.efaah.cache;

import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.Gid;

/*
 * How one device's AHs are keyed, created and invalidated: chosen once per device (KeyPolicy.of),
 * as rdma-core's efa_cq_fill_pfns chooses a CQ's functions once, instead of a branch on isEfa()
 * at each use. The cache keeps the policy with the PD's table and the entry with its key, so the
 * hit reads it from a final field and makes one call, monomorphic in a program whose devices are
 * all of one kind (inlined behind a class check, where isEfa() was a boolean test).
 *
 *  - EFA: the key is the dgid. The kernel's efa_create_ah uses the dgid alone and the device holds
 *    one AH per (PD, GID), so an AH is created with forEfa(dgid), the caller's other fields (an
 *    unresolved sgid_index included) never matter, and an invalidation dooms the entry instead of
 *    marking it stale (the held AH stays the one every acquire gets: Invalidator).
 *  - Any other device: the key is the attributes, resolved (sgid_index filled in for a global AH),
 *    and an invalidation marks the entry stale.
 */
abstract class KeyPolicy {
    private static final KeyPolicy EFA = new ByDgid();
    private static final KeyPolicy ATTRIBUTES = new ByAttributes();

    /*
     * The hit's key is the one rule read on every acquire: a final method on a final field, not
     * an override, so that the hit makes no call and no class check (an override there cost the
     * hit about 1 ns of 12 in HitPathBench). The other rules run on misses only.
     */
    private final boolean byDgid;

    private KeyPolicy(boolean byDgid) {
        this.byDgid = byDgid;
    }

    /** The one place the cache asks which kind a device is. */
    static KeyPolicy of(Device device) {
        return device.isEfa() ? EFA : ATTRIBUTES;
    }

    /**
     * The hit's key: of attributes the device validated, when no resolving is needed (the dgid on
     * EFA; elsewhere attributes that name their sgid_index, or a non-global AH); else null (the
     * caller resolves, {@link #checked}).
     */
    final Object plainKey(AddressHandleAttributes validated) {
        if (byDgid) {
            return validated.dgid();
        }
        return validated.hasSgidIndex() || !validated.isGlobal() ? validated : null;
    }

    /** Checks attributes not validated yet, resolving them where the key needs it; returns what {@link #key} takes. */
    abstract AddressHandleAttributes checked(Device device, AddressHandleAttributes attributes);

    /** The key of attributes {@link #checked} (or of validated ones with a {@link #plainKey}). */
    abstract Object key(AddressHandleAttributes checked);

    /** What the AH of {@code key} is created with; {@code checked} are the caller's attributes, {@link #checked} or validated. */
    abstract AddressHandleAttributes createWith(Device device, AddressHandleAttributes checked);

    /** Whether an invalidation (not a fatal or closing device's) marks an entry stale; false: it dooms it. */
    abstract boolean invalidationMarksStale();

    // The entry's attributes, read back from its key.

    abstract AddressHandleAttributes attributes(Object key);

    /** The destination GID, or null for a non-global AH. */
    abstract Gid dgid(Object key);

    abstract int portNum(Object key);

    private static final class ByDgid extends KeyPolicy {
        ByDgid() {
            super(true);
        }

        @Override
        AddressHandleAttributes checked(Device device, AddressHandleAttributes attributes) {
            // Resolving would only fill in sgid_index 0, which the key and forEfa ignore: checking
            // the caller's own object is enough, and marked so, its next acquire is a plain hit
            // (an allocation less per miss of new attributes).
            device.validate(attributes);
            return attributes;
        }

        @Override
        Object key(AddressHandleAttributes checked) {
            return checked.dgid();
        }

        @Override
        AddressHandleAttributes createWith(Device device, AddressHandleAttributes checked) {
            return checked.isForEfa() ? checked : AddressHandleAttributes.forEfa(checked.dgid());
        }

        @Override
        boolean invalidationMarksStale() {
            return false;
        }

        @Override
        AddressHandleAttributes attributes(Object key) {
            return AddressHandleAttributes.forEfa((Gid) key);
        }

        @Override
        Gid dgid(Object key) {
            return (Gid) key;
        }

        @Override
        int portNum(Object key) {
            return 1; // EFA has one port
        }
    }

    private static final class ByAttributes extends KeyPolicy {
        ByAttributes() {
            super(false);
        }

        @Override
        AddressHandleAttributes checked(Device device, AddressHandleAttributes attributes) {
            AddressHandleAttributes resolved = device.resolve(attributes);
            device.validate(resolved);
            return resolved;
        }

        @Override
        Object key(AddressHandleAttributes checked) {
            return checked;
        }

        @Override
        AddressHandleAttributes createWith(Device device, AddressHandleAttributes checked) {
            return device.resolve(checked);
        }

        @Override
        boolean invalidationMarksStale() {
            return true;
        }

        @Override
        AddressHandleAttributes attributes(Object key) {
            return (AddressHandleAttributes) key;
        }

        @Override
        Gid dgid(Object key) {
            return ((AddressHandleAttributes) key).dgid();
        }

        @Override
        int portNum(Object key) {
            return ((AddressHandleAttributes) key).portNum();
        }
    }
}
