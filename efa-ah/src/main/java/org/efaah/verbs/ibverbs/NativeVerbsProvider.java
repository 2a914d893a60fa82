package org.efaah.verbs.ibverbs;

import org.efaah.verbs.spi.AsyncEventVerbs;
import org.efaah.verbs.spi.CompletionChannelVerbs;
import org.efaah.verbs.spi.DatagramVerbs;
import org.efaah.verbs.spi.NetworkVerbs;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.IntPointer;
import org.bytedeco.javacpp.Pointer;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.spi.CreatedAh;
import org.efaah.verbs.DeviceAttributes;
import org.efaah.verbs.Gid;
import org.efaah.verbs.PortAttributes;
import org.efaah.verbs.spi.QueuePairNumbers;
import org.efaah.internal.Ranges;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.spi.VerbsProvider;
import org.efaah.verbs.SendRequests;
import org.efaah.verbs.WorkCompletion;

/**
 * The {@link VerbsProvider} over the real libibverbs (and libefa, when present, for the EFA
 * extras), through the {@code efa_ah_native} C stub.
 *
 * <p>Handles are the C pointers as {@code long}s. Nothing here owns them: a context, PD, AH, CQ,
 * MR or QP is freed only by the matching explicit call ({@link #closeDevice},
 * {@link #deallocatePd}, {@link #destroyAh}, {@link #destroyCq}, {@link #deregisterMemory},
 * {@link #destroyQp}), never by the garbage collector. As the SPI allows, handles are trusted to
 * be live; a 0 handle is refused by the C stub with EINVAL rather than crashing the JVM.
 *
 * <p>Arguments are range-checked here, before any native call; a failure inside libibverbs is a
 * {@link VerbsException} naming the verbs call and carrying the errno it reported.
 *
 * <p>Thread-safe, with no shared mutable state: the datagram calls that need native scratch
 * memory use a per-thread one ({@link Scratch}). Obtain it from {@link NativeVerbsProviderFactory} or
 * {@code VerbsProviders.open("native")}.
 */
