package org.efaah.verbs.mock;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.efaah.verbs.EfaDeviceAttributes;
import org.efaah.verbs.Errno;
import org.efaah.verbs.Gid;
import org.efaah.verbs.GidType;
import org.efaah.internal.Ranges;

/**
 * Configuration of a {@link MockVerbsProvider}: how many EFA-like devices, their GID tables,
 * {@code max_ah}, duplicate behaviour, latency and random faults. Immutable; made with
 * {@link #builder()}, or from system properties with {@link #fromSystemProperties()}.
 *
 * @param deviceCount          number of devices, named {@code efa_0}, {@code efa_1}, ...
 * @param gidTableLength       GIDs per port ({@code gid_tbl_len}); each device has one port
 * @param gids                 explicit GIDs for port 1 of device 0 (index order), or empty for generated
 *                             ones; the zero GID {@code ::} is an empty slot, as on rxe and mlx5, where
 *                             AH creation with that sgid_index fails with ENODATA
 * @param maxAh                {@code max_ah} per device, 1..65536 (AHNs are 16-bit)
 * @param duplicatePolicy      how a second create for a live (PD, GID) is answered; by default
 *                             {@link DuplicatePolicy#KERNEL_CACHED}, a current EFA host
 * @param duplicateErrno       the errno a {@link DuplicatePolicy#STRICT} device refuses with
 * @param createLatencyNanos   time each hardware create takes, ns
 * @param destroyLatencyNanos  time each hardware destroy takes, ns
 * @param failureProbability   chance 0..1 that a create sending the device a command fails with
 *                             {@code randomFailureErrno}
 * @param randomFailureErrno   errno of random create failures
 * @param seed                 seed of the random failures, for reproducible runs
 * @param efa                  true (default): EFA devices {@code efa_N} that key AHs by GID and
 *                             report AHNs; false: RoCE-like devices {@code roce_N} (vendor 0, link
 *                             layer Ethernet, no AHN), whose AHs differ by every ibv_ah_attr field
 * @param maxPd                {@code max_pd} per device: allocating one more live PD fails with ENOMEM
 * @param gidTypes             the type of each GID slot, by index, for every device; slots beyond the
 *                             list are {@link GidType#IB} on EFA and {@link GidType#ROCE_V2} on RoCE
 * @param adminQueueDepth      AH creates and destroys each device works on at once, 0..4096, 0 for no
 *                             limit (the default): the device's admin queue. With a limit, a command
 *                             arriving while that many are in progress waits for the earliest to finish,
 *                             as commands queue in hardware, so N creates of latency L on a depth-C
 *                             device take ceil(N / C) * L however many threads issue them
 * @param efaDeviceCaps        EFA devices: the {@code device_caps} {@code efadv_query_device} reports, a set of
 *                             {@link org.efaah.verbs.EfaDeviceAttributes} {@code CAPS_*} bits. Without
 *                             {@code CAPS_RNR_RETRY} an SRD QP's {@code rnr_retry} cannot be set; without
 *                             {@code CAPS_CQ_WITH_SGID} {@code efadv_create_cq} refuses the sender's GID
 * @param systemCallNanos      time each {@code ibv_create_ah} and {@code ibv_destroy_ah} spends entering the
 *                             kernel, ns, whatever the device then does: all a kernel-cached duplicate
 *                             costs. Apart from {@code createLatencyNanos}, which only a hardware command
 *                             adds
 * @param flushOnError         what a QP that enters the error state does with the work requests posted to
 *                             it: true (default) flushes them at once, as rxe and mlx5 do; false flushes
 *                             nothing until the QP is destroyed, as EFA documents its FLUSHED status
 *                             ("flushed during QP destroy", {@code efa_io_defs.h}); those flushes then
 *                             name a QP libefa no longer knows ({@code efa_destroy_qp} clears its
 *                             {@code qp_table} slot, so {@code efa_poll_sub_cq} fails them with EINVAL)
 * @param efaMaxSqDepth        EFA devices: what {@code efadv_get_max_sq_depth} reports for an endpoint's QP,
 *                             or 0 (the default) for not reported, as libefa before rdma-core 63. Where
 *                             reported, a QP deeper fails EINVAL, as libefa's {@code efa_check_qp_limits}
 *                             refuses it
 * @param efaMaxRqDepth        EFA devices: what {@code efadv_get_max_rq_depth} reports, or 0 (the default) for
 *                             not reported; likewise for receives
 */
