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
    static final int NO_AHN = -1;

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

    static native int efa_ah_create_cq(@Cast("uint64_t") long context, @Cast("uint32_t") int cqe,
                                       @Cast("uint64_t*") long[] cq);

    static native int efa_ah_destroy_cq(@Cast("uint64_t") long cq);

    static native int efa_ah_reg_mr(@Cast("uint64_t") long pd, @Cast("uint64_t") long addr,
                                    @Cast("uint64_t") long length, @Cast("uint64_t*") long[] mr);

    static native int efa_ah_dereg_mr(@Cast("uint64_t") long mr);

    static native int efa_ah_create_ud_qp(@Cast("uint64_t") long pd, @Cast("uint64_t") long sendCq,
                                          @Cast("uint64_t") long recvCq, @Cast("uint32_t") int maxSendWr,
                                          @Cast("uint32_t") int maxRecvWr, @Cast("uint64_t*") long[] qp,
                                          @Cast("uint32_t*") int[] qpn);

    static native int efa_ah_activate_ud_qp(@Cast("uint64_t") long qp, @Cast("uint32_t") int portNum,
                                            @Cast("uint32_t") int pkeyIndex, @Cast("uint32_t") int qkey);

    static native int efa_ah_destroy_qp(@Cast("uint64_t") long qp);

    static native int efa_ah_activate_srd_qp(@Cast("uint64_t") long qp, @Cast("uint32_t") int portNum,
                                             @Cast("uint32_t") int qkey, @Cast("int32_t") int rnrRetry);

    static native int efa_ah_post_send(@Cast("uint64_t") long qp, @Cast("uint64_t") long ah,
                                       @Cast("uint32_t") int remoteQpn, @Cast("uint32_t") int remoteQkey,
                                       @Cast("uint64_t") long mr, @Cast("uint64_t") long offset,
                                       @Cast("uint32_t") int length, @Cast("uint64_t") long wrId);

    static native int efa_ah_post_recv(@Cast("uint64_t") long qp, @Cast("uint64_t") long mr,
                                       @Cast("uint64_t") long offset, @Cast("uint32_t") int length,
                                       @Cast("uint64_t") long wrId);

    /** {@code EFA_AH_CQE_WORDS}: 64-bit words of one completion record (layout in efa_ah_native.h). */
    static final int CQE_WORDS = 4;

    /**
     * Returns the count of completions written to {@code records}, or a negative errno. The array is
     * passed as its address, a plain {@code long}: JavaCPP reads a {@link Pointer} argument's address
     * and position with a JNI field read each, on every poll (issue 35).
     */
    static native int efa_ah_poll_cq_records(@Cast("uint64_t") long cq, @Cast("uint64_t*") long records,
                                             @Cast("uint32_t") int capacity);

    static native int efa_ah_init_ah_from_wc(@Cast("uint64_t") long context, @Cast("uint32_t") int portNum,
                                             @Cast("const efa_ah_wc*") Wc wc, @Cast("uint64_t") long mr,
                                             @Cast("uint64_t") long grhOffset, AhAttr attr);

    static native int efa_ah_efadv_available();

    /** Bits of {@link #efa_ah_efadv_families()} ({@code EFA_AH_EFADV_*} of the stub). */
    static final int EFADV_LOADED = 1;
    static final int EFADV_QUERY = 2;
    static final int EFADV_CQ = 4;
    static final int EFADV_SRD = 8;
    static final int EFADV_DEPTH = 16;

    @Cast("uint32_t")
    static native int efa_ah_efadv_families();

    static native int efa_ah_query_qp_state(@Cast("uint64_t") long qp, @Cast("uint32_t*") int[] state);

    static native int efa_ah_reset_qp(@Cast("uint64_t") long qp);

    static native int efa_ah_error_qp(@Cast("uint64_t") long qp);

    static native int efa_ah_efadv_create_cq(@Cast("uint64_t") long context, @Cast("uint32_t") int cqe,
                                             @Cast("uint64_t*") long[] cq);

    static native int efa_ah_efadv_create_cq_on_channel(@Cast("uint64_t") long context,
                                                        @Cast("uint64_t") long channel, @Cast("uint32_t") int cqe,
                                                        @Cast("uint64_t*") long[] cq);

    /** As {@link #efa_ah_poll_cq_records}, both arrays passed as their addresses. */
    static native int efa_ah_efadv_poll_cq_records(@Cast("uint64_t") long cq, @Cast("uint64_t*") long records,
                                                   @Cast("uint32_t") int capacity, @Cast("uint8_t*") long sgids);

    static native int efa_ah_efadv_create_srd_qp(@Cast("uint64_t") long pd, @Cast("uint64_t") long sendCq,
                                                 @Cast("uint64_t") long recvCq, @Cast("uint32_t") int maxSendWr,
                                                 @Cast("uint32_t") int maxRecvWr, @Cast("uint64_t*") long[] qp,
                                                 @Cast("uint32_t*") int[] qpn);

    static native int efa_ah_efadv_max_depths(@Cast("uint64_t") long context, @Cast("int32_t*") int[] sqDepth,
                                              @Cast("int32_t*") int[] rqDepth);

    @Cast("uint32_t")
    static native int efa_ah_mtu_bytes(@Cast("uint32_t") int ibvMtu);

    static native int efa_ah_error_from_rc(int rc, int savedErrno);

    static native int efa_ah_query_gid_type(@Cast("uint64_t") long context, @Cast("uint32_t") int portNum,
                                            @Cast("uint32_t") int index, @Cast("uint32_t*") int[] type);

    static native int efa_ah_async_open(@Cast("uint64_t") long context, @Cast("uint64_t*") long[] channel);

    static native int efa_ah_async_wait(@Cast("uint64_t") long channel, @Cast("int32_t") int timeoutMillis,
                                        @Cast("uint32_t*") int[] types, @Cast("uint32_t*") int[] ports,
                                        @Cast("uint32_t") int capacity, @Cast("uint32_t*") int[] count);

    static native int efa_ah_async_wake(@Cast("uint64_t") long channel);

    static native int efa_ah_async_close(@Cast("uint64_t") long channel);

    static native int efa_ah_query_gid_ndev(@Cast("uint64_t") long context, @Cast("uint32_t") int portNum,
                                            @Cast("uint32_t") int index, @Cast("uint32_t*") int[] ifindex);

    static native int efa_ah_net_open(@Cast("uint64_t*") long[] channel);

    static native int efa_ah_net_request_dump(@Cast("uint64_t") long channel, @Cast("uint32_t") int what);

    static native int efa_ah_net_wait(@Cast("uint64_t") long channel, @Cast("int32_t") int timeoutMillis,
                                      NetEvent events, @Cast("uint32_t") int capacity, @Cast("uint32_t*") int[] count);

    static native int efa_ah_net_wake(@Cast("uint64_t") long channel);

    static native int efa_ah_net_close(@Cast("uint64_t") long channel);

    /**
     * Returns how many were posted, or the negative errno of the first. Both arrays are passed as
     * their addresses, plain {@code long}s: JavaCPP copies a Java array argument into memory it
     * allocates and back out, and reads a {@link Pointer}'s address and position with a JNI call
     * each (issue 35).
     */
    static native int efa_ah_post_recv_batch(@Cast("uint64_t") long qp, @Cast("uint64_t") long mr,
                                             @Cast("const uint32_t*") long offsets, @Cast("uint32_t") int length,
                                             @Cast("const uint64_t*") long wrIds, @Cast("uint32_t") int count);

    /**
     * Returns how many were posted, or the negative errno of the first; reqs read in place, passed as
     * its address: a {@code ByteBuffer} argument costs two JNI calls a post (the JVM's
     * {@code GetDirectBufferAddress} checks the buffer's class first).
     */
    static native int efa_ah_post_sends(@Cast("uint64_t") long qp, @Cast("uint64_t") long ah,
                                        @Cast("uint32_t") int remoteQpn, @Cast("uint32_t") int remoteQkey,
                                        @Cast("uint64_t") long mr, @Cast("const efa_ah_send_req*") long reqs,
                                        @Cast("uint32_t") int count);

    static native int efa_ah_channel_create(@Cast("uint64_t") long context, @Cast("uint64_t*") long[] channel);

    static native int efa_ah_channel_fd(@Cast("uint64_t") long channel, @Cast("int32_t*") int[] fd);

    static native int efa_ah_channel_create_cq(@Cast("uint64_t") long context, @Cast("uint64_t") long channel,
                                               @Cast("uint32_t") int cqe, @Cast("uint64_t*") long[] cq);

    static native int efa_ah_req_notify_cq(@Cast("uint64_t") long cq);

    /** events passed as its address, as the batched posts' arrays: no JNI field reads a wait. */
    static native int efa_ah_channel_wait(@Cast("uint64_t") long channel, @Cast("int32_t") int timeoutMillis,
                                          @Cast("int32_t*") long events);

    static native int efa_ah_channel_stop(@Cast("uint64_t") long channel);

    static native int efa_ah_channel_wake(@Cast("uint64_t") long channel);

    static native int efa_ah_channel_destroy(@Cast("uint64_t") long channel);

    static native int efa_ah_poller_create(@Cast("uint64_t*") long[] poller);

    static native int efa_ah_poller_arm(@Cast("uint64_t") long poller, @Cast("int32_t") int fd);

    static native int efa_ah_poller_wait(@Cast("uint64_t") long poller, @Cast("int32_t") int timeoutMillis,
                                         @Cast("int32_t*") int[] fds, @Cast("uint32_t") int capacity,
                                         @Cast("uint32_t*") int[] count);

    static native int efa_ah_poller_wake(@Cast("uint64_t") long poller);

    static native int efa_ah_poller_destroy(@Cast("uint64_t") long poller);

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

        @MemberGetter
        @Cast("uint32_t")
        native int efa_max_rq_wr();

        @MemberGetter
        @Cast("uint32_t")
        native int efa_max_sq_sge();

        @MemberGetter
        @Cast("uint32_t")
        native int efa_max_rq_sge();

        @MemberGetter
        @Cast("uint32_t")
        native int efa_inline_buf_size();

        @MemberGetter
        @Cast("uint32_t")
        native int efa_inline_buf_size_ex();

        @MemberGetter
        @Cast("uint32_t")
        native int efa_device_caps();

        @MemberGetter
        @Cast("uint32_t")
        native int efa_max_rdma_size();
        @MemberGetter
        native int transport_type();

        @MemberGetter
        @Cast("char*")
        native BytePointer fw_ver();

        @MemberGetter
        @Cast("uint64_t")
        native long node_guid();

        @MemberGetter
        @Cast("uint64_t")
        native long sys_image_guid();

        @MemberGetter
        @Cast("uint64_t")
        native long max_mr_size();

        @MemberGetter
        @Cast("uint64_t")
        native long page_size_cap();

        @MemberGetter
        @Cast("uint32_t")
        native int hw_ver();

        @MemberGetter
        native int max_qp();

        @MemberGetter
        native int max_qp_wr();

        @MemberGetter
        @Cast("uint32_t")
        native int device_cap_flags();

        @MemberGetter
        native int max_sge();

        @MemberGetter
        native int max_sge_rd();

        @MemberGetter
        native int max_cq();

        @MemberGetter
        native int max_cqe();

        @MemberGetter
        native int max_mr();

        @MemberGetter
        native int max_qp_rd_atom();

        @MemberGetter
        native int max_ee_rd_atom();

        @MemberGetter
        native int max_res_rd_atom();

        @MemberGetter
        native int max_qp_init_rd_atom();

        @MemberGetter
        native int max_ee_init_rd_atom();

        @MemberGetter
        @Cast("uint32_t")
        native int atomic_cap();

        @MemberGetter
        native int max_ee();

        @MemberGetter
        native int max_rdd();

        @MemberGetter
        native int max_mw();

        @MemberGetter
        native int max_raw_ipv6_qp();

        @MemberGetter
        native int max_raw_ethy_qp();

        @MemberGetter
        native int max_mcast_grp();

        @MemberGetter
        native int max_mcast_qp_attach();

        @MemberGetter
        native int max_total_mcast_qp_attach();

        @MemberGetter
        native int max_fmr();

        @MemberGetter
        native int max_map_per_fmr();

        @MemberGetter
        native int max_srq();

        @MemberGetter
        native int max_srq_wr();

        @MemberGetter
        native int max_srq_sge();

        @MemberGetter
        @Cast("uint32_t")
        native int max_pkeys();

        @MemberGetter
        @Cast("uint32_t")
        native int local_ca_ack_delay();
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

        @MemberGetter
        @Cast("uint32_t")
        native int max_msg_sz();
        @MemberGetter
        @Cast("uint32_t")
        native int max_mtu();

        @MemberGetter
        @Cast("uint32_t")
        native int port_cap_flags();

        @MemberGetter
        @Cast("uint32_t")
        native int port_cap_flags2();

        @MemberGetter
        @Cast("uint32_t")
        native int bad_pkey_cntr();

        @MemberGetter
        @Cast("uint32_t")
        native int qkey_viol_cntr();

        @MemberGetter
        @Cast("uint32_t")
        native int pkey_tbl_len();

        @MemberGetter
        @Cast("uint32_t")
        native int sm_lid();

        @MemberGetter
        @Cast("uint32_t")
        native int lmc();

        @MemberGetter
        @Cast("uint32_t")
        native int max_vl_num();

        @MemberGetter
        @Cast("uint32_t")
        native int sm_sl();

        @MemberGetter
        @Cast("uint32_t")
        native int subnet_timeout();

        @MemberGetter
        @Cast("uint32_t")
        native int init_type_reply();

        @MemberGetter
        @Cast("uint32_t")
        native int active_width();

        @MemberGetter
        @Cast("uint32_t")
        native int active_speed();

        @MemberGetter
        @Cast("uint32_t")
        native int phys_state();
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

    /**
     * {@code struct efa_ah_wc}, allocated as an array. Its fields are read and written through
     * {@link #asByteBuffer()} at the offsets below, not through one JNI getter per field: a poll
     * then costs one native call whatever the number of completions. The offsets are those of the
     * C struct (fixed-width fields, checked by {@code _Static_assert} there and against
     * {@code offsetof} in the tests).
     */
    @Name("efa_ah_wc")
    static final class Wc extends Pointer {
        static final int SIZE = 56;
        static final int WR_ID = 0;
        static final int STATUS = 8;
        static final int OPCODE = 12;
        static final int VENDOR_ERR = 16;
        static final int BYTE_LEN = 20;
        static final int QP_NUM = 24;
        static final int SRC_QP = 28;
        static final int WC_FLAGS = 32;
        static final int PKEY_INDEX = 36;
        static final int SLID = 40;
        static final int SL = 44;
        static final int DLID_PATH_BITS = 48;

        /** An array of {@code count} zeroed structs. */
        Wc(long count) {
            super((Pointer) null);
            allocateArray(count);
        }

        private native void allocateArray(long count);

        // Members declared only so that JavaCPP records their offsets (Loader.offsetof) for the layout test.
        @MemberGetter
        @Cast("uint64_t")
        native long wr_id();

        @MemberGetter
        @Cast("uint32_t")
        native int status();

        @MemberGetter
        @Cast("uint32_t")
        native int opcode();

        @MemberGetter
        @Cast("uint32_t")
        native int vendor_err();

        @MemberGetter
        @Cast("uint32_t")
        native int byte_len();

        @MemberGetter
        @Cast("uint32_t")
        native int qp_num();

        @MemberGetter
        @Cast("uint32_t")
        native int src_qp();

        @MemberGetter
        @Cast("uint32_t")
        native int wc_flags();

        @MemberGetter
        @Cast("uint32_t")
        native int pkey_index();

        @MemberGetter
        @Cast("uint32_t")
        native int slid();

        @MemberGetter
        @Cast("uint32_t")
        native int sl();

        @MemberGetter
        @Cast("uint32_t")
        native int dlid_path_bits();
    }

    /**
     * {@code struct efa_ah_net_event}, allocated as an array and read through {@link #asByteBuffer()}
     * at the offsets below (those of the C struct, checked by {@code _Static_assert} there and
     * against {@code offsetof} in the tests).
     */
    @Name("efa_ah_net_event")
    static final class NetEvent extends Pointer {
        static final int SIZE = 96;
        static final int TYPE = 0;
        static final int IFINDEX = 4;
        static final int FAMILY = 8;
        static final int STATE = 12;
        static final int MTU = 16;
        static final int ADDR_LEN = 20;
        static final int LLADDR_LEN = 24;
        static final int FLAGS = 28;
        static final int ADDR = 32;
        static final int LLADDR = 48;
        static final int IFNAME = 80;
        static final int IFNAME_MAX = 16;
        // The C constants (efa_ah_native.h).
        static final int DUMP_DONE = 3;
        static final int NEWLINK = 16;
        static final int DELLINK = 17;
        static final int NEWNEIGH = 28;
        static final int DELNEIGH = 29;
        static final int LOST = 0x100;
        static final int DUMP_LINKS = 18;
        static final int DUMP_NEIGHBOURS = 30;
        static final int FROM_DUMP = 1;
        static final int DUMP_INTR = 2;

        /** An array of {@code count} zeroed structs. */
        NetEvent(long count) {
            super((Pointer) null);
            allocateArray(count);
        }

        private native void allocateArray(long count);

        // Members declared only so that JavaCPP records their offsets for the layout test.
        @MemberGetter
        @Cast("uint32_t")
        native int type();

        @MemberGetter
        native int ifindex();

        @MemberGetter
        @Cast("uint32_t")
        native int state();

        @MemberGetter
        @Cast("uint32_t")
        native int mtu();

        @MemberGetter
        @Cast("uint32_t")
        native int flags();

        @MemberGetter
        @Cast("uint8_t*")
        native BytePointer addr();

        @MemberGetter
        @Cast("uint8_t*")
        native BytePointer lladdr();

        @MemberGetter
        @Cast("char*")
        native BytePointer ifname();
    }
}
