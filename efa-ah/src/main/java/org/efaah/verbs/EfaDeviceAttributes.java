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

    /*
     * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
     * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
     * NoObjectMethodsTest). Same meaning and format as the generated ones.
     */
    @Override
    public boolean equals(Object o) {
        return o == this || o instanceof EfaDeviceAttributes that && that.maxSqWr == maxSqWr
                && that.maxRqWr == maxRqWr && that.maxSqSge == maxSqSge && that.maxRqSge == maxRqSge
                && that.inlineBufferSize == inlineBufferSize && that.deviceCaps == deviceCaps
                && that.maxRdmaSize == maxRdmaSize && that.inlineBufferSizeEx == inlineBufferSizeEx;
    }

    @Override
    public int hashCode() {
        int h = maxSqWr;
        h = 31 * h + maxRqWr;
        h = 31 * h + maxSqSge;
        h = 31 * h + maxRqSge;
        h = 31 * h + inlineBufferSize;
        h = 31 * h + deviceCaps;
        h = 31 * h + maxRdmaSize;
        h = 31 * h + inlineBufferSizeEx;
        return h;
    }

    @Override
    public String toString() {
        return new StringBuilder("EfaDeviceAttributes[maxSqWr=").append(maxSqWr)
                .append(", maxRqWr=").append(maxRqWr).append(", maxSqSge=").append(maxSqSge)
                .append(", maxRqSge=").append(maxRqSge).append(", inlineBufferSize=").append(inlineBufferSize)
                .append(", deviceCaps=").append(deviceCaps).append(", maxRdmaSize=").append(maxRdmaSize)
                .append(", inlineBufferSizeEx=").append(inlineBufferSizeEx).append(']').toString();
    }
}
