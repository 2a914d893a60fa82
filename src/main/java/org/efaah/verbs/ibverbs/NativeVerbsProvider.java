package org.efaah.verbs.ibverbs;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.CreatedAh;
import org.efaah.verbs.DeviceAttributes;
import org.efaah.verbs.Gid;
import org.efaah.verbs.PortAttributes;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.VerbsProvider;

/**
 * The {@link VerbsProvider} over the real libibverbs (and libefa, when present, for the EFA
 * extras), through the {@code efa_ah_native} C stub.
 *
 * <p>Handles are the C pointers as {@code long}s. Nothing here owns them: a context, PD or AH is
 * freed only by the matching explicit call ({@link #closeDevice}, {@link #deallocatePd},
 * {@link #destroyAh}), never by the garbage collector. As the SPI allows, handles are trusted to
 * be live; a 0 handle is refused by the C stub with EINVAL rather than crashing the JVM.
 *
 * <p>Arguments are range-checked here, before any native call; a failure inside libibverbs is a
 * {@link VerbsException} naming the verbs call and carrying the errno it reported.
 *
 * <p>Stateless and thread-safe. Obtain it from {@link NativeVerbsProviderFactory} or
 * {@code VerbsProviders.open("native")}.
 */
public final class NativeVerbsProvider implements VerbsProvider {
    /** Longest device name, in bytes, that libibverbs can report (its sysfs name limit less the NUL). */
    public static final int MAX_DEVICE_NAME_LENGTH = NativeVerbs.NAME_MAX - 1;
    private static final int INITIAL_NAME_CAPACITY = 8;

    /**
     * @throws UnsupportedOperationException if the JNI library is not loaded (the cause says why)
     */
    NativeVerbsProvider() {
        NativeLibrary.requireLoaded();
    }

    @Override
    public String name() {
        return NativeVerbsProviderFactory.NAME;
    }

    /** Whether libefa was found, so that EFA devices report their AHN and EFA attributes. */
    public boolean efadvAvailable() {
        return NativeVerbs.efa_ah_efadv_available() == 1;
    }

    @Override
    public List<String> deviceNames() {
        int capacity = INITIAL_NAME_CAPACITY;
        // A device may appear between two calls; retry with the size the last call reported.
        for (int attempt = 0; attempt < 4; attempt++) {
            byte[] names = new byte[capacity * NativeVerbs.NAME_MAX];
            int[] count = new int[1];
            check(NativeVerbs.efa_ah_device_list(names, capacity, count), "ibv_get_device_list", null);
            if (count[0] <= capacity) {
                List<String> list = new ArrayList<>(count[0]);
                for (int i = 0; i < count[0]; i++) {
                    list.add(cString(names, i * NativeVerbs.NAME_MAX, NativeVerbs.NAME_MAX));
                }
                return List.copyOf(list);
            }
            capacity = count[0];
        }
        throw new VerbsException("ibv_get_device_list", org.efaah.verbs.Errno.EAGAIN,
                "the device list kept changing while it was read");
    }

    /**
     * {@code ibv_open_device(3)} on the device of that name.
     *
     * @throws NullPointerException     if {@code name} is null
     * @throws IllegalArgumentException if {@code name} is empty, too long or not plain ASCII
     * @throws VerbsException           ENODEV if no such device is listed, else the errno of
     *                                  {@code ibv_open_device}
     */
    @Override
    public long openDevice(String name) {
        Objects.requireNonNull(name, "name");
        if (name.isEmpty() || name.length() > MAX_DEVICE_NAME_LENGTH
                || !name.chars().allMatch(c -> c > 0x20 && c < 0x7f)) {
            throw new IllegalArgumentException("device name: '" + name + "' is not a device name (1.."
                    + MAX_DEVICE_NAME_LENGTH + " printable ASCII characters)");
        }
        long[] context = new long[1];
        check(NativeVerbs.efa_ah_open_device(name, context), "ibv_open_device", "device " + name);
        return context[0];
    }

    @Override
    public void closeDevice(long context) {
        check(NativeVerbs.efa_ah_close_device(context), "ibv_close_device", null);
    }

