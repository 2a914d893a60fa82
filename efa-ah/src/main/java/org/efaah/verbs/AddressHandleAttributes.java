package org.efaah.verbs;

import org.efaah.internal.Ranges;
import java.util.Objects;

/**
 * The attributes of an Address Handle: a Java mirror of {@code struct ibv_ah_attr} and its
 * {@code struct ibv_global_route grh}, as taken by {@code ibv_create_ah(3)}.
 *
 * <p>Every field is range-checked when built, so an invalid value never reaches a provider.
 * Ranges are those of the C field types and of the InfiniBand specification; checks that need
 * the device (port number, sgid_index within the GID table) are made by {@link Device#validate}.
 *
 * <p>Immutable and thread-safe; equality covers every field the device uses (the grh fields only
 * when {@code is_global=1}), and the hash code is computed once, so instances are cheap map keys.
 */
public final class AddressHandleAttributes {
    /** Largest {@code flow_label}: the IPv6 flow label is 20 bits. */
    public static final int MAX_FLOW_LABEL = 0xFFFFF;
    /** Largest {@code sl}: service levels are 4 bits. */
    public static final int MAX_SL = 15;
    /** Largest {@code src_path_bits}: at most 7 bits of LID path (LMC). */
    public static final int MAX_SRC_PATH_BITS = 0x7F;
    /** Largest {@code static_rate}: {@code IBV_RATE_1200_GBPS} in {@code enum ibv_rate}. */
    public static final int MAX_STATIC_RATE = 24;
    /** The hop_limit used when none is given: a common IP TTL, enough for any RoCE v2 path. */
    public static final int DEFAULT_HOP_LIMIT = 64;

    private final Gid dgid;
    private final int flowLabel;
    private final int sgidIndex;
    private final boolean sgidIndexGiven;
    private final int hopLimit;
    private final int trafficClass;
    private final int dlid;
    private final int sl;
    private final int srcPathBits;
    private final int staticRate;
    private final boolean isGlobal;
    private final int portNum;
    private final int hash;
    // The last withSgidIndex result: resolving the same object again allocates nothing. A benign
    // race: the target is immutable, so any thread may see either value.
    private AddressHandleAttributes lastWithSgidIndex;
    /** The last device whose {@link Device#validate} passed for this object (its serial), 0 for none; a benign race too. */
    int validatedOn;

    private AddressHandleAttributes(Builder b) {
        this.dgid = b.dgid;
        this.flowLabel = b.flowLabel;
        this.sgidIndex = b.sgidIndex;
        this.sgidIndexGiven = b.sgidIndexGiven;
        this.hopLimit = b.hopLimit;
        this.trafficClass = b.trafficClass;
        this.dlid = b.dlid;
        this.sl = b.sl;
        this.srcPathBits = b.srcPathBits;
        this.staticRate = b.staticRate;
        this.isGlobal = b.isGlobal;
        this.portNum = b.portNum;
        // Without a GRH (is_global=0) the device ignores the grh fields, so they take no part in
        // equality: two requests for the same LID-routed AH are equal and share a cached AH.
        int h = 0;
        if (isGlobal) {
            h = Objects.hashCode(dgid);
            h = 31 * h + flowLabel;
            h = 31 * h + sgidIndex;
            h = 31 * h + (sgidIndexGiven ? 1 : 0);
            h = 31 * h + hopLimit;
            h = 31 * h + trafficClass;
        }
        h = 31 * h + dlid;
        h = 31 * h + sl;
        h = 31 * h + srcPathBits;
        h = 31 * h + staticRate;
        h = 31 * h + (isGlobal ? 1 : 0);
        h = 31 * h + portNum;
        this.hash = h;
    }

    /**
     * The usual global (GRH) attributes for a destination GID: port 1, sgid_index not given
     * (0 on EFA and InfiniBand; on RoCE a RoCE v2 GID of the destination's family and scope, see
     * {@link Device#resolve}), hop_limit {@value #DEFAULT_HOP_LIMIT}, everything else zero. This
     * is all EFA looks at.
     *
     * @param dgid the destination GID (16 bytes, network order)
     * @return global attributes for port 1
     * @throws NullPointerException if {@code dgid} is null
     */
    public static AddressHandleAttributes forGid(Gid dgid) {
        return builder().dgid(dgid).build();
    }