public record MockConfig(int deviceCount, int gidTableLength, List<Gid> gids, int maxAh,
                         DuplicatePolicy duplicatePolicy, Errno duplicateErrno, long createLatencyNanos,
                         long destroyLatencyNanos, double failureProbability, Errno randomFailureErrno, long seed,
                         boolean efa, int maxPd, List<GidType> gidTypes, int adminQueueDepth, int efaDeviceCaps,
                         long systemCallNanos, boolean flushOnError, int efaMaxSqDepth, int efaMaxRqDepth) {

    /** Prefix of the system properties read by {@link #fromSystemProperties()}. */
    public static final String PROPERTY_PREFIX = "efaah.mock.";

    /**
     * The mock's {@code max_ah} per device unless configured ({@code --max-ah} in the CLI, the EFA
     * double's {@code EFA_DOUBLE_MAX_AH} too): 1,024, what an EFA device reports. A device of
     * another generation may report more; {@code efa-ah devices} prints a host's.
     */
    /*
     * Where 1,024 comes from: the kernel's efa_query_device copies the max_ah the firmware reports
     * (efa_com_get_device_attr), and neither rdma-core nor libfabric names a figure. The one public
     * figure is UCX's EFA mock (contrib/ibmock/config.c, vendor_part_id 0xefa1): max_ah 1024, beside
     * max_qp 256, the per-NIC QP limit EFA's maintainers state (libfabric issue 9356), and max_mr
     * 262144 and max_pd 256, which this mock reports too. Unknown: what 0xefa2 and later devices report.
     */
    public static final int DEFAULT_MAX_AH = 1024;

    /** The largest {@code max_ah} the mock takes: AHNs are 16-bit. */
    public static final int MAX_AH_LIMIT = 65536;

    /**
     * Checks every field and copies the lists. The record's description says what each field means;
     * here are the valid ranges.
     *
     * @param deviceCount         0..64
     * @param gidTableLength      1..256
     * @param gids                at most {@code gidTableLength} GIDs, copied
     * @param maxAh               1..65536
     * @param duplicatePolicy     not null
     * @param duplicateErrno      not null
     * @param createLatencyNanos  0..10_000_000_000 ns (10 s)
     * @param destroyLatencyNanos 0..10_000_000_000 ns (10 s)
     * @param failureProbability  0..1 (NaN refused)
     * @param randomFailureErrno  not null
     * @param seed                any value
     * @param efa                 EFA (true) or RoCE-like (false) devices
     * @param maxPd               1..16777216
     * @param gidTypes            any length, copied; no null element
     * @param adminQueueDepth     0..4096, 0 for no limit
     * @param efaDeviceCaps       any set of bits
     * @param systemCallNanos     0..10_000_000_000 ns (10 s)
     * @param flushOnError        flush at the error state (true) or at destroy (false)
     * @param efaMaxSqDepth       0 (not reported) or 1..8192
     * @param efaMaxRqDepth       0 (not reported) or 1..8192
     * @throws IllegalArgumentException naming the field, its value and the valid range when one is out
     *                                  of range, or when more {@code gids} are given than
     *                                  {@code gidTableLength}
     * @throws NullPointerException     if a list, policy or errno is null
     */
    public MockConfig {
        Objects.requireNonNull(gids, "gids");
        Objects.requireNonNull(duplicatePolicy, "duplicatePolicy");
        Objects.requireNonNull(duplicateErrno, "duplicateErrno");
        Objects.requireNonNull(randomFailureErrno, "randomFailureErrno");
        Ranges.check("deviceCount", deviceCount, 0, 64);
        Ranges.check("gidTableLength", gidTableLength, 1, 256);
        Ranges.check("maxAh", maxAh, 1, MAX_AH_LIMIT);
        Ranges.check("createLatencyNanos", createLatencyNanos, 0, 10_000_000_000L);
        Ranges.check("destroyLatencyNanos", destroyLatencyNanos, 0, 10_000_000_000L);
        Ranges.check("adminQueueDepth", adminQueueDepth, 0, 4096);
        Ranges.check("systemCallNanos", systemCallNanos, 0, 10_000_000_000L);
        if (!(failureProbability >= 0 && failureProbability <= 1)) {
            throw new IllegalArgumentException("failureProbability: " + failureProbability + " is out of range; valid 0..1");
        }
        if (gids.size() > gidTableLength) {
            throw new IllegalArgumentException("gids: " + gids.size() + " given; at most gidTableLength=" + gidTableLength);
        }
        gids = List.copyOf(gids);
        Ranges.check("maxPd", maxPd, 1, 1 << 24);
        gidTypes = List.copyOf(Objects.requireNonNull(gidTypes, "gidTypes"));
        Ranges.check("efaMaxSqDepth", efaMaxSqDepth, 0, MockAttributes.MAX_QP_WR);
        Ranges.check("efaMaxRqDepth", efaMaxRqDepth, 0, MockAttributes.MAX_QP_WR);
    }

    /**
     * The type of GID slot {@code index}, as {@code ibv_query_gid_ex(3)} reports it.
     *
     * @param index the GID table index (sgid_index), 0-based
     * @return the slot's type: from {@link #gidTypes()}, else the default of the device kind
     */
    public GidType gidType(int index) {
        return index < gidTypes.size() ? gidTypes.get(index) : efa ? GidType.IB : GidType.ROCE_V2;
    }

    /**
     * One device, one GID, max_ah {@value #DEFAULT_MAX_AH}, a current EFA host's kernel AH cache answering duplicates
     * ({@link DuplicatePolicy#KERNEL_CACHED}), no latency, no faults.
     *
     * @return the default configuration
     */
    public static MockConfig defaults() {
        return builder().build();
    }

    /**
     * A builder holding the {@link #defaults()}.
     *
     * @return a new builder; not thread-safe
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * A builder holding this configuration, to derive a changed copy.
     *
     * @return a new builder; not thread-safe
     */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.deviceCount = deviceCount;
        b.gidTableLength = gidTableLength;
        b.gids = new ArrayList<>(gids);
        b.maxAh = maxAh;
        b.duplicatePolicy = duplicatePolicy;
        b.duplicateErrno = duplicateErrno;
        b.createLatencyNanos = createLatencyNanos;
        b.destroyLatencyNanos = destroyLatencyNanos;
        b.failureProbability = failureProbability;
        b.randomFailureErrno = randomFailureErrno;
        b.seed = seed;
        b.efa = efa;
        b.maxPd = maxPd;
        b.gidTypes = new ArrayList<>(gidTypes);
        b.adminQueueDepth = adminQueueDepth;
        b.efaDeviceCaps = efaDeviceCaps;
        b.systemCallNanos = systemCallNanos;
        b.flushOnError = flushOnError;
        b.efaMaxSqDepth = efaMaxSqDepth;
        b.efaMaxRqDepth = efaMaxRqDepth;
        return b;
    }

    /**
     * The defaults overridden by system properties {@code efaah.mock.devices},
     * {@code .gidTableLength}, {@code .maxAh}, {@code .behaviour} (legacy|strict|kernel-cached),
     * {@code .duplicateErrno}, {@code .createLatencyNanos}, {@code .destroyLatencyNanos},
     * {@code .failureProbability}, {@code .failureErrno}, {@code .seed}, {@code .efa}, {@code .maxPd},
     * {@code .adminQueueDepth}, {@code .systemCallNanos}, {@code .flushOnError}.
     *
     * @return the configuration the properties describe
     * @throws IllegalArgumentException naming the property when a value does not parse or is out of range
     */
    public static MockConfig fromSystemProperties() {
        Builder b = builder();
        set("devices", Integer::parseInt, b::deviceCount);
        set("gidTableLength", Integer::parseInt, b::gidTableLength);
        set("maxAh", Integer::parseInt, b::maxAh);
        set("behaviour", DuplicatePolicy::parse, b::duplicatePolicy);
        set("duplicateErrno", MockConfig::parseErrno, b::duplicateErrno);
        set("createLatencyNanos", Long::parseLong, b::createLatencyNanos);
        set("destroyLatencyNanos", Long::parseLong, b::destroyLatencyNanos);
        set("failureProbability", Double::parseDouble, b::failureProbability);
        set("failureErrno", MockConfig::parseErrno, b::randomFailureErrno);
        set("efa", MockConfig::parseBoolean, b::efa);
        set("seed", Long::parseLong, b::seed);
        set("maxPd", Integer::parseInt, b::maxPd);
        set("adminQueueDepth", Integer::parseInt, b::adminQueueDepth);
        set("systemCallNanos", Long::parseLong, b::systemCallNanos);
        set("flushOnError", MockConfig::parseBoolean, b::flushOnError);
        try {
            return b.build();
        } catch (IllegalArgumentException e) {
            // The record checks name their field; name the property the value came from instead.
            String field = String.valueOf(e.getMessage()).split(":", 2)[0];
            String property = switch (field) {
                case "deviceCount" -> "devices";
                case "randomFailureErrno" -> "failureErrno";
                case "duplicatePolicy" -> "behaviour";
                default -> field;
            };
            String value = property(property);
            throw new IllegalArgumentException(value == null ? e.getMessage()
                    : "-D" + PROPERTY_PREFIX + property + "=" + value + ": "
                    + e.getMessage().substring(field.length() + 1).trim(), e);
        }
    }

    private static <T> void set(String name, java.util.function.Function<String, T> parse,
                                java.util.function.Consumer<T> setter) {
        String v = property(name);
        if (v == null) {
            return;
        }
        T value;
        try {
            value = parse.apply(v);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("-D" + PROPERTY_PREFIX + name + "=" + v + ": "
                    + (e instanceof NumberFormatException ? "not a number" : e.getMessage()), e);
        }
        setter.accept(value);
    }

    /** An errno by name, e.g. {@code ENOMEM}; the message names no Java type (Enum.valueOf's would). */
    private static Errno parseErrno(String v) {
        for (Errno e : Errno.values()) {
            if (e.name().equalsIgnoreCase(v.trim())) {
                return e;
            }
        }
        throw new IllegalArgumentException("'" + v + "' is not an errno name (such as ENOMEM, EINVAL, ETIMEDOUT)");
    }

    private static boolean parseBoolean(String v) {
        if (v.equalsIgnoreCase("true") || v.equalsIgnoreCase("false")) {
            return Boolean.parseBoolean(v);
        }
        throw new IllegalArgumentException("not true or false");
    }

    private static String property(String name) {
        String v = System.getProperty(PROPERTY_PREFIX + name);
        return v == null || v.isBlank() ? null : v.trim();
    }

    /** Builder for {@link MockConfig}; values are checked by {@link #build()}. Not thread-safe. */
    public static final class Builder {
        private int deviceCount = 1;
        private int gidTableLength = 1;
        private List<Gid> gids = new ArrayList<>();
        private int maxAh = DEFAULT_MAX_AH;
        private DuplicatePolicy duplicatePolicy = DuplicatePolicy.KERNEL_CACHED;
        private Errno duplicateErrno = Errno.EINVAL;
        private long createLatencyNanos;
        private long destroyLatencyNanos;
        private double failureProbability;
        private Errno randomFailureErrno = Errno.ENOMEM;
        private long seed = 1;
        private boolean efa = true;
        private int maxPd = 256;
        private List<GidType> gidTypes = new ArrayList<>();
        private int adminQueueDepth;
        private int efaDeviceCaps = EfaDeviceAttributes.CAPS_RDMA_READ | EfaDeviceAttributes.CAPS_RNR_RETRY
                | EfaDeviceAttributes.CAPS_CQ_WITH_SGID;
        private long systemCallNanos;
        private boolean flushOnError = true;
        private int efaMaxSqDepth;
        private int efaMaxRqDepth;

        private Builder() {
        }

        /**
         * {@code max_pd} per device (default 256): allocating one more live PD fails with ENOMEM.
         *
         * @param maxPd 1..16777216
         * @return this builder
         * @throws IllegalArgumentException (from {@link #build()}) if it is outside 1..16777216
         */
        public Builder maxPd(int maxPd) {
            this.maxPd = maxPd;
            return this;
        }

        /**
         * The type of each GID slot by index; see {@link MockConfig#gidTypes()} (default empty).
         *
         * @param types the types of slots 0, 1, ...; copied
         * @return this builder
         * @throws NullPointerException if {@code types} is null, or (from {@link #build()}) holds a null
         */
        public Builder gidTypes(List<GidType> types) {
            this.gidTypes = new ArrayList<>(types);
            return this;
        }

        /**
         * Number of devices, named {@code efa_0}, {@code efa_1}, ... (default 1).
         *
         * @param n 0..64
         * @return this builder
         * @throws IllegalArgumentException (from {@link #build()}) if it is outside 0..64
         */
        public Builder deviceCount(int n) {
            this.deviceCount = n;
            return this;
        }

        /**
         * {@code gid_tbl_len} of each device's port (default 1).
         *
         * @param n 1..256
         * @return this builder
         * @throws IllegalArgumentException (from {@link #build()}) if it is outside 1..256
         */
        public Builder gidTableLength(int n) {
            this.gidTableLength = n;
            return this;
        }

        /**
         * Explicit GIDs for port 1 of device 0, in index order (default: generated link-local GIDs).
         *
         * @param gids at most {@code gidTableLength} GIDs
         * @return this builder
         * @throws NullPointerException if {@code gids} is null
         */
        public Builder gids(List<Gid> gids) {
            this.gids = new ArrayList<>(gids);
            return this;
        }

        /**
         * {@code max_ah} per device: creates beyond it fail with ENOMEM (default
         * {@value MockConfig#DEFAULT_MAX_AH}, what an EFA device reports).
         *
         * @param maxAh 1..65536 (AHNs are 16-bit)
         * @return this builder
         * @throws IllegalArgumentException (from {@link #build()}) if it is outside 1..65536
         */
        public Builder maxAh(int maxAh) {
            this.maxAh = maxAh;
            return this;
        }

        /**
         * How a second create for a live (PD, GID) is answered (default {@link DuplicatePolicy#KERNEL_CACHED}:
         * a current EFA host).
         *
         * @param policy the policy
         * @return this builder
         */
        public Builder duplicatePolicy(DuplicatePolicy policy) {
            this.duplicatePolicy = policy;
            return this;
        }

        /**
         * The errno a {@link DuplicatePolicy#STRICT} device refuses a duplicate with (default EINVAL).
         *
         * @param errno the errno
         * @return this builder
         */
        public Builder duplicateErrno(Errno errno) {
            this.duplicateErrno = errno;
            return this;
        }

        /**
         * Time each hardware create takes (default 0).
         *
         * @param ns 0..10,000,000,000 ns
         * @return this builder
         * @throws IllegalArgumentException (from {@link #build()}) if it is outside 0..10,000,000,000 ns
         */
        public Builder createLatencyNanos(long ns) {
            this.createLatencyNanos = ns;
            return this;
        }

        /**
         * Time each hardware destroy takes (default 0).
         *
         * @param ns 0..10,000,000,000 ns
         * @return this builder
         * @throws IllegalArgumentException (from {@link #build()}) if it is outside 0..10,000,000,000 ns
         */
        public Builder destroyLatencyNanos(long ns) {
            this.destroyLatencyNanos = ns;
            return this;
        }

        /**
         * Time each {@code ibv_create_ah} and {@code ibv_destroy_ah} spends entering the kernel; see
         * {@link MockConfig#systemCallNanos()} (default 0).
         *
         * @param ns 0..10,000,000,000 ns
         * @return this builder
         * @throws IllegalArgumentException (from {@link #build()}) if it is outside 0..10,000,000,000 ns
         */
        public Builder systemCallNanos(long ns) {
            this.systemCallNanos = ns;
            return this;
        }

        /**
         * Chance that any create fails with the random-failure errno (default 0).
         *
         * @param p 0..1
         * @return this builder
         * @throws IllegalArgumentException (from {@link #build()}) if it is outside 0..1 or NaN
         */
        public Builder failureProbability(double p) {
            this.failureProbability = p;
            return this;
        }

        /**
         * The errno of random create failures (default ENOMEM).
         *
         * @param errno the errno
         * @return this builder
         */
        public Builder randomFailureErrno(Errno errno) {
            this.randomFailureErrno = errno;
            return this;
        }

        /**
         * Seed of the random failures, for reproducible runs (default 1).
         *
         * @param seed any value
         * @return this builder
         */
        public Builder seed(long seed) {
            this.seed = seed;
            return this;
        }

        /**
         * True (default): EFA devices that key AHs by GID and report AHNs; false: RoCE-like devices.
         *
         * @param efa whether the devices are EFA
         * @return this builder
         */
        public Builder efa(boolean efa) {
            this.efa = efa;
            return this;
        }

        /**
         * AH creates and destroys each device works on at once; see
         * {@link MockConfig#adminQueueDepth()} (default 0, no limit).
         *
         * @param depth 0..4096
         * @return this builder
         * @throws IllegalArgumentException (from {@link #build()}) if it is outside 0..4096
         */
        public Builder adminQueueDepth(int depth) {
            this.adminQueueDepth = depth;
            return this;
        }

        /**
         * The {@code device_caps} of EFA devices; see {@link MockConfig#efaDeviceCaps()} (default
         * RDMA_READ, RNR_RETRY and CQ_WITH_SGID, as a current EFA device reports them).
         *
         * @param caps a set of {@link EfaDeviceAttributes} {@code CAPS_*} bits
         * @return this builder
         */
        public Builder efaDeviceCaps(int caps) {
            this.efaDeviceCaps = caps;
            return this;
        }

        /**
         * Whether a QP entering the error state flushes what is posted at once (true, the default, as
         * rxe and mlx5) or only when destroyed (false, as EFA documents); see
         * {@link MockConfig#flushOnError()}.
         *
         * @param flush true to flush at the error state, false to flush at destroy
         * @return this builder
         */
        public Builder flushOnError(boolean flush) {
            this.flushOnError = flush;
            return this;
        }

        /**
         * What {@code efadv_get_max_sq_depth} and {@code efadv_get_max_rq_depth} report on EFA
         * devices; see {@link MockConfig#efaMaxSqDepth()} (default 0 and 0: not reported).
         *
         * @param sqDepth 0 (not reported) or 1..8192
         * @param rqDepth 0 (not reported) or 1..8192
         * @return this builder
         */
        public Builder efaMaxDepths(int sqDepth, int rqDepth) {
            this.efaMaxSqDepth = sqDepth;
            this.efaMaxRqDepth = rqDepth;
            return this;
        }

        /**
         * The configuration.
         *
         * @return an immutable configuration
         * @throws IllegalArgumentException naming the field when a value is out of range
         */
        public MockConfig build() {
            return new MockConfig(deviceCount, gidTableLength, gids, maxAh, duplicatePolicy, duplicateErrno,
                    createLatencyNanos, destroyLatencyNanos, failureProbability, randomFailureErrno, seed, efa, maxPd,
                    gidTypes, adminQueueDepth, efaDeviceCaps, systemCallNanos, flushOnError, efaMaxSqDepth,
                    efaMaxRqDepth);
        }
    }

    /*
     * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
     * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
     * NoObjectMethodsTest). Same meaning and format as the generated ones.
     */
    @Override
    public boolean equals(Object o) {
        return o == this || o instanceof MockConfig that && that.deviceCount == deviceCount
                && that.gidTableLength == gidTableLength && Objects.equals(that.gids, gids) && that.maxAh == maxAh
                && Objects.equals(that.duplicatePolicy, duplicatePolicy)
                && Objects.equals(that.duplicateErrno, duplicateErrno)
                && that.createLatencyNanos == createLatencyNanos && that.destroyLatencyNanos == destroyLatencyNanos
                && Double.compare(that.failureProbability, failureProbability) == 0
                && Objects.equals(that.randomFailureErrno, randomFailureErrno) && that.seed == seed
                && that.efa == efa && that.maxPd == maxPd && Objects.equals(that.gidTypes, gidTypes)
                && that.adminQueueDepth == adminQueueDepth && that.efaDeviceCaps == efaDeviceCaps
                && that.systemCallNanos == systemCallNanos && that.flushOnError == flushOnError
                && that.efaMaxSqDepth == efaMaxSqDepth && that.efaMaxRqDepth == efaMaxRqDepth;
    }

    @Override
    public int hashCode() {
        int h = deviceCount;
        h = 31 * h + gidTableLength;
        h = 31 * h + Objects.hashCode(gids);
        h = 31 * h + maxAh;
        h = 31 * h + Objects.hashCode(duplicatePolicy);
        h = 31 * h + Objects.hashCode(duplicateErrno);
        h = 31 * h + Long.hashCode(createLatencyNanos);
        h = 31 * h + Long.hashCode(destroyLatencyNanos);
        h = 31 * h + Double.hashCode(failureProbability);
        h = 31 * h + Objects.hashCode(randomFailureErrno);
        h = 31 * h + Long.hashCode(seed);
        h = 31 * h + Boolean.hashCode(efa);
        h = 31 * h + maxPd;
        h = 31 * h + Objects.hashCode(gidTypes);
        h = 31 * h + adminQueueDepth;
        h = 31 * h + efaDeviceCaps;
        h = 31 * h + Long.hashCode(systemCallNanos);
        h = 31 * h + Boolean.hashCode(flushOnError);
        h = 31 * h + Integer.hashCode(efaMaxSqDepth);
        h = 31 * h + Integer.hashCode(efaMaxRqDepth);
        return h;
    }

    @Override
    public String toString() {
        return new StringBuilder("MockConfig[deviceCount=").append(deviceCount)
                .append(", gidTableLength=").append(gidTableLength).append(", gids=").append(gids)
                .append(", maxAh=").append(maxAh).append(", duplicatePolicy=").append(duplicatePolicy)
                .append(", duplicateErrno=").append(duplicateErrno)
                .append(", createLatencyNanos=").append(createLatencyNanos)
                .append(", destroyLatencyNanos=").append(destroyLatencyNanos)
                .append(", failureProbability=").append(failureProbability)
                .append(", randomFailureErrno=").append(randomFailureErrno).append(", seed=").append(seed)
                .append(", efa=").append(efa).append(", maxPd=").append(maxPd)
                .append(", gidTypes=").append(gidTypes).append(", adminQueueDepth=").append(adminQueueDepth)
                .append(", efaDeviceCaps=").append(efaDeviceCaps)
                .append(", systemCallNanos=").append(systemCallNanos).append(", flushOnError=").append(flushOnError)
                .append(", efaMaxSqDepth=").append(efaMaxSqDepth).append(", efaMaxRqDepth=").append(efaMaxRqDepth)
                .append(']').toString();
    }
}
