package org.efaah.cache;

import java.util.Objects;
import org.efaah.verbs.Gid;
import org.efaah.verbs.ProtectionDomain;

/**
 * One entry of an {@link AddressHandleCache} as {@link CacheInspection#entries} saw it: the
 * AH's key and numbers, who holds it and for how long. Each row is consistent in itself (the
 * reference count and the invalidation mark come from one read of the entry's count); rows of
 * one listing are taken one after the other, not at one instant. Immutable.
 *
 * @param device        the device's name, e.g. {@code efa_0}
 * @param pd            the PD's id, as {@link #pdId(ProtectionDomain)} gives it
 * @param dgid          the destination GID ({@code ibv_ah_attr.grh.dgid}); null for an AH without GRH
 * @param portNum       {@code port_num}
 * @param sgidIndex     {@code sgid_index}
 * @param ahn           the AH number read with {@code efadv_query_ah} when the AH was created, on
 *                      EFA; -1 where the device has none
 * @param references    handles open on it now
 * @param state         {@code CREATING} (its create in progress) or {@code LIVE}
 * @param ageNanos      time since its create completed, ns (0 while creating)
 * @param idleNanos     time since its last handle closed, ns, for an AH kept unreferenced by the
 *                      retention policy; 0 while referenced
 * @param invalidated   whether it was invalidated: it goes with its last handle; no acquire gets
 *                      it again, except on EFA, where a held AH stays the one of its GID
 * @param destroyFailed whether an {@code ibv_destroy_ah} of it failed (it still exists and is retried)
 * @param leaks         its handles that leak detection found garbage-collected without {@code close()}
 *                      (each keeps a reference, so the AH stays until the cache closes); only tracked
 *                      handles are found ({@link LeakDetection}), so 0 is no proof of none
 */
public record AddressHandleEntry(String device, String pd, Gid dgid, int portNum, int sgidIndex, int ahn,
                                 int references, String state, long ageNanos, long idleNanos, boolean invalidated,
                                 boolean destroyFailed, int leaks) {

    /**
     * Checks the fields.
     *
     * @param device        the device's name
     * @param pd            the PD's id
     * @param dgid          the destination GID, or null
     * @param portNum       port_num
     * @param sgidIndex     sgid_index
     * @param ahn           the AHN, or -1
     * @param references    handles open on it
     * @param state         CREATING or LIVE
     * @param ageNanos      since its create, ns
     * @param idleNanos     since its last handle closed while kept, ns
     * @param invalidated   whether it was invalidated
     * @param destroyFailed whether a destroy of it failed
     * @param leaks         its handles found leaked, 0 or more
     * @throws NullPointerException     if {@code device}, {@code pd} or {@code state} is null
     * @throws IllegalArgumentException if {@code leaks} is negative
     */
    public AddressHandleEntry {
        Objects.requireNonNull(device, "device");
        Objects.requireNonNull(pd, "pd");
        Objects.requireNonNull(state, "state");
        if (leaks < 0) {
            throw new IllegalArgumentException("leaks: " + leaks + " is out of range; valid 0 or more");
        }
    }

    /**
     * An entry with no leaked handle: the constructor before {@code leaks} was added.
     *
     * @param device        the device's name
     * @param pd            the PD's id
     * @param dgid          the destination GID, or null
     * @param portNum       port_num
     * @param sgidIndex     sgid_index
     * @param ahn           the AHN, or -1
     * @param references    handles open on it
     * @param state         CREATING or LIVE
     * @param ageNanos      since its create, ns
     * @param idleNanos     since its last handle closed while kept, ns
     * @param invalidated   whether it was invalidated
     * @param destroyFailed whether a destroy of it failed
     * @throws NullPointerException if {@code device}, {@code pd} or {@code state} is null
     */
    public AddressHandleEntry(String device, String pd, Gid dgid, int portNum, int sgidIndex, int ahn,
                              int references, String state, long ageNanos, long idleNanos, boolean invalidated,
                              boolean destroyFailed) {
        this(device, pd, dgid, portNum, sgidIndex, ahn, references, state, ageNanos, idleNanos, invalidated,
                destroyFailed, 0);
    }

    /**
     * The id a listing gives a PD: {@code pd@} and its identity hash in hex (the PD's native
     * address is reused after {@code ibv_dealloc_pd}, so it is not shown). Stable for the PD's life.
     *
     * @param pd the PD
     * @return e.g. {@code pd@1b6d3586}
     */
    public static String pdId(ProtectionDomain pd) {
        return "pd@" + Integer.toHexString(System.identityHashCode(pd));
    }

    /*
     * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
     * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
     * NoObjectMethodsTest). Same meaning and format as the generated ones.
     */
    @Override
    public boolean equals(Object o) {
        return o == this || o instanceof AddressHandleEntry that && Objects.equals(that.device, device)
                && Objects.equals(that.pd, pd) && Objects.equals(that.dgid, dgid) && that.portNum == portNum
                && that.sgidIndex == sgidIndex && that.ahn == ahn && that.references == references
                && Objects.equals(that.state, state) && that.ageNanos == ageNanos && that.idleNanos == idleNanos
                && that.invalidated == invalidated && that.destroyFailed == destroyFailed && that.leaks == leaks;
    }

    @Override
    public int hashCode() {
        int h = Objects.hashCode(device);
        h = 31 * h + Objects.hashCode(pd);
        h = 31 * h + Objects.hashCode(dgid);
        h = 31 * h + portNum;
        h = 31 * h + sgidIndex;
        h = 31 * h + ahn;
        h = 31 * h + references;
        h = 31 * h + Objects.hashCode(state);
        h = 31 * h + Long.hashCode(ageNanos);
        h = 31 * h + Long.hashCode(idleNanos);
        h = 31 * h + Boolean.hashCode(invalidated);
        h = 31 * h + Boolean.hashCode(destroyFailed);
        h = 31 * h + leaks;
        return h;
    }

    @Override
    public String toString() {
        return new StringBuilder("AddressHandleEntry[device=").append(device).append(", pd=").append(pd)
                .append(", dgid=").append(dgid).append(", portNum=").append(portNum)
                .append(", sgidIndex=").append(sgidIndex).append(", ahn=").append(ahn)
                .append(", references=").append(references).append(", state=").append(state)
                .append(", ageNanos=").append(ageNanos).append(", idleNanos=").append(idleNanos)
                .append(", invalidated=").append(invalidated).append(", destroyFailed=").append(destroyFailed)
                .append(", leaks=").append(leaks).append(']').toString();
    }
}