    /**
     * {@code ibv_query_device(3)}; {@link DeviceAttributes#efa()} is whether
     * {@code efadv_query_device} answered for this context (false wherever libefa is absent).
     */
    @Override
    public DeviceAttributes queryDevice(long context) {
        try (NativeVerbs.DeviceAttr a = new NativeVerbs.DeviceAttr()) {
            check(NativeVerbs.efa_ah_query_device(context, a), "ibv_query_device", null);
            return new DeviceAttributes(a.name().getString(StandardCharsets.UTF_8), a.vendor_id(),
                    a.vendor_part_id(), a.max_ah(), a.max_pd(), a.phys_port_cnt(), a.is_efa() == 1);
        }
    }

    /**
     * {@code ibv_query_port(3)}; the active MTU is converted from {@code enum ibv_mtu} to bytes
     * (0 if the device reports a value outside 256..4096).
     *
     * @throws IllegalArgumentException if {@code portNum} is not 1..255
     */
    @Override
    public PortAttributes queryPort(long context, int portNum) {
        checkPort(portNum);
        try (NativeVerbs.PortAttr a = new NativeVerbs.PortAttr()) {
            check(NativeVerbs.efa_ah_query_port(context, portNum, a), "ibv_query_port", "port " + portNum);
            return new PortAttributes(portNum, a.state(), a.link_layer(), a.gid_tbl_len(), a.active_mtu(), a.lid());
        }
    }

    /**
     * {@code ibv_query_gid(3)}. An empty table slot reads as the zero GID, as libibverbs reports it.
     *
     * @throws IllegalArgumentException if {@code portNum} is not 1..255 or {@code index} is negative
     */
    @Override
    public Gid queryGid(long context, int portNum, int index) {
        checkPort(portNum);
        if (index < 0) {
            throw new IllegalArgumentException("gid index: " + index + " is negative");
        }
        byte[] gid = new byte[Gid.LENGTH];
        check(NativeVerbs.efa_ah_query_gid(context, portNum, index, gid), "ibv_query_gid",
                "port " + portNum + " index " + index);
        return Gid.of(gid);
    }

    @Override
    public long allocatePd(long context) {
        long[] pd = new long[1];
        check(NativeVerbs.efa_ah_alloc_pd(context, pd), "ibv_alloc_pd", null);
        return pd[0];
    }

    @Override
    public void deallocatePd(long pd) {
        check(NativeVerbs.efa_ah_dealloc_pd(pd), "ibv_dealloc_pd", null);
    }

    /**
     * {@code ibv_create_ah(3)}, then {@code efadv_query_ah} for the AHN. On an EFA device whose
     * AHN cannot be read, the AH is destroyed again and that error is reported under
     * {@code ibv_create_ah}.
     *
     * @throws NullPointerException if {@code attributes} is null
     * @throws VerbsException       with the errno of {@code ibv_create_ah} (EINVAL for attributes
     *                              the device rejects, ENOMEM at {@code max_ah}, ...)
     */
    @Override
    public CreatedAh createAh(long pd, AddressHandleAttributes attributes) {
        Objects.requireNonNull(attributes, "attributes");
        long[] ah = new long[1];
        int[] ahn = new int[1];
        try (NativeVerbs.AhAttr a = new NativeVerbs.AhAttr()) {
            if (attributes.dgid() != null) {
                a.dgid().put(attributes.dgid().toBytes(), 0, Gid.LENGTH);
            }
            a.flow_label(attributes.flowLabel()).sgid_index(attributes.sgidIndex())
                    .hop_limit(attributes.hopLimit()).traffic_class(attributes.trafficClass())
                    .dlid(attributes.dlid()).sl(attributes.sl()).src_path_bits(attributes.srcPathBits())
                    .static_rate(attributes.staticRate()).is_global(attributes.isGlobal() ? 1 : 0)
                    .port_num(attributes.portNum());
            check(NativeVerbs.efa_ah_create_ah(pd, a, ah, ahn), "ibv_create_ah",
                    "dgid " + attributes.dgid() + " port " + attributes.portNum()
                            + " sgid_index " + attributes.sgidIndex());
        }
        return new CreatedAh(ah[0], ahn[0] < 0 ? CreatedAh.NO_AHN : ahn[0]);
    }

    /**
     * {@code ibv_destroy_ah(3)}. On failure the AH still exists and {@code ah} stays valid: the
     * caller keeps it and may retry.
     */
    @Override
    public void destroyAh(long ah) {
        check(NativeVerbs.efa_ah_destroy_ah(ah), "ibv_destroy_ah", null);
    }

