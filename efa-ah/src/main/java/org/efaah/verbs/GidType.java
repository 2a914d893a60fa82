package org.efaah.verbs;

/**
 * The type of a GID table entry: {@code enum ibv_gid_type} as {@code ibv_query_gid_ex(3)} reports
 * it in {@code struct ibv_gid_entry}. On a RoCE port every address has a RoCE v1 entry (link
 * layer framing) and a RoCE v2 entry (UDP/IP, routable); InfiniBand and EFA entries are
 * {@link #IB}.
 */
public enum GidType {
    /** InfiniBand, or EFA: the GID is the port's address. */
    IB(0),
    /** RoCE v1: Ethernet framing, not routable across IP subnets. */
    ROCE_V1(1),
    /** RoCE v2: UDP/IP framing (port 4791), routable. */
    ROCE_V2(2);

    private final int value;

    GidType(int value) {
        this.value = value;
    }

    /**
     * The {@code IBV_GID_TYPE_*} number.
     *
     * @return 0..2
     */
    public int value() {
        return value;
    }

    /**
     * The type for an {@code IBV_GID_TYPE_*} number.
     *
     * @param value 0..2
     * @return the type
     * @throws IllegalArgumentException for any other number
     */
    public static GidType of(int value) {
        for (GidType t : values()) {
            if (t.value == value) {
                return t;
            }
        }
        throw new IllegalArgumentException("gid_type: " + value + " is not an IBV_GID_TYPE_* value (0..2)");
    }
}
