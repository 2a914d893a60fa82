package org.efaah.verbs.ibverbs;

import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.annotation.Cast;
import org.bytedeco.javacpp.annotation.MemberGetter;
import org.bytedeco.javacpp.annotation.MemberSetter;
import org.bytedeco.javacpp.annotation.Name;
import org.bytedeco.javacpp.annotation.Platform;
import org.bytedeco.javacpp.annotation.Properties;

/**
 * JavaCPP binding of {@code efa_ah_native.h}, one Java method per C function, same names.
 *
 * <p>Every function returns 0 or a negative errno. Verbs objects are plain {@code long}s (the C
 * {@code uint64_t} handles): no {@link Pointer} here ever refers to a context, PD or AH, so no
 * JavaCPP deallocator can free one behind the owner's back. The structs below own only their own
 * malloc'd memory and are closed with try-with-resources.
 *
 * <p>There is deliberately no {@code static { Loader.load(); }}: a failing static initializer
 * would turn into a bare {@link NoClassDefFoundError} on every later use. {@link NativeLibrary}
 * loads the library once and keeps the failure; nothing here may be called before it succeeded.
 */
@Properties(value = {
        @Platform(value = {"linux-x86_64", "linux-arm64"},
                include = "efa_ah_native.h",
                // libibverbs only: libefa is dlopen()ed by the stub so that hosts without it load.
                link = "ibverbs@.1")
})
final class NativeVerbs {
    static final int NAME_MAX = 64;
    static final int GID_LENGTH = 16;
    static final int GRH_LENGTH = 40;
    static final int NO_AHN = -1;
    static final int WC_GRH = 1;

    private NativeVerbs() {
    }

    static native int efa_ah_device_list(@Cast("char*") byte[] names, @Cast("uint32_t") int capacity,
                                         @Cast("uint32_t*") int[] count);

    static native int efa_ah_open_device(@Cast("const char*") String name, @Cast("uint64_t*") long[] context);

    static native int efa_ah_close_device(@Cast("uint64_t") long context);

    static native int efa_ah_query_device(@Cast("uint64_t") long context, DeviceAttr attr);

    static native int efa_ah_query_port(@Cast("uint64_t") long context, @Cast("uint32_t") int portNum, PortAttr attr);

    static native int efa_ah_query_gid(@Cast("uint64_t") long context, @Cast("uint32_t") int portNum,
                                       @Cast("uint32_t") int index, @Cast("uint8_t*") byte[] gid);

    static native int efa_ah_alloc_pd(@Cast("uint64_t") long context, @Cast("uint64_t*") long[] pd);

    static native int efa_ah_dealloc_pd(@Cast("uint64_t") long pd);

    static native int efa_ah_create_ah(@Cast("uint64_t") long pd, @Cast("const efa_ah_ah_attr*") AhAttr attr,
                                       @Cast("uint64_t*") long[] ah, @Cast("int32_t*") int[] ahn);

    static native int efa_ah_destroy_ah(@Cast("uint64_t") long ah);

    static native int efa_ah_init_ah_from_wc(@Cast("uint64_t") long context, @Cast("uint32_t") int portNum,
                                             @Cast("uint32_t") int wcFlags, @Cast("uint32_t") int srcQp,
                                             @Cast("uint32_t") int slid, @Cast("uint32_t") int sl,
                                             @Cast("uint32_t") int dlidPathBits,
                                             @Cast("const uint8_t*") byte[] grh, AhAttr attr);

    static native int efa_ah_efadv_available();

    @Cast("uint32_t")
    static native int efa_ah_mtu_bytes(@Cast("uint32_t") int ibvMtu);

    static native int efa_ah_error_from_rc(int rc, int savedErrno);

    /** {@code struct efa_ah_device_attr}. */
    @Name("efa_ah_device_attr")
    static final class DeviceAttr extends Pointer {
        DeviceAttr() {
            super((Pointer) null);
            allocate();
        }

        private native void allocate();

        @MemberGetter
        @Cast("char*")
        native BytePointer name();

        @MemberGetter
        @Cast("uint32_t")
        native int vendor_id();

        @MemberGetter
        @Cast("uint32_t")
        native int vendor_part_id();

        @MemberGetter
        native int max_ah();

        @MemberGetter
        native int max_pd();

        @MemberGetter
        @Cast("uint32_t")
        native int phys_port_cnt();

        @MemberGetter
        @Cast("uint32_t")
        native int is_efa();

        @MemberGetter
        @Cast("uint32_t")
        native int efa_max_sq_wr();
    }

    /** {@code struct efa_ah_port_attr}. */
    @Name("efa_ah_port_attr")
    static final class PortAttr extends Pointer {
        PortAttr() {
            super((Pointer) null);
            allocate();
        }

        private native void allocate();

        @MemberGetter
        @Cast("uint32_t")
        native int state();

        @MemberGetter
        @Cast("uint32_t")
        native int link_layer();

        @MemberGetter
        native int gid_tbl_len();

        @MemberGetter
        @Cast("uint32_t")
        native int active_mtu();

        @MemberGetter
        @Cast("uint32_t")
        native int lid();
    }

    /** {@code struct efa_ah_ah_attr}: filled field by field, read back likewise. */
    @Name("efa_ah_ah_attr")
    static final class AhAttr extends Pointer {
        AhAttr() {
            super((Pointer) null);
            allocate();
        }

        private native void allocate();

        @MemberGetter
        @Cast("uint8_t*")
        native BytePointer dgid();

        @MemberGetter
        @Cast("uint32_t")
        native int flow_label();

        @MemberSetter
        native AhAttr flow_label(@Cast("uint32_t") int value);

        @MemberGetter
        @Cast("uint32_t")
        native int sgid_index();

        @MemberSetter
        native AhAttr sgid_index(@Cast("uint32_t") int value);

        @MemberGetter
        @Cast("uint32_t")
        native int hop_limit();

        @MemberSetter
        native AhAttr hop_limit(@Cast("uint32_t") int value);

        @MemberGetter
        @Cast("uint32_t")
        native int traffic_class();

        @MemberSetter
        native AhAttr traffic_class(@Cast("uint32_t") int value);

        @MemberGetter
        @Cast("uint32_t")
        native int dlid();

        @MemberSetter
        native AhAttr dlid(@Cast("uint32_t") int value);

        @MemberGetter
        @Cast("uint32_t")
        native int sl();

        @MemberSetter
        native AhAttr sl(@Cast("uint32_t") int value);

        @MemberGetter
        @Cast("uint32_t")
        native int src_path_bits();

        @MemberSetter
        native AhAttr src_path_bits(@Cast("uint32_t") int value);

        @MemberGetter
        @Cast("uint32_t")
        native int static_rate();

        @MemberSetter
        native AhAttr static_rate(@Cast("uint32_t") int value);

        @MemberGetter
        @Cast("uint32_t")
        native int is_global();

        @MemberSetter
        native AhAttr is_global(@Cast("uint32_t") int value);

        @MemberGetter
        @Cast("uint32_t")
        native int port_num();

        @MemberSetter
        native AhAttr port_num(@Cast("uint32_t") int value);
    }
}
