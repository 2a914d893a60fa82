package org.efaah.verbs;

import org.efaah.verbs.spi.EfaVerbs;

/**
 * What {@code efadv_query_device(3)} reports about an EFA device ({@code struct efadv_device_attr}
 * in {@code efadv.h}), obtained from {@link EfaVerbs#queryDevice}.
 *
 * @param maxSqWr          {@code max_sq_wr}: send work requests a QP holds at most
 * @param maxRqWr          {@code max_rq_wr}: receive work requests a QP holds at most
 * @param maxSqSge         {@code max_sq_sge}
 * @param maxRqSge         {@code max_rq_sge}
 * @param inlineBufferSize {@code inline_buf_size}, bytes
 * @param deviceCaps       {@code device_caps}: a set of the {@code CAPS_*} bits below
 * @param maxRdmaSize      {@code max_rdma_size}, bytes
 * @param inlineBufferSizeEx {@code inline_buf_size_ex}, bytes (rdma-core 63 and later; 0 where
 *                         libefa is older)
 */
public record EfaDeviceAttributes(int maxSqWr, int maxRqWr, int maxSqSge, int maxRqSge, int inlineBufferSize,
                                  int deviceCaps, int maxRdmaSize, int inlineBufferSizeEx) {
    /** {@code EFADV_DEVICE_ATTR_CAPS_RDMA_READ}. */
    public static final int CAPS_RDMA_READ = 1;
    /** {@code EFADV_DEVICE_ATTR_CAPS_RNR_RETRY}: an SRD QP's {@code rnr_retry} can be set at RTR to RTS. */
    public static final int CAPS_RNR_RETRY = 1 << 1;
    /** {@code EFADV_DEVICE_ATTR_CAPS_CQ_WITH_SGID}: {@code efadv_create_cq} accepts {@code EFADV_WC_EX_WITH_SGID}. */
    public static final int CAPS_CQ_WITH_SGID = 1 << 2;
    /** {@code EFADV_DEVICE_ATTR_CAPS_RDMA_WRITE}. */
    public static final int CAPS_RDMA_WRITE = 1 << 3;
    /** {@code EFADV_DEVICE_ATTR_CAPS_UNSOLICITED_WRITE_RECV}. */
    public static final int CAPS_UNSOLICITED_WRITE_RECV = 1 << 4;

    /**
     * The attributes of a libefa that reports no {@code inline_buf_size_ex}.
     *
     * @param maxSqWr          {@code max_sq_wr}
     * @param maxRqWr          {@code max_rq_wr}
     * @param maxSqSge         {@code max_sq_sge}
     * @param maxRqSge         {@code max_rq_sge}
     * @param inlineBufferSize {@code inline_buf_size}, bytes
     * @param deviceCaps       {@code device_caps}
     * @param maxRdmaSize      {@code max_rdma_size}, bytes
     */
    public EfaDeviceAttributes(int maxSqWr, int maxRqWr, int maxSqSge, int maxRqSge, int inlineBufferSize,
                               int deviceCaps, int maxRdmaSize) {
        this(maxSqWr, maxRqWr, maxSqSge, maxRqSge, inlineBufferSize, deviceCaps, maxRdmaSize, 0);
    }

    /**
     * Whether the device lets an SRD QP's {@code rnr_retry} be set.
     *
     * @return whether {@link #CAPS_RNR_RETRY} is set
     */
    public boolean supportsRnrRetry() {
        return (deviceCaps & CAPS_RNR_RETRY) != 0;
    }

    /**
     * Whether a CQ can report the sender's GID.
     *
     * @return whether {@link #CAPS_CQ_WITH_SGID} is set
     */
    public boolean supportsCqWithSgid() {
        return (deviceCaps & CAPS_CQ_WITH_SGID) != 0;
    }
}
