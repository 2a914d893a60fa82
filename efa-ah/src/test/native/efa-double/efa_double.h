/*
 * The EFA double: a test-only libibverbs.so.1 and libefa.so.1 that present EFA devices (PCI
 * vendor 0x1d0f) inside one process, so that every EFA-only path of the JNI library runs here,
 * on hosts without EFA. Loaded with LD_LIBRARY_PATH in place of rdma-core's libraries; never
 * shipped. The "fabric" is the process: a send is delivered, synchronously, to the QP its AH
 * and remote QPN name.
 *
 * Each EFA rule names the rdma-core (providers/efa/verbs.c, libibverbs) or kernel
 * (drivers/infiniband/hw/efa) function it follows. Where EFA's behaviour is unknown, both
 * outcomes are offered and an environment variable picks one:
 *   EFA_DOUBLE_ERR=none|flush        a QP moved to ERR flushes its posted work requests, or
 *                                    (none, the default) they end only when the QP is destroyed
 *                                    (efa_io_defs.h: FLUSHED is "flushed during QP destroy")
 *   EFA_DOUBLE_CQ_NOTIFICATIONS=1|0  the device supports CQ notifications (default 1): with 0 a
 *                                    CQ on a completion channel is refused EOPNOTSUPP
 *                                    (efa_create_cq_ex, rdma-core 94ed75b42)
 *   EFA_DOUBLE_LEN_ERR=rts|err       a receive too short for its datagram (LOC_LEN_ERR) leaves
 *                                    the QP in RTS (rts, the default) or moves it to ERR (err)
 *   EFA_DOUBLE_AHN=roundrobin|lowest a new AH's AHN: the next of 1..65534 in turn (roundrobin,
 *                                    the default: a freed AHN comes back 65533 creates later)
 *                                    or the lowest index of the device's AH table free (lowest:
 *                                    a destroyed AH's AHN is the next create's), below max_ah
 *                                    (efa_com_create_ah, efa_io_rx_cdesc.ah)
 *   EFA_DOUBLE_QP_ERR=cached|device  a QP the device puts in error: its state is written where
 *                                    libibverbs caches it (cached, the default: the next post
 *                                    fails EINVAL, a later move to ERR succeeds), or it is the
 *                                    device's alone (device): libefa's efa_post_send_validate and
 *                                    efa_post_recv_validate read the cached RTS and accept posts,
 *                                    which the device then flushes (EFA_DOUBLE_ERR=flush) or
 *                                    keeps; ibv_query_qp reads ERR from the device (and, as
 *                                    libibverbs' ibv_query_qp does, writes it to the cache); and
 *                                    the device refuses every ibv_modify_qp of that QP (EINVAL:
 *                                    the kernel's efa_modify_qp checks against its cached RTS,
 *                                    what the device then does is not documented)
 *   EFA_DOUBLE_RESET=forgets|keeps   what survives a move to RESET: nothing (forgets, the
 *                                    default: work posted is dropped uncompleted, the send
 *                                    queue's phase rewound), or what libefa and the device keep
 *                                    (keeps): libefa's efa_qp_init_indices rewinds the producer
 *                                    index and the slot pool but not sq.wq.phase, which
 *                                    efa_set_common_ctrl_flags writes into every send descriptor,
 *                                    so after an odd number of send-queue laps the device, which
 *                                    starts a reset queue over at phase 0, never runs a send of
 *                                    the reset QP (each is kept until a flush or the destroy);
 *                                    and the work outstanding at RESET completes (FLUSHED), its
 *                                    slots then handed back to a pool RESET rewound (an abort)
 * and, to shape the devices:
 *   EFA_DOUBLE_DEVICES=N             how many EFA devices (default 1, at most 8)
 *   EFA_DOUBLE_MAX_AH=N              the device's max_ah (default 1024, as the Java mock's:
 *                                    what an EFA device reports, MockConfig.DEFAULT_MAX_AH)
 *   EFA_DOUBLE_DEV_PATH=PATH         every device's dev_path (default a sysfs path this host
 *                                    lacks, /sys/class/infiniband_verbs/uverbsN)
 *   EFA_DOUBLE_RNR_RETRY_CAP=1|0     efadv reports the RNR_RETRY capability (default 1)
 *   EFA_DOUBLE_MAX_DEPTH=absent|device|smaller  efadv_get_max_sq_depth and efadv_get_max_rq_depth
 *                                    (EFA_1.5, rdma-core 63): absent, a libefa before 63, whose
 *                                    efa_check_qp_limits holds max_send_wr and max_recv_wr to
 *                                    max_sq_wr and max_rq_wr (the symbols stay in the version
 *                                    map, so both answer -EOPNOTSUPP, which the stub takes for
 *                                    a libefa without them); device (the default), rdma-core
 *                                    63's efa_calc_sq_max_depth (an LLQ of max_sq_wr 64-byte
 *                                    descriptors) and efa_calc_rq_max_depth (max_rq_wr over
 *                                    max_recv_sge), which the QP's depths are then held to;
 *                                    smaller, as device with depths 1024 and 2048, below
 *                                    max_sq_wr and max_rq_wr, so that a check against those
 *                                    alone shows
 * and, to shape what the device does to the traffic:
 *   EFA_DOUBLE_RNR_STALL=K:MS        a receiver that falls behind for a moment: once K datagrams
 *                                    have reached SRD QPs, for MS milliseconds every SRD QP shows
 *                                    no posted receive, so each send meets RNR (ended RNR at once
 *                                    with a finite rnr_retry, kept until the stall ends with 7);
 *                                    one line on stderr, when it ends, counts the sends it met
 *   EFA_DOUBLE_HOLD_SENDS=N          the first N sends of the process are held by the device:
 *                                    never delivered, never completed, until their QP is
 *                                    destroyed (or flushed at ERR with EFA_DOUBLE_ERR=flush)
 * Misuse that real rdma-core answers with a hang or memory corruption (destroying a CQ whose
 * events are unacknowledged; a completion polled across a RESET handing a slot back twice)
 * aborts with a message instead, so that a test run shows it.
 */