final class NativeVerbsProvider 
        implements VerbsProvider, DatagramVerbs, CompletionChannelVerbs, AsyncEventVerbs, NetworkVerbs {
    /** Longest device name, in bytes, that libibverbs can report (its sysfs name limit less the NUL). */
    static final int MAX_DEVICE_NAME_LENGTH = NativeVerbs.NAME_MAX - 1;
    private static final int INITIAL_NAME_CAPACITY = 8;
    // The limits of the stub (efa_ah_native.h), checked here first.
    private static final int MAX_CQE = 65536;
    private static final int MAX_QP_WR = 8192;
    private static final int MAX_QPN = 0xFFFFFF;

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
            DeviceAttributes.Limits limits = new DeviceAttributes.Limits(a.max_mr_size(), a.page_size_cap(),
                    a.max_qp(), a.max_qp_wr(), a.device_cap_flags(), a.max_sge(), a.max_sge_rd(), a.max_cq(),
                    a.max_cqe(), a.max_mr(), a.max_mw(), a.max_fmr(), a.max_map_per_fmr(), a.max_srq(),
                    a.max_srq_wr(), a.max_srq_sge());
            DeviceAttributes.IbLimits ibLimits = new DeviceAttributes.IbLimits(a.max_qp_rd_atom(),
                    a.max_ee_rd_atom(), a.max_res_rd_atom(), a.max_qp_init_rd_atom(), a.max_ee_init_rd_atom(),
                    a.atomic_cap(), a.max_ee(), a.max_rdd(),
                    a.max_raw_ipv6_qp(), a.max_raw_ethy_qp(), a.max_mcast_grp(), a.max_mcast_qp_attach(),
                    a.max_total_mcast_qp_attach(), a.max_pkeys(), a.local_ca_ack_delay());
            return new DeviceAttributes(a.name().getString(StandardCharsets.UTF_8), a.vendor_id(),
                    a.vendor_part_id(), a.max_ah(), a.max_pd(), a.phys_port_cnt(), a.is_efa() == 1, a.transport_type(),
                    a.fw_ver().getString(StandardCharsets.UTF_8), a.node_guid(), a.sys_image_guid(), a.hw_ver(), limits,
                    ibLimits);
        }
    }

    /**
     * {@code ibv_query_port(3)}; the active MTU is converted from {@code enum ibv_mtu} to bytes
     * (0 if the device reports a value outside 256..4096); {@code maxMessageSize} is
     * {@code max_msg_sz} as reported (on EFA the device's MTU, beyond 4096).
     *
     * @throws IllegalArgumentException if {@code portNum} is not 1..255
     */
    @Override
    public PortAttributes queryPort(long context, int portNum) {
        checkPort(portNum);
        try (NativeVerbs.PortAttr a = new NativeVerbs.PortAttr()) {
            check(NativeVerbs.efa_ah_query_port(context, portNum, a), "ibv_query_port", "port " + portNum);
            PortAttributes.Details details = new PortAttributes.Details(a.port_cap_flags(), a.port_cap_flags2(),
                    a.max_vl_num(), a.bad_pkey_cntr(), a.qkey_viol_cntr(), a.sm_sl(), a.pkey_tbl_len(), a.subnet_timeout(),
                    a.init_type_reply(), a.active_width(), a.active_speed(), a.phys_state());
            return new PortAttributes(portNum, a.state(), a.link_layer(), a.gid_tbl_len(), a.active_mtu(), a.lid(),
                    Integer.toUnsignedLong(a.max_msg_sz()), a.max_mtu(), a.sm_lid(), a.lmc(), details);
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

    // The datagram path. Range checks here mirror those of the stub, so that bad input fails in
    // Java with the field named; the stub checks again and is what keeps a 0 handle from crashing.

    /**
     * {@code ibv_create_cq(3)}, no completion channel (completions are polled).
     *
     * @throws IllegalArgumentException if {@code entries} is not 1..65536
     */
    @Override
    public long createCq(long context, int entries) {
        Ranges.check("cqe", entries, 1, MAX_CQE);
        long[] cq = new long[1];
        int rc = NativeVerbs.efa_ah_create_cq(context, entries, cq);
        check(rc, "ibv_create_cq", LockedMemory.detail(rc, "cqe " + entries));
        return cq[0];
    }

    @Override
    public void destroyCq(long cq) {
        Object kept = UnclaimedCompletions.detach(cq);
        try {
            check(NativeVerbs.efa_ah_destroy_cq(cq), "ibv_destroy_cq", null);
        } catch (RuntimeException e) {
            UnclaimedCompletions.restore(cq, kept);
            throw e;
        }
    }

    /**
     * {@code ibv_reg_mr(3)} of the buffer's whole capacity, whatever its position and limit,
     * with local write access. Only the address crosses to C: the MR is freed by
     * {@link #deregisterMemory} alone, and the caller keeps the buffer reachable until then.
     *
     * @throws NullPointerException     if {@code buffer} is null
     * @throws IllegalArgumentException if {@code buffer} is not direct or is empty
     */
    @Override
    public long registerMemory(long pd, ByteBuffer buffer) {
        Objects.requireNonNull(buffer, "buffer");
        if (!buffer.isDirect() || buffer.capacity() == 0) {
            throw new IllegalArgumentException("buffer: must be a non-empty direct ByteBuffer");
        }
        // A BytePointer over a buffer owns no memory (its deallocator only holds the buffer):
        // it is used here for the base address alone, taken at position 0.
        long address = new BytePointer(buffer.duplicate().clear()).address();
        long[] mr = new long[1];
        int rc = NativeVerbs.efa_ah_reg_mr(pd, address, buffer.capacity(), mr);
        check(rc, "ibv_reg_mr", LockedMemory.detail(rc, buffer.capacity() + " bytes asked"));
        return mr[0];
    }

    @Override
    public void deregisterMemory(long mr) {
        check(NativeVerbs.efa_ah_dereg_mr(mr), "ibv_dereg_mr", null);
    }

    /**
     * {@code ibv_create_qp(3)} of type {@code IBV_QPT_UD}, one SGE per work request each way.
     *
     * @throws IllegalArgumentException if a depth is not 1..8192
     */
    @Override
    public QueuePairNumbers createUdQp(long pd, long sendCq, long recvCq, int maxSendWr, int maxRecvWr) {
        Ranges.check("max_send_wr", maxSendWr, 1, MAX_QP_WR);
        Ranges.check("max_recv_wr", maxRecvWr, 1, MAX_QP_WR);
        long[] qp = new long[1];
        int[] qpn = new int[1];
        check(NativeVerbs.efa_ah_create_ud_qp(pd, sendCq, recvCq, maxSendWr, maxRecvWr, qp, qpn), "ibv_create_qp",
                "UD, max_send_wr " + maxSendWr + ", max_recv_wr " + maxRecvWr);
        return new QueuePairNumbers(qp[0], qpn[0]);
    }

    /**
     * {@code ibv_modify_qp(3)} RESET to INIT, RTR and RTS. The Q_Key is passed as the 32 bits
     * it holds.
     *
     * @throws IllegalArgumentException if {@code portNum} is not 1..255 or {@code pkeyIndex} not 0..65535
     */
    @Override
    public void activateUdQp(long qp, int portNum, int pkeyIndex, int qkey) {
        checkPort(portNum);
        Ranges.check("pkey_index", pkeyIndex, 0, 0xFFFF);
        check(NativeVerbs.efa_ah_activate_ud_qp(qp, portNum, pkeyIndex, qkey), "ibv_modify_qp",
                "UD QP to RTS on port " + portNum + ", pkey_index " + pkeyIndex);
    }

    @Override
    public void destroyQp(long qp) {
        check(NativeVerbs.efa_ah_destroy_qp(qp), "ibv_destroy_qp", null);
    }

    /**
     * {@code ibv_post_send(3)}: one signaled {@code IBV_WR_SEND}. The stub checks that the range
     * lies inside the MR (EINVAL otherwise).
     *
     * @throws IllegalArgumentException if {@code remoteQpn} is not 24 bits or the range is negative
     */
    @Override
    public void postSend(long qp, long ah, int remoteQpn, int remoteQkey, long mr, int offset, int length, long wrId) {
        Ranges.check("remote_qpn", remoteQpn, 0, MAX_QPN);
        Ranges.check("offset", offset, 0, Integer.MAX_VALUE);
        Ranges.check("length", length, 0, Integer.MAX_VALUE);
        int rc = NativeVerbs.efa_ah_post_send(qp, ah, remoteQpn, remoteQkey, mr, offset, length, wrId);
        if (rc != 0) {
            // The detail is built only on failure: this is the per-message path.
            throw error("ibv_post_send", rc, length + " bytes at " + offset + " to qpn 0x" + Integer.toHexString(remoteQpn));
        }
    }

    /**
     * {@code ibv_post_recv(3)} of one buffer; the stub checks that it lies inside the MR.
     *
     * @throws IllegalArgumentException if the range is negative
     */
    @Override
    public void postReceive(long qp, long mr, int offset, int length, long wrId) {
        Ranges.check("offset", offset, 0, Integer.MAX_VALUE);
        // 0 is refused: EFA would take a receive slot for it that never completes.
        Ranges.check("length", length, 1, Integer.MAX_VALUE);
        int rc = NativeVerbs.efa_ah_post_recv(qp, mr, offset, length, wrId);
        if (rc != 0) {
            throw error("ibv_post_recv", rc, length + " bytes at " + offset);
        }
    }

    /**
     * One {@code ibv_post_recv(3)} of up to 64 chained receives; more are posted 64 at a time.
     *
     * @throws IllegalArgumentException if {@code count} is not 1..the arrays' length, or a number is negative
     */
    @Override
    public int postReceives(long qp, long mr, int[] offsets, int length, long[] wrIds, int count) {
        Ranges.check("count", count, 1, Math.min(offsets.length, wrIds.length));
        Ranges.check("length", length, 0, Integer.MAX_VALUE);
        Scratch scratch = Scratch.get();
        ByteBuffer receives = scratch.receiveView;
        int done = 0;
        while (done < count) {
            int n = Math.min(count - done, MAX_BATCH);
            // Into the thread's native arrays, read in place by the stub: no copy of JavaCPP's in and out.
            for (int i = 0; i < n; i++) {
                receives.putInt(i * Integer.BYTES, offsets[done + i]);
                receives.putLong(RECEIVE_WR_IDS + i * Long.BYTES, wrIds[done + i]);
            }
            int rc = NativeVerbs.efa_ah_post_recv_batch(qp, mr, scratch.receiveAddress, length,
                    scratch.receiveAddress + RECEIVE_WR_IDS, n);
            if (rc < 0) {
                if (done == 0) {
                    throw error("ibv_post_recv", rc, count + " receives of " + length + " bytes");
                }
                return done;
            }
            done += rc;
            if (rc < n) {
                return done;
            }
        }
        return done;
    }

    /**
     * One {@code ibv_post_send(3)} of up to 64 chained sends to one destination; more are posted 64
     * at a time. Copies the arrays into native requests first: the endpoint posts with
     * {@link SendRequests} instead.
     *
     * @throws IllegalArgumentException if {@code count} is not 1..the arrays' length, or a number is out of range
     */
    @Override
    public int postSends(long qp, long ah, int remoteQpn, int remoteQkey, long mr, int[] offsets, int[] lengths,
                         long[] wrIds, int count) {
        Ranges.check("count", count, 1, Math.min(offsets.length, Math.min(lengths.length, wrIds.length)));
        SendRequests requests = SendRequests.allocate(count);
        for (int i = 0; i < count; i++) {
            requests.set(i, offsets[i], lengths[i], wrIds[i]);
        }
        return postSends(qp, ah, remoteQpn, remoteQkey, mr, requests, count);
    }

    /**
     * One {@code ibv_post_send(3)} of up to 64 chained sends to one destination, the stub reading
     * the requests where they lie; more are posted 64 at a time. Allocates nothing and makes one
     * native call per 64 sends: the count posted is its return value. The requests' address is
     * the thread's {@link Scratch} last one's, when the same requests are posted again.
     *
     * @throws IllegalArgumentException if {@code count} is not 1..{@code requests.capacity()}, or
     *                                  {@code remoteQpn} is not 24 bits
     */
    @Override
    public int postSends(long qp, long ah, int remoteQpn, int remoteQkey, long mr, SendRequests requests, int count) {
        Ranges.check("remote_qpn", remoteQpn, 0, MAX_QPN);
        Ranges.check("count", count, 1, requests.capacity());
        long memory = Scratch.get().addressOf(requests.buffer());
        int done = 0;
        while (done < count) {
            int n = Math.min(count - done, MAX_BATCH);
            int rc = NativeVerbs.efa_ah_post_sends(qp, ah, remoteQpn, remoteQkey, mr,
                    memory + (long) done * SEND_REQUEST_BYTES, n);
            if (rc < 0) {
                if (done == 0) {
                    throw error("ibv_post_send", rc, count + " sends to qpn 0x" + Integer.toHexString(remoteQpn));
                }
                return done;
            }
            done += rc;
            if (rc < n) {
                return done;
            }
        }
        return done;
    }

    /** {@code sizeof(struct efa_ah_send_req)}. */
    private static final int SEND_REQUEST_BYTES = 16;

    /** {@code EFA_AH_MAX_BATCH}: work requests one batched call of the stub takes. */
    private static final int MAX_BATCH = 64;

    /** Where a {@link Scratch}'s receive batch keeps its {@code wr_id}s: after 64 offsets of 4 bytes. */
    private static final int RECEIVE_WR_IDS = MAX_BATCH * Integer.BYTES;

    /**
     * {@code ibv_poll_cq(3)} for up to {@code min(into.length, 64)} completions.
     *
     * <p>Allocates nothing in steady state: each polling thread has its own native array of
     * completion records (made on its first poll, freed with the thread), read back through a
     * direct-buffer view of it, so a poll is one native call, whose value is the count, and four
     * long reads per completion.
     *
     * @throws NullPointerException if {@code into} or one of the holders to be filled is null; the
     *                              completions that poll took are handed out first by the CQ's next poll
     */
    @Override
    public int pollCq(long cq, WorkCompletion[] into) {
        Objects.requireNonNull(into, "into");
        int capacity = Math.min(into.length, Scratch.CAPACITY);
        if (capacity == 0) {
            return 0;
        }
        if (UnclaimedCompletions.any()) {
            int kept = UnclaimedCompletions.handOut(cq, into, capacity, false);
            if (kept >= 0) {
                return kept;
            }
        }
        Scratch scratch = Scratch.get();
        int n = NativeVerbs.efa_ah_poll_cq_records(cq, scratch.recordsAddress, capacity);
        if (n < 0) {
            throw error("ibv_poll_cq", n, null);
        }
        ByteBuffer records = scratch.recordView;
        // The holders are checked once the count is known (see UnclaimedCompletions).
        int hole = UnclaimedCompletions.firstNull(into, n);
        if (hole >= 0) {
            throw UnclaimedCompletions.keep(cq, records, null, n, hole);
        }
        for (int i = 0; i < n; i++) {
            readRecord(records, i, into[i]);
        }
        return n;
    }

    /**
     * {@code ibv_init_ah_from_wc(3)}: the AH attributes back to the sender of the received
     * completion {@code wc}, whose 40-byte GRH the stub reads in place at {@code grhOffset} in
     * {@code mr} (on RoCE v2 over IPv4 it holds the IPv4 header in its last 20 bytes, which
     * libibverbs recognises).
     *
     * @throws NullPointerException     if {@code wc} is null
     * @throws IllegalArgumentException if {@code portNum}, {@code grhOffset} or a field of
     *                                  {@code wc} is out of range
     * @throws VerbsException           EINVAL if the GRH does not lie inside the MR, else the
     *                                  errno of {@code ibv_init_ah_from_wc}
     */
    @Override
    public AddressHandleAttributes initAhFromWc(long context, int portNum, WorkCompletion wc, long mr, int grhOffset) {
        Objects.requireNonNull(wc, "wc");
        checkPort(portNum);
        Ranges.check("grh offset", grhOffset, 0, Integer.MAX_VALUE);
        Ranges.check("pkey_index", wc.pkeyIndex, 0, 0xFFFF);
        Ranges.check("slid", wc.slid, 0, 0xFFFF);
        Ranges.check("sl", wc.sl, 0, AddressHandleAttributes.MAX_SL);
        Ranges.check("dlid_path_bits", wc.dlidPathBits, 0, 0xFF);
        Scratch scratch = Scratch.get();
        // Slot 0 of this thread's poll array is free here: a poll's results were copied out before it returned.
        write(scratch.view, 0, wc);
        NativeVerbs.AhAttr a = scratch.ahAttr;
        check(NativeVerbs.efa_ah_init_ah_from_wc(context, portNum, scratch.wc, mr, grhOffset, a),
                "ibv_init_ah_from_wc", "port " + portNum);
        AddressHandleAttributes.Builder b = AddressHandleAttributes.builder()
                .flowLabel(a.flow_label()).sgidIndex(a.sgid_index()).hopLimit(a.hop_limit())
                .trafficClass(a.traffic_class()).dlid(a.dlid()).sl(a.sl()).srcPathBits(a.src_path_bits())
                .staticRate(a.static_rate()).portNum(a.port_num()).isGlobal(a.is_global() == 1);
        if (a.is_global() == 1) {
            byte[] dgid = new byte[Gid.LENGTH];
            a.dgid().get(dgid, 0, Gid.LENGTH);
            b.dgid(Gid.of(dgid));
        }
        return b.build();
    }

    /** {@code ibv_query_qp(3)} of {@code IBV_QP_STATE}. */
    @Override
    public int queryQpState(long qp) {
        int[] state = new int[1];
        check(NativeVerbs.efa_ah_query_qp_state(qp, state), "ibv_query_qp", null);
        return state[0];
    }

    /** {@code ibv_modify_qp(3)} to {@code IBV_QPS_RESET}. */
    @Override
    public void resetQp(long qp) {
        check(NativeVerbs.efa_ah_reset_qp(qp), "ibv_modify_qp", "to RESET");
    }

    /** {@code ibv_modify_qp(3)} to {@code IBV_QPS_ERR}. */
    @Override
    public void moveQpToError(long qp) {
        check(NativeVerbs.efa_ah_error_qp(qp), "ibv_modify_qp", "to ERR");
    }

    /**
     * The EFA extensions through libefa; each call answers EOPNOTSUPP where libefa lacks it or
     * the device is not EFA.
     */
    @Override
    public org.efaah.verbs.spi.EfaVerbs efa() {
        return efaVerbs;
    }

    private final NativeEfaVerbs efaVerbs = new NativeEfaVerbs();

    /*
     * One completion record of efa_ah_cqe_pack (the layout is in efa_ah_native.h): four long reads and
     * shifts, instead of twelve bounds-checked getInt calls on struct efa_ah_wc. Returns whether the
     * stub read the sender's GID (EFA_AH_CQE_SGID_VALID).
     */
    static boolean readRecord(ByteBuffer records, int index, WorkCompletion wc) {
        int base = index * NativeVerbs.CQE_WORDS * Long.BYTES;
        long w1 = records.getLong(base + 8);
        long w2 = records.getLong(base + 16);
        long w3 = records.getLong(base + 24);
        wc.wrId = records.getLong(base);
        wc.byteLength = (int) w1;
        wc.status = (int) (w1 >>> 32) & 0xFF;
        wc.opcode = (int) (w1 >>> 40) & 0xFF;
        wc.wcFlags = (int) (w1 >>> 48);
        wc.qpNum = (int) w2 & 0xFFFFFF;
        wc.srcQp = (int) (w2 >>> 24) & 0xFFFFFF;
        wc.slid = (int) (w2 >>> 48);
        wc.vendorError = (int) w3;
        wc.pkeyIndex = (int) (w3 >>> 32) & 0xFFFF;
        wc.dlidPathBits = (int) (w3 >>> 48) & 0xFF;
        wc.sl = (int) (w3 >>> 56) & 0xF;
        return w3 < 0;
    }

    private static void write(ByteBuffer view, int base, WorkCompletion wc) {
        view.putLong(base + NativeVerbs.Wc.WR_ID, wc.wrId);
        view.putInt(base + NativeVerbs.Wc.STATUS, wc.status);
        view.putInt(base + NativeVerbs.Wc.OPCODE, wc.opcode);
        view.putInt(base + NativeVerbs.Wc.VENDOR_ERR, wc.vendorError);
        view.putInt(base + NativeVerbs.Wc.BYTE_LEN, wc.byteLength);
        view.putInt(base + NativeVerbs.Wc.QP_NUM, wc.qpNum);
        view.putInt(base + NativeVerbs.Wc.SRC_QP, wc.srcQp);
        view.putInt(base + NativeVerbs.Wc.WC_FLAGS, wc.wcFlags);
        view.putInt(base + NativeVerbs.Wc.PKEY_INDEX, wc.pkeyIndex);
        view.putInt(base + NativeVerbs.Wc.SLID, wc.slid);
        view.putInt(base + NativeVerbs.Wc.SL, wc.sl);
        view.putInt(base + NativeVerbs.Wc.DLID_PATH_BITS, wc.dlidPathBits);
    }

    /**
     * Native scratch memory of one thread: the completion array {@link #pollCq} fills and
     * {@link #initAhFromWc} passes, the count, the AH attributes read back, the receive batch
     * {@link #postReceives} passes, and the address of the send requests last posted. It owns only
     * its own malloc'd memory, which JavaCPP frees once the thread and this object are gone.
     */
    static final class Scratch {
        /** Completions one poll returns at most. */
        static final int CAPACITY = 64;
        private static final ThreadLocal<Scratch> PER_THREAD = ThreadLocal.withInitial(Scratch::new);

        final NativeVerbs.Wc wc = new NativeVerbs.Wc(CAPACITY);
        final ByteBuffer view = wc.capacity(CAPACITY).asByteBuffer().order(ByteOrder.nativeOrder());
        private final IntPointer count = new IntPointer(1L);
        final ByteBuffer countView = count.asByteBuffer().order(ByteOrder.nativeOrder());
        final long countAddress = count.address();
        final NativeVerbs.AhAttr ahAttr = new NativeVerbs.AhAttr();
        final BytePointer sgids = new BytePointer(CAPACITY * 16L);
        final org.bytedeco.javacpp.LongPointer records =
                new org.bytedeco.javacpp.LongPointer((long) CAPACITY * NativeVerbs.CQE_WORDS);
        final ByteBuffer recordView = records.asByteBuffer().order(ByteOrder.nativeOrder());
        /*
         * The arrays' addresses, passed to the poll stubs as plain longs (no JNI field reads). The
         * memory lives as long as this object, which the thread's ThreadLocal holds while the thread
         * polls.
         */
        final long recordsAddress = records.address();
        final long sgidsAddress = sgids.address();
        final ByteBuffer sgidView = sgids.asByteBuffer();
        /** A receive batch for {@link #postReceives}: 64 offsets of 4 bytes, then 64 wr_ids of 8. */
        private final BytePointer receives = new BytePointer((long) MAX_BATCH * (Integer.BYTES + Long.BYTES));
        final ByteBuffer receiveView = receives.asByteBuffer().order(ByteOrder.nativeOrder());
        final long receiveAddress = receives.address();
        /*
         * The last send requests this thread posted and their address: found once by JNI, then
         * reused while the thread posts the same requests (an endpoint's are made once). Held, so
         * that the memory cannot be freed and its address given to other requests while named here:
         * at most one batch's memory a thread outlives its endpoint by.
         */
        private ByteBuffer requests;
        private long requestsAddress;

        static Scratch get() {
            return PER_THREAD.get();
        }

        /** {@return the address of {@code direct}, a direct buffer at position 0} */
        long addressOf(ByteBuffer direct) {
            if (direct != requests) {
                long address = new Pointer(direct).address();
                if (address == 0) {
                    throw new IllegalArgumentException("requests: not direct memory");
                }
                requestsAddress = address;
                requests = direct;
            }
            return requestsAddress;
        }
    }

    /**
     * {@code ibv_query_gid_ex(3)}'s {@code gid_type}.
     *
     * @throws VerbsException ENODATA for an empty slot; EOPNOTSUPP where libibverbs has no {@code ibv_query_gid_ex}
     */
    @Override
    public org.efaah.verbs.GidType queryGidType(long context, int portNum, int index) {
        checkPort(portNum);
        int[] type = new int[1];
        int rc = NativeVerbs.efa_ah_query_gid_type(context, portNum, index, type);
        if (rc == -org.efaah.verbs.Errno.EOPNOTSUPP.value()) {
            throw new VerbsException("ibv_query_gid_ex", org.efaah.verbs.Errno.EOPNOTSUPP, "this libibverbs has no ibv_query_gid_ex");
        }
        check(rc, "ibv_query_gid_ex", "port " + portNum + " index " + index);
        return org.efaah.verbs.GidType.of(type[0]);
    }

    /** Events read per wait at most; more pending ones come with the next wait, at once. */
    private static final int EVENTS_PER_WAIT = 32;

    @Override
    public long openAsyncEvents(long context) {
        long[] channel = new long[1];
        check(NativeVerbs.efa_ah_async_open(context, channel), "ibv_get_async_event", "making async_fd non-blocking");
        return channel[0];
    }

    /**
     * Every pending event, copied and acknowledged in C. A device removed by a driver that sends
     * no event for it (rxe: its uverbs node just disappears while {@code rdma link delete} waits
     * for every context to close) is reported as one {@code IBV_EVENT_DEVICE_FATAL}.
     */
    @Override
    public List<org.efaah.verbs.spi.AsyncEvent> awaitAsyncEvents(long channel, int timeoutMillis) {
        int[] types = new int[EVENTS_PER_WAIT];
        int[] ports = new int[EVENTS_PER_WAIT];
        int[] count = new int[1];
        int rc = NativeVerbs.efa_ah_async_wait(channel, timeoutMillis, types, ports, EVENTS_PER_WAIT, count);
        if (rc == -org.efaah.verbs.Errno.ENODEV.value()) {
            // Removed by a driver that sends no event for it (rxe): report what it amounts to.
            return List.of(new org.efaah.verbs.spi.AsyncEvent(org.efaah.verbs.DeviceEvent.Kind.DEVICE_FATAL.value(), 0));
        }
        check(rc, "ibv_get_async_event", null);
        List<org.efaah.verbs.spi.AsyncEvent> events = new ArrayList<>(count[0]);
        for (int i = 0; i < count[0]; i++) {
            events.add(new org.efaah.verbs.spi.AsyncEvent(types[i], ports[i]));
        }
        return events;
    }

    @Override
    public void wakeAsyncEvents(long channel) {
        check(NativeVerbs.efa_ah_async_wake(channel), "efa_ah_async_wake", null);
    }

    @Override
    public void closeAsyncEvents(long channel) {
        check(NativeVerbs.efa_ah_async_close(channel), "efa_ah_async_close", null);
    }

    /**
     * {@code ibv_query_gid_ex(3)}'s {@code ndev_ifindex}.
     *
     * @throws VerbsException ENODATA for an empty slot; EOPNOTSUPP where libibverbs has no {@code ibv_query_gid_ex}
     */
    @Override
    public int queryGidNetdev(long context, int portNum, int index) {
        checkPort(portNum);
        int[] ifindex = new int[1];
        int rc = NativeVerbs.efa_ah_query_gid_ndev(context, portNum, index, ifindex);
        if (rc == -org.efaah.verbs.Errno.EOPNOTSUPP.value()) {
            throw new VerbsException("ibv_query_gid_ex", org.efaah.verbs.Errno.EOPNOTSUPP, "this libibverbs has no ibv_query_gid_ex");
        }
        check(rc, "ibv_query_gid_ex", "port " + portNum + " index " + index);
        return ifindex[0];
    }

    /** Every native provider reads the same kernel: one network reader per process. */
    @Override
    public Object networkSource() {
        return NativeVerbsProvider.class;
    }

    /** Network changes read per wait at most; more pending ones come with the next wait, at once. */
    private static final int CHANGES_PER_WAIT = 64;

    @Override
    public long openNetworkChanges() {
        long[] channel = new long[1];
        check(NativeVerbs.efa_ah_net_open(channel), "socket(NETLINK_ROUTE)", "subscribing to link and neighbour changes");
        return channel[0];
    }

    @Override
    public void requestNetworkDump(long channel, boolean links) {
        check(NativeVerbs.efa_ah_net_request_dump(channel,
                        links ? NativeVerbs.NetEvent.DUMP_LINKS : NativeVerbs.NetEvent.DUMP_NEIGHBOURS),
                "sendto(NETLINK_ROUTE)", links ? "RTM_GETLINK dump" : "RTM_GETNEIGH dump");
    }

    @Override
    public List<org.efaah.verbs.spi.NetworkChange> awaitNetworkChanges(long channel, int timeoutMillis) {
        int[] count = new int[1];
        try (NativeVerbs.NetEvent events = new NativeVerbs.NetEvent(CHANGES_PER_WAIT)) {
            check(NativeVerbs.efa_ah_net_wait(channel, timeoutMillis, events, CHANGES_PER_WAIT, count),
                    "recvmsg(NETLINK_ROUTE)", null);
            ByteBuffer view = events.capacity(CHANGES_PER_WAIT).asByteBuffer().order(ByteOrder.nativeOrder());
            List<org.efaah.verbs.spi.NetworkChange> changes = new ArrayList<>(count[0]);
            for (int i = 0; i < count[0]; i++) {
                org.efaah.verbs.spi.NetworkChange c = networkChange(view, i * NativeVerbs.NetEvent.SIZE);
                if (c != null) {
                    changes.add(c);
                }
            }
            return changes;
        }
    }

    private static org.efaah.verbs.spi.NetworkChange networkChange(ByteBuffer view, int base) {
        int type = view.getInt(base + NativeVerbs.NetEvent.TYPE);
        int ifindex = view.getInt(base + NativeVerbs.NetEvent.IFINDEX);
        int state = view.getInt(base + NativeVerbs.NetEvent.STATE);
        boolean fromDump = (view.getInt(base + NativeVerbs.NetEvent.FLAGS) & NativeVerbs.NetEvent.FROM_DUMP) != 0;
        byte[] lladdr = new byte[Math.min(32, view.getInt(base + NativeVerbs.NetEvent.LLADDR_LEN))];
        view.get(base + NativeVerbs.NetEvent.LLADDR, lladdr);
        switch (type) {
            case NativeVerbs.NetEvent.DUMP_DONE:
                return org.efaah.verbs.spi.NetworkChange.mark(
                        (view.getInt(base + NativeVerbs.NetEvent.FLAGS) & NativeVerbs.NetEvent.DUMP_INTR) != 0
                                ? org.efaah.verbs.spi.NetworkChange.Type.DUMP_INTERRUPTED
                                : org.efaah.verbs.spi.NetworkChange.Type.DUMP_DONE);
            case NativeVerbs.NetEvent.LOST:
                return org.efaah.verbs.spi.NetworkChange.mark(org.efaah.verbs.spi.NetworkChange.Type.LOST);
            case NativeVerbs.NetEvent.NEWLINK, NativeVerbs.NetEvent.DELLINK: {
                byte[] name = new byte[NativeVerbs.NetEvent.IFNAME_MAX];
                view.get(base + NativeVerbs.NetEvent.IFNAME, name);
                return org.efaah.verbs.spi.NetworkChange.link(type == NativeVerbs.NetEvent.DELLINK, ifindex,
                        cString(name, 0, name.length), state, view.getInt(base + NativeVerbs.NetEvent.MTU), lladdr, fromDump);
            }
            case NativeVerbs.NetEvent.NEWNEIGH, NativeVerbs.NetEvent.DELNEIGH: {
                byte[] address = new byte[view.getInt(base + NativeVerbs.NetEvent.ADDR_LEN) == 4 ? 4 : 16];
                view.get(base + NativeVerbs.NetEvent.ADDR, address);
                return org.efaah.verbs.spi.NetworkChange.neighbour(type == NativeVerbs.NetEvent.DELNEIGH, ifindex, address,
                        state, lladdr, fromDump);
            }
            default:
                return null;
        }
    }

    @Override
    public void wakeNetworkChanges(long channel) {
        check(NativeVerbs.efa_ah_net_wake(channel), "efa_ah_net_wake", null);
    }

    @Override
    public void closeNetworkChanges(long channel) {
        check(NativeVerbs.efa_ah_net_close(channel), "efa_ah_net_close", null);
    }

    @Override
    public long createCompletionChannel(long context) {
        long[] channel = new long[1];
        check(NativeVerbs.efa_ah_channel_create(context, channel), "ibv_create_comp_channel", null);
        return channel[0];
    }

    /**
     * {@code ibv_create_cq(3)} on {@code channel}.
     *
     * @throws IllegalArgumentException if {@code entries} is not 1..65536
     */
    @Override
    public long createCq(long context, int entries, long channel) {
        Ranges.check("cqe", entries, 1, MAX_CQE);
        long[] cq = new long[1];
        int rc = NativeVerbs.efa_ah_channel_create_cq(context, channel, entries, cq);
        check(rc, "ibv_create_cq", LockedMemory.detail(rc, "cqe " + entries + ", with a completion channel"));
        return cq[0];
    }

    @Override
    public void requestCqNotification(long cq) {
        check(NativeVerbs.efa_ah_req_notify_cq(cq), "ibv_req_notify_cq", null);
    }

    /** The wait runs in C ({@code poll(2)} on the channel's fd and the stop eventfd); allocates nothing. */
    @Override
    public int awaitCqEvents(long channel, int timeoutMillis) {
        Scratch scratch = Scratch.get();
        check(NativeVerbs.efa_ah_channel_wait(channel, timeoutMillis, scratch.countAddress), "ibv_get_cq_event", null);
        return scratch.countView.getInt(0); // a view's read, where IntPointer.get is a JNI call
    }

    @Override
    public void stopCompletionChannel(long channel) {
        check(NativeVerbs.efa_ah_channel_stop(channel), "efa_ah_channel_stop", null);
    }

    @Override
    public void wakeCompletionChannel(long channel) {
        check(NativeVerbs.efa_ah_channel_wake(channel), "efa_ah_channel_wake", null);
    }

    @Override
    public int completionChannelFd(long channel) {
        int[] fd = new int[1];
        check(NativeVerbs.efa_ah_channel_fd(channel, fd), "efa_ah_channel_fd", null);
        return fd[0];
    }

    @Override
    public void destroyCompletionChannel(long channel) {
        check(NativeVerbs.efa_ah_channel_destroy(channel), "ibv_destroy_comp_channel", null);
    }

    /** epoll(7) in C (efa_ah_poller.c); only the poller thread calls it, so arrays are fine here. */
    @Override
    public long createChannelPoller() {
        long[] poller = new long[1];
        check(NativeVerbs.efa_ah_poller_create(poller), "epoll_create1", null);
        return poller[0];
    }

    @Override
    public void armChannelPoller(long poller, int fd) {
        check(NativeVerbs.efa_ah_poller_arm(poller, fd), "epoll_ctl", "fd " + fd);
    }

    @Override
    public int awaitChannelPoller(long poller, int timeoutMillis, int[] ready) {
        int[] count = new int[1];
        check(NativeVerbs.efa_ah_poller_wait(poller, timeoutMillis, ready, ready.length, count), "epoll_wait", null);
        return count[0];
    }

    @Override
    public void wakeChannelPoller(long poller) {
        check(NativeVerbs.efa_ah_poller_wake(poller), "efa_ah_poller_wake", null);
    }

    @Override
    public void destroyChannelPoller(long poller) {
        check(NativeVerbs.efa_ah_poller_destroy(poller), "efa_ah_poller_destroy", null);
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
