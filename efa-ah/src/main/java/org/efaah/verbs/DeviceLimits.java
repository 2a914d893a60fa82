package org.efaah.verbs;

/**
 * The queue, memory and capability fields of {@code struct ibv_device_attr} (from
 * {@code ibv_query_device(3)}), named as there; {@code ibv_devinfo -v} prints them. Counts are
 * the most of each object the device holds at once.
 *
 * @param maxMrSize      {@code max_mr_size}: the largest memory region, bytes (a uint64)
 * @param pageSizeCap    {@code page_size_cap}: the page sizes the device supports, one bit each (a uint64)
 * @param maxQp          {@code max_qp}
 * @param maxQpWr        {@code max_qp_wr}: work requests per queue
 * @param deviceCapFlags {@code device_cap_flags}: {@code IBV_DEVICE_*} bits (a uint32)
 * @param maxSge         {@code max_sge}: scatter/gather entries per work request
 * @param maxSgeRd       {@code max_sge_rd}: scatter/gather entries per RDMA read
 * @param maxCq          {@code max_cq}
 * @param maxCqe         {@code max_cqe}: entries per completion queue
 * @param maxMr          {@code max_mr}
 * @param maxMw          {@code max_mw}
 * @param maxFmr         {@code max_fmr}
 * @param maxMapPerFmr   {@code max_map_per_fmr}
 * @param maxSrq         {@code max_srq}
 * @param maxSrqWr       {@code max_srq_wr}
 * @param maxSrqSge      {@code max_srq_sge}
 */
public record DeviceLimits(long maxMrSize, long pageSizeCap, int maxQp, int maxQpWr, int deviceCapFlags, int maxSge,
                           int maxSgeRd, int maxCq, int maxCqe, int maxMr, int maxMw, int maxFmr, int maxMapPerFmr,
                           int maxSrq, int maxSrqWr, int maxSrqSge) {
}