#ifndef EFA_DOUBLE_H
#define EFA_DOUBLE_H

#include <stdint.h>
#include <infiniband/verbs.h>
#include <infiniband/efadv.h>

#define EFA_DOUBLE_VENDOR_ID 0x1d0f
#define EFA_DOUBLE_VENDOR_PART_ID 0xefa1
/* A UD receive's 40-byte area before the payload (libfabric's DGRAM msg_prefix_size). */
#define EFA_DOUBLE_UD_PREFIX 40
/* slid when the receiver's PD holds no AH for the sender (efa_io_rx_cdesc.ah). */
#define EFA_DOUBLE_NO_AHN 0xFFFF

/*
 * The entry points libefa's double reaches into libibverbs' double with (exported, private):
 * a CQ with the sender's GID, an SRD QP, the device's efadv attributes and an AH's AHN.
 */
struct ibv_cq_ex *efa_double_create_cq(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *attr, int with_sgid);
struct efadv_cq *efa_double_efadv_cq(struct ibv_cq_ex *cq);
struct ibv_qp *efa_double_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr_ex *attr, int srd);
int efa_double_is_efa(struct ibv_context *ctx);
void efa_double_device_attr(struct ibv_context *ctx, struct efadv_device_attr *attr);
uint16_t efa_double_ahn(struct ibv_ah *ah);
/* EFA_DOUBLE_MAX_DEPTH's answers: a depth, -EINVAL beyond the device, or -EOPNOTSUPP where absent. */
int efa_double_max_sq_depth(struct ibv_context *ctx, uint32_t max_send_sge, uint32_t max_rdma_sge,
                            uint32_t max_inline_data, int inline_write);
int efa_double_max_rq_depth(struct ibv_context *ctx, uint32_t max_recv_sge);

#endif