    /**
     * {@code ibv_init_ah_from_wc(3)}: the attributes of an AH back to the sender of a received UD
     * message, from the work completion's fields and the Global Routing Header that starts the
     * receive buffer.
     *
     * @param context      an open context handle
     * @param portNum      the port the message arrived on, 1..255
     * @param wcFlags      {@code wc_flags}; bit 0 ({@code IBV_WC_GRH}) says a GRH is present
     * @param srcQp        {@code src_qp}
     * @param slid         {@code slid}, 0..0xFFFF
     * @param sl           {@code sl}, 0..15
     * @param dlidPathBits {@code dlid_path_bits}, 0..255
     * @param grh          the first 40 bytes of the receive buffer; may be null without {@code IBV_WC_GRH}
     * @throws IllegalArgumentException if a value is out of range or the GRH is missing or short
     * @throws VerbsException           with the errno of {@code ibv_init_ah_from_wc}
     */
    public AddressHandleAttributes initAhFromWc(long context, int portNum, int wcFlags, int srcQp, int slid,
                                                int sl, int dlidPathBits, byte[] grh) {
        checkPort(portNum);
        checkRange("slid", slid, 0xFFFF);
        checkRange("sl", sl, AddressHandleAttributes.MAX_SL);
        checkRange("dlid_path_bits", dlidPathBits, 0xFF);
        boolean hasGrh = (wcFlags & NativeVerbs.WC_GRH) != 0;
        if (hasGrh && (grh == null || grh.length < NativeVerbs.GRH_LENGTH)) {
            throw new IllegalArgumentException("grh: " + NativeVerbs.GRH_LENGTH
                    + " bytes are required when wc_flags has IBV_WC_GRH; got "
                    + (grh == null ? "none" : grh.length));
        }
        byte[] header = hasGrh ? java.util.Arrays.copyOf(grh, NativeVerbs.GRH_LENGTH) : null;
        try (NativeVerbs.AhAttr a = new NativeVerbs.AhAttr()) {
            check(NativeVerbs.efa_ah_init_ah_from_wc(context, portNum, wcFlags, srcQp, slid, sl, dlidPathBits,
                    header, a), "ibv_init_ah_from_wc", "port " + portNum);
            byte[] dgid = new byte[Gid.LENGTH];
            a.dgid().get(dgid, 0, Gid.LENGTH);
            AddressHandleAttributes.Builder b = AddressHandleAttributes.builder()
                    .flowLabel(a.flow_label()).sgidIndex(a.sgid_index()).hopLimit(a.hop_limit())
                    .trafficClass(a.traffic_class()).dlid(a.dlid()).sl(a.sl()).srcPathBits(a.src_path_bits())
                    .staticRate(a.static_rate()).portNum(a.port_num()).isGlobal(a.is_global() == 1);
            if (a.is_global() == 1) {
                b.dgid(Gid.of(dgid));
            }
            return b.build();
        }
    }

    /** Nothing provider-wide is held: devices are closed by their owners. */
    @Override
    public void close() {
    }

    @Override
    public String toString() {
        return "NativeVerbsProvider[" + NativeLibrary.get().libraryPath() + "]";
    }

    private static void checkPort(int portNum) {
        if (portNum < 1 || portNum > 255) {
            throw new IllegalArgumentException("port_num: " + portNum + " is out of range; valid 1..255");
        }
    }

    private static void checkRange(String field, int value, int max) {
        if (value < 0 || value > max) {
            throw new IllegalArgumentException(field + ": " + value + " is out of range; valid 0.." + max);
        }
    }

    private static void check(int rc, String operation, String detail) {
        if (rc != 0) {
            throw error(operation, rc, detail);
        }
    }

    /** The exception for a negative return {@code rc} of the stub. */
    static VerbsException error(String operation, int rc, String detail) {
        return new VerbsException(operation, -rc, detail);
    }

    private static String cString(byte[] buffer, int offset, int max) {
        int end = offset;
        while (end < offset + max && buffer[end] != 0) {
            end++;
        }
        return new String(buffer, offset, end - offset, StandardCharsets.UTF_8);
    }
}