    /**
     * The attributes of every AH to {@code dgid} on EFA, whose kernel driver makes an AH from the
     * dgid alone ({@code efa_create_ah}): {@link #forGid(Gid)} with sgid_index 0 given, EFA's one
     * local GID. An AH with these attributes is kept as its dgid alone.
     *
     * @param dgid the destination GID (16 bytes, network order)
     * @return global attributes for port 1, sgid_index 0, every other field at its default
     * @throws NullPointerException if {@code dgid} is null
     */
    public static AddressHandleAttributes forEfa(Gid dgid) {
        return builder().dgid(dgid).sgidIndex(0).build();
    }

    /**
     * Whether these equal {@link #forEfa}{@code (dgid())}.
     *
     * @return true for global attributes on port 1 with sgid_index 0 given and every other field at its default
     */
    public boolean isForEfa() {
        return isGlobal && sgidIndexGiven && sgidIndex == 0 && portNum == 1 && flowLabel == 0
                && hopLimit == DEFAULT_HOP_LIMIT && trafficClass == 0 && dlid == 0 && sl == 0 && srcPathBits == 0
                && staticRate == 0;
    }

    /**
     * Same as {@link #forGid(Gid)}, with the GID given as IPv6 text (see {@link Gid#parse}).
     *
     * @param dgid the destination GID as IPv6 text, e.g. {@code fe80::1}
     * @return global attributes for port 1
     * @throws IllegalArgumentException if {@code dgid} is not an IPv6 address
     */
    public static AddressHandleAttributes forGid(String dgid) {
        return forGid(Gid.parse(dgid));
    }

    /**
     * A builder with every field zero, port 1 and hop_limit {@value #DEFAULT_HOP_LIMIT}; values
     * are range-checked as they are set.
     *
     * @return a new builder; not thread-safe
     */
    public static Builder builder() {
        return new Builder();
    }

    /** {@return a builder holding this object's values, to derive a variant} */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.dgid = dgid;
        b.flowLabel = flowLabel;
        b.sgidIndex = sgidIndex;
        b.sgidIndexGiven = sgidIndexGiven;
        b.hopLimit = hopLimit;
        b.trafficClass = trafficClass;
        b.dlid = dlid;
        b.sl = sl;
        b.srcPathBits = srcPathBits;
        b.staticRate = staticRate;
        b.isGlobal = isGlobal;
        b.portNum = portNum;
        return b;
    }

    /** {@return {@code grh.dgid}; null only for a non-global (LID-routed InfiniBand) AH} */
    public Gid dgid() {
        return dgid;
    }

    /** {@return {@code grh.flow_label}, 0..0xFFFFF} */
    public int flowLabel() {
        return flowLabel;
    }

    /**
     * {@code grh.sgid_index}: index of the source GID in the port's GID table, 0..255; 0 when
     * not {@linkplain #hasSgidIndex() given}.
     *
     * @return the sgid_index, 0..255
     */
    public int sgidIndex() {
        return sgidIndex;
    }

    /**
     * Whether sgid_index was given. When it was not, {@link Device#resolve} picks it for the
     * device: 0 on EFA and InfiniBand, a RoCE v2 GID of the destination's family and scope on RoCE.
     * Attributes that differ only in this are not equal.
     *
     * @return true if the builder was given sgid_index
     */
    public boolean hasSgidIndex() {
        return sgidIndexGiven;
    }

    /** These attributes with sgid_index given as {@code index}; this object when it already is. */
    AddressHandleAttributes withSgidIndex(int index) {
        if (sgidIndexGiven && sgidIndex == index) {
            return this;
        }
        AddressHandleAttributes last = lastWithSgidIndex;
        if (last == null || last.sgidIndex != index) {
            last = toBuilder().sgidIndex(index).build();
            lastWithSgidIndex = last;
        }
        return last;
    }

    /** {@return {@code grh.hop_limit}, 0..255} */
    public int hopLimit() {
        return hopLimit;
    }

    /** {@return {@code grh.traffic_class}, 0..255} */
    public int trafficClass() {
        return trafficClass;
    }

    /** {@return {@code dlid}, 0..0xFFFF; InfiniBand only, 0 elsewhere} */
    public int dlid() {
        return dlid;
    }

    /** {@return {@code sl}, service level, 0..15} */
    public int sl() {
        return sl;
    }

    /** {@return {@code src_path_bits}, 0..127} */
    public int srcPathBits() {
        return srcPathBits;
    }

    /** {@return {@code static_rate}, an {@code enum ibv_rate} value 0..24 (0 = no limit)} */
    public int staticRate() {
        return staticRate;
    }

    /** {@return {@code is_global}: whether the GRH fields are used. True whenever a dgid is set} */
    public boolean isGlobal() {
        return isGlobal;
    }

    /** {@return {@code port_num}, 1-based, 1..255 (checked against the device's port count on use)} */
    public int portNum() {
        return portNum;
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        return o instanceof AddressHandleAttributes a && a.hash == hash && a.isGlobal == isGlobal
                && a.dlid == dlid && a.sl == sl && a.srcPathBits == srcPathBits
                && a.staticRate == staticRate && a.portNum == portNum
                && (!isGlobal || (a.flowLabel == flowLabel && a.sgidIndex == sgidIndex
                        && a.sgidIndexGiven == sgidIndexGiven && a.hopLimit == hopLimit
                        && a.trafficClass == trafficClass && Objects.equals(a.dgid, dgid)));
    }

    @Override
    public int hashCode() {
        return hash;
    }

    @Override
    public String toString() {
        return "ibv_ah_attr{dgid=" + dgid + ", flow_label=" + flowLabel + ", sgid_index="
                + (sgidIndexGiven ? String.valueOf(sgidIndex) : "unset")
                + ", hop_limit=" + hopLimit + ", traffic_class=" + trafficClass + ", dlid=" + dlid
                + ", sl=" + sl + ", src_path_bits=" + srcPathBits + ", static_rate=" + staticRate
                + ", is_global=" + (isGlobal ? 1 : 0) + ", port_num=" + portNum + "}";
    }

    /**
     * Builds {@link AddressHandleAttributes}; each setter checks its range at once and throws
     * {@link IllegalArgumentException} naming the field, the value and the valid range. Not
     * thread-safe.
     */
    public static final class Builder {
        private Gid dgid;
        private int flowLabel;
        private int sgidIndex;
        private boolean sgidIndexGiven;
        private int hopLimit = DEFAULT_HOP_LIMIT;
        private int trafficClass;
        private int dlid;
        private int sl;
        private int srcPathBits;
        private int staticRate;
        private boolean isGlobal;
        private boolean isGlobalSet;
        private int portNum = 1;

        private Builder() {
        }

        /**
         * {@code grh.dgid}: the destination GID (16 bytes, network order). Setting it makes the AH
         * global unless {@link #isGlobal} says otherwise.
         *
         * @param dgid the destination GID
         * @return this builder
         * @throws NullPointerException if {@code dgid} is null
         */
        public Builder dgid(Gid dgid) {
            this.dgid = Objects.requireNonNull(dgid, "dgid");
            return this;
        }

        /**
         * {@code grh.dgid} from IPv6 text, as {@link Gid#parse} reads it (e.g. {@code fe80::1},
         * {@code ::ffff:10.0.0.5}).
         *
         * @param dgid the destination GID as text
         * @return this builder
         * @throws NullPointerException     if {@code dgid} is null
         * @throws IllegalArgumentException if it is not an IPv6 address
         */
        public Builder dgid(String dgid) {
            return dgid(Gid.parse(Objects.requireNonNull(dgid, "dgid")));
        }

        /**
         * {@code grh.flow_label}, 20 bits (default 0).
         *
         * @param flowLabel 0..0xFFFFF
         * @return this builder
         * @throws IllegalArgumentException if {@code flowLabel} is outside 0..0xFFFFF, naming the field, the value and the range
         */
        public Builder flowLabel(int flowLabel) {
            Ranges.check("flow_label", flowLabel, 0, MAX_FLOW_LABEL);
            this.flowLabel = flowLabel;
            return this;
        }

        /**
         * {@code grh.sgid_index}: which entry of the local port's GID table is the source (default 0).
         * {@code acquire} also checks it against the port's {@code gid_tbl_len}.
         *
         * @param sgidIndex 0..255
         * @return this builder
         * @throws IllegalArgumentException if {@code sgidIndex} is outside 0..255, naming the field, the value and the range
         */
        public Builder sgidIndex(int sgidIndex) {
            Ranges.check("sgid_index", sgidIndex, 0, 255);
            this.sgidIndex = sgidIndex;
            this.sgidIndexGiven = true;
            return this;
        }

        /**
         * {@code grh.hop_limit} (default {@value #DEFAULT_HOP_LIMIT}).
         *
         * @param hopLimit 0..255
         * @return this builder
         * @throws IllegalArgumentException if {@code hopLimit} is outside 0..255, naming the field, the value and the range
         */
        public Builder hopLimit(int hopLimit) {
            Ranges.check("hop_limit", hopLimit, 0, 255);
            this.hopLimit = hopLimit;
            return this;
        }

        /**
         * {@code grh.traffic_class} (default 0).
         *
         * @param trafficClass 0..255
         * @return this builder
         * @throws IllegalArgumentException if {@code trafficClass} is outside 0..255, naming the field, the value and the range
         */
        public Builder trafficClass(int trafficClass) {
            Ranges.check("traffic_class", trafficClass, 0, 255);
            this.trafficClass = trafficClass;
            return this;
        }

        /**
         * {@code dlid}: the destination LID, InfiniBand only (default 0).
         *
         * @param dlid 0..0xFFFF
         * @return this builder
         * @throws IllegalArgumentException if {@code dlid} is outside 0..0xFFFF, naming the field, the value and the range
         */
        public Builder dlid(int dlid) {
            Ranges.check("dlid", dlid, 0, 0xFFFF);
            this.dlid = dlid;
            return this;
        }

        /**
         * {@code sl}: the service level (default 0).
         *
         * @param sl 0..15
         * @return this builder
         * @throws IllegalArgumentException if {@code sl} is outside 0..15, naming the field, the value and the range
         */
        public Builder sl(int sl) {
            Ranges.check("sl", sl, 0, MAX_SL);
            this.sl = sl;
            return this;
        }

        /**
         * {@code src_path_bits}, InfiniBand only (default 0).
         *
         * @param srcPathBits 0..127
         * @return this builder
         * @throws IllegalArgumentException if {@code srcPathBits} is outside 0..127, naming the field, the value and the range
         */
        public Builder srcPathBits(int srcPathBits) {
            Ranges.check("src_path_bits", srcPathBits, 0, MAX_SRC_PATH_BITS);
            this.srcPathBits = srcPathBits;
            return this;
        }

        /**
         * {@code static_rate}: an {@code enum ibv_rate} value, 0 for the port's rate (default 0).
         *
         * @param staticRate 0..24 ({@value #MAX_STATIC_RATE})
         * @return this builder
         * @throws IllegalArgumentException if {@code staticRate} is outside 0..24, naming the field, the value and the range
         */
        public Builder staticRate(int staticRate) {
            Ranges.check("static_rate", staticRate, 0, MAX_STATIC_RATE);
            this.staticRate = staticRate;
            return this;
        }

        /**
         * {@code is_global}: whether the AH carries a GRH. Unset, it follows whether a dgid was set.
         *
         * @param isGlobal true for a global AH (EFA and RoCE need one)
         * @return this builder
         */
        public Builder isGlobal(boolean isGlobal) {
            this.isGlobal = isGlobal;
            this.isGlobalSet = true;
            return this;
        }

        /**
         * {@code port_num}, 1-based; {@code acquire} also checks it against the device's port count.
         *
         * @param portNum 1..255
         * @return this builder
         * @throws IllegalArgumentException if {@code portNum} is outside 1..255, naming the field, the value and the range
         */
        public Builder portNum(int portNum) {
            Ranges.check("port_num", portNum, 1, 255);
            this.portNum = portNum;
            return this;
        }

        /**
         * The attributes, immutable.
         *
         * @return the attributes set so far, defaults for the others
         * @throws IllegalArgumentException if is_global is set without a dgid
         */
        public AddressHandleAttributes build() {
            if (!isGlobalSet) {
                isGlobal = dgid != null;
            }
            if (isGlobal && dgid == null) {
                throw new IllegalArgumentException("dgid: required when is_global=1");
            }
            return new AddressHandleAttributes(this);
        }
    }
}
