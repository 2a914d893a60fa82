/*
 * efa_ah_native: a flat C API over the few libibverbs/libefa calls efa-ah needs.
 *
 * Design rules, which the Java binding relies on:
 *  - Every function returns 0 on success or a negative errno. The errno is read in C right
 *    after the failing call, because nothing above this layer (JNI, the JVM) preserves errno.
 *  - Nothing aborts, prints or keeps per-call state: every function may be called from any
 *    thread at any time.
 *  - Verbs objects cross the boundary as uint64_t (the pointer value), never as something a
 *    garbage collector could own. A 0 handle or a NULL out-pointer gives -EINVAL.
 *  - Only libibverbs is linked. libefa is opened with dlopen() on first need, so this library
 *    loads on hosts without it; EFA-only results (the AHN) are then simply absent.
 *
 * This header deliberately includes no verbs or JNI header, so bindings need nothing but it.
 */
#ifndef EFA_AH_NATIVE_H
#define EFA_AH_NATIVE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Room for one device name, NUL included (the sysfs name limit of libibverbs). */
#define EFA_AH_NAME_MAX 64
/* Bytes in a GID. */
#define EFA_AH_GID_LEN 16
/* Bytes in a Global Routing Header as it lands at the start of a UD receive buffer. */
#define EFA_AH_GRH_LEN 40
/* The AHN reported where the device has none (non-EFA devices, or libefa missing). */
#define EFA_AH_NO_AHN (-1)
/* Bit of wc_flags saying a GRH is present (same value as IBV_WC_GRH). */
#define EFA_AH_WC_GRH 1u

/* ibv_query_device, ibv_get_device_name and efadv_query_device, reduced. */
struct efa_ah_device_attr {
    char name[EFA_AH_NAME_MAX];
    uint32_t vendor_id;
    uint32_t vendor_part_id;
    int32_t max_ah;
    int32_t max_pd;
    uint32_t phys_port_cnt;
    /* 1 when efadv_query_device answered for this context: the device is EFA. */
    uint32_t is_efa;
    /* The efadv_query_device fields; 0 unless is_efa. */
    uint32_t efa_max_sq_wr;
    uint32_t efa_max_rq_wr;
    uint32_t efa_max_sq_sge;
    uint32_t efa_max_rq_sge;
    uint32_t efa_inline_buf_size;
    uint32_t efa_device_caps;
    uint32_t efa_max_rdma_size;
    /* inline_buf_size_ex: 0 where libefa predates it (rdma-core 63). */
    uint32_t efa_inline_buf_size_ex;
    /* The rest of ibv_device_attr, as ibv_devinfo prints it; the GUIDs in host byte order. */
    int32_t transport_type;  /* enum ibv_transport_type of the device */
    char fw_ver[64];
    uint64_t node_guid;
    uint64_t sys_image_guid;
    uint64_t max_mr_size;
    uint64_t page_size_cap;
    uint32_t hw_ver;
    int32_t max_qp;
    int32_t max_qp_wr;
    uint32_t device_cap_flags;
    int32_t max_sge;
    int32_t max_sge_rd;
    int32_t max_cq;
    int32_t max_cqe;
    int32_t max_mr;
    int32_t max_qp_rd_atom;
    int32_t max_ee_rd_atom;
    int32_t max_res_rd_atom;
    int32_t max_qp_init_rd_atom;
    int32_t max_ee_init_rd_atom;
    uint32_t atomic_cap;     /* enum ibv_atomic_cap */
    int32_t max_ee;
    int32_t max_rdd;
    int32_t max_mw;
    int32_t max_raw_ipv6_qp;
    int32_t max_raw_ethy_qp;
    int32_t max_mcast_grp;
    int32_t max_mcast_qp_attach;
    int32_t max_total_mcast_qp_attach;
    int32_t max_fmr;
    int32_t max_map_per_fmr;
    int32_t max_srq;
    int32_t max_srq_wr;
    int32_t max_srq_sge;
    uint32_t max_pkeys;
    uint32_t local_ca_ack_delay;
};

/* ibv_query_port, reduced. */
struct efa_ah_port_attr {
    uint32_t state;          /* enum ibv_port_state */
    uint32_t link_layer;     /* IBV_LINK_LAYER_* */
    int32_t gid_tbl_len;
    uint32_t active_mtu;     /* bytes, from enum ibv_mtu; 0 if the enum value is unknown */
    uint32_t max_mtu;        /* bytes, likewise */
    uint32_t lid;
    uint32_t port_cap_flags;
    uint32_t max_msg_sz;     /* bytes: the largest message (on EFA, the largest datagram) */
    /* The rest of ibv_port_attr, as ibv_devinfo prints it. */
    uint32_t port_cap_flags2;
    uint32_t bad_pkey_cntr;
    uint32_t qkey_viol_cntr;
    uint32_t pkey_tbl_len;
    uint32_t sm_lid;
    uint32_t lmc;
    uint32_t max_vl_num;
    uint32_t sm_sl;
    uint32_t subnet_timeout;
    uint32_t init_type_reply;
    uint32_t active_width;
    uint32_t active_speed;   /* active_speed_ex where the headers have it and it is set (rdma-core 49) */
    uint32_t phys_state;
};

/*
 * struct ibv_ah_attr with its GRH flattened. Fields are uint32_t for easy binding; values wider
 * than the verbs field they go to (e.g. sl > 15) are rejected with -EINVAL, never truncated.
 */
struct efa_ah_ah_attr {
    uint8_t dgid[EFA_AH_GID_LEN];   /* network order */
    uint32_t flow_label;            /* 20 bits */
    uint32_t sgid_index;            /* 8 bits */
    uint32_t hop_limit;             /* 8 bits */
    uint32_t traffic_class;         /* 8 bits */
    uint32_t dlid;                  /* 16 bits */
    uint32_t sl;                    /* 4 bits */
    uint32_t src_path_bits;         /* 7 bits */
    uint32_t static_rate;           /* enum ibv_rate, 8 bits */
    uint32_t is_global;             /* 0 or 1 */
    uint32_t port_num;              /* 1..255 */
};

/*
 * Lists the devices. names receives up to capacity names, EFA_AH_NAME_MAX bytes each,
 * NUL-terminated; *count receives the number of devices present, which may exceed capacity
 * (call again with more room). No RDMA support in the kernel is not an error: *count is 0.
 * names may be NULL when capacity is 0.
 */
int efa_ah_device_list(char *names, uint32_t capacity, uint32_t *count);

/* Opens the device called name; -ENODEV if there is none. *context receives the handle. */
int efa_ah_open_device(const char *name, uint64_t *context);
int efa_ah_close_device(uint64_t context);

int efa_ah_query_device(uint64_t context, struct efa_ah_device_attr *attr);
int efa_ah_query_port(uint64_t context, uint32_t port_num, struct efa_ah_port_attr *attr);
/* gid receives EFA_AH_GID_LEN bytes. */
int efa_ah_query_gid(uint64_t context, uint32_t port_num, uint32_t index, uint8_t *gid);

int efa_ah_alloc_pd(uint64_t context, uint64_t *pd);
/* -EBUSY (from the kernel) while AHs or other objects of the PD exist. */
int efa_ah_dealloc_pd(uint64_t pd);

/*
 * Creates an AH; *ah receives the handle and *ahn the EFA AH number (0..65535), or
 * EFA_AH_NO_AHN when the device is not EFA or libefa is absent. If the device is EFA but its
 * AHN cannot be read, the AH is destroyed again and the error returned: an EFA AH without its
 * AHN is of no use to the caller.
 */
int efa_ah_create_ah(uint64_t pd, const struct efa_ah_ah_attr *attr, uint64_t *ah, int32_t *ahn);

/* On failure the AH still exists (libibverbs frees it only on success); retrying is safe. */
int efa_ah_destroy_ah(uint64_t ah);

/*
 * struct ibv_wc, reduced to what a UD endpoint reads, with fixed-width fields so that a binding
 * can read an array of them as plain memory (the layout is checked in efa_ah_native.c).
 */
struct efa_ah_wc {
    uint64_t wr_id;
    uint32_t status;          /* enum ibv_wc_status */
    uint32_t opcode;          /* enum ibv_wc_opcode */
    uint32_t vendor_err;
    uint32_t byte_len;
    uint32_t qp_num;
    uint32_t src_qp;
    uint32_t wc_flags;
    uint32_t pkey_index;
    uint32_t slid;
    uint32_t sl;
    uint32_t dlid_path_bits;
    uint32_t reserved;        /* 0; keeps the size a multiple of 8 */
};

/* Most work requests a UD QP queue may be created with (either direction). */
#define EFA_AH_MAX_QP_WR 8192u
/* Most CQEs a CQ may be created with. */
#define EFA_AH_MAX_CQE 65536u
/* Largest valid QP number (24 bits). */
#define EFA_AH_MAX_QPN 0xFFFFFFu

/* ibv_create_cq with cqe entries (1..EFA_AH_MAX_CQE), no completion channel, vector 0. */
int efa_ah_create_cq(uint64_t context, uint32_t cqe, uint64_t *cq);
/* -EBUSY (from the kernel) while a QP uses the CQ. */
int efa_ah_destroy_cq(uint64_t cq);

/*
 * ibv_reg_mr of length bytes at addr with IBV_ACCESS_LOCAL_WRITE only (the device writes
 * receives into it; nothing remote reaches it on UD). The memory must stay allocated until
 * efa_ah_dereg_mr: this layer cannot keep it alive.
 */
int efa_ah_reg_mr(uint64_t pd, uint64_t addr, uint64_t length, uint64_t *mr);
int efa_ah_dereg_mr(uint64_t mr);

/*
 * ibv_create_qp of type IBV_QPT_UD, one SGE each way, no inline data, every send signaled by
 * its own flag. *qp receives the handle (the QP is in RESET) and *qpn its 24-bit number.
 */
int efa_ah_create_ud_qp(uint64_t pd, uint64_t send_cq, uint64_t recv_cq, uint32_t max_send_wr,
                        uint32_t max_recv_wr, uint64_t *qp, uint32_t *qpn);

/*
 * ibv_modify_qp from RESET to INIT (port, P_Key index, Q_Key), RTR and RTS (send PSN 0). On
 * failure the QP is left in whatever state it reached; destroying it is always safe.
 */
int efa_ah_activate_ud_qp(uint64_t qp, uint32_t port_num, uint32_t pkey_index, uint32_t qkey);

/* efa_ah_activate_srd_qp's rnr_retry that leaves the QP's default (7 on EFA: retry without end). */
#define EFA_AH_RNR_RETRY_DEFAULT (-1)

/*
 * efa_ah_activate_ud_qp for an SRD QP (P_Key index 0), also setting rnr_retry (0..7, 7 meaning
 * retry without end) at RTR to RTS with IBV_QP_RNR_RETRY unless it is EFA_AH_RNR_RETRY_DEFAULT.
 * EFA accepts that only where efadv_query_device reports EFADV_DEVICE_ATTR_CAPS_RNR_RETRY. -EINVAL
 * for an rnr_retry outside those values.
 */
int efa_ah_activate_srd_qp(uint64_t qp, uint32_t port_num, uint32_t qkey, int32_t rnr_retry);
int efa_ah_destroy_qp(uint64_t qp);

/*
 * ibv_post_send of one signaled IBV_WR_SEND of length bytes at offset in mr, to (ah,
 * remote_qpn, remote_qkey). -EINVAL, before the QP is touched, if the range leaves the MR or
 * remote_qpn exceeds 24 bits.
 */
int efa_ah_post_send(uint64_t qp, uint64_t ah, uint32_t remote_qpn, uint32_t remote_qkey, uint64_t mr,
                     uint64_t offset, uint32_t length, uint64_t wr_id);

/*
 * ibv_post_recv of one buffer of length bytes at offset in mr; same range check. -EINVAL for
 * length 0: EFA would take a receive slot for it that never completes.
 */
int efa_ah_post_recv(uint64_t qp, uint64_t mr, uint64_t offset, uint32_t length, uint64_t wr_id);

/*
 * ibv_poll_cq for up to capacity completions into wc[0..capacity). *count receives how many
 * were filled (0 when none was ready). wc may be NULL only when capacity is 0.
 */
int efa_ah_poll_cq(uint64_t cq, struct efa_ah_wc *wc, uint32_t capacity, uint32_t *count);

/*
 * A completion as the Java side reads it: EFA_AH_CQE_WORDS native-order 64-bit words, one long
 * read each (issue 35: one pass, as efa_process_cqe fills one ibv_wc per CQE; no field read on its own).
 *   word 0: wr_id
 *   word 1: byte_len (bits 0-31) | status (32-39) | opcode (40-47) | wc_flags (48-63)
 *   word 2: qp_num (0-23) | src_qp (24-47) | slid (48-63)
 *   word 3: vendor_err (0-31) | pkey_index (32-47) | dlid_path_bits (48-55) | sl (56-59)
 *           | EFA_AH_CQE_SGID_VALID (63): the sender's GID is at sgids + 16 * i
 * Every verbs value fits its field (ibv_wc_status and ibv_wc_opcode end below 256, ibv_wc_flags below
 * 1 << 16, QPNs are 24 bits, sl 4); a wider one is cut to the field, never spills into the next.
 */
#define EFA_AH_CQE_WORDS 4u
#define EFA_AH_CQE_SGID_VALID (1ull << 63)
void efa_ah_cqe_pack(const struct efa_ah_wc *wc, int sgid_valid, uint64_t *record);

/*
 * efa_ah_poll_cq into records (EFA_AH_CQE_WORDS words each, capacity at most 64): returns how many
 * completions were read (0 when none was ready) or a negative errno, so that no count is read back
 * through a pointer.
 */
int efa_ah_poll_cq_records(uint64_t cq, uint64_t *records, uint32_t capacity);

/*
 * ibv_init_ah_from_wc: the AH attributes that reach the sender of the received completion *wc,
 * whose EFA_AH_GRH_LEN bytes of GRH are at grh_offset in mr (read there, not copied by the
 * caller). -EINVAL if the GRH would leave the MR or a field of *wc does not fit ibv_wc.
 */
int efa_ah_init_ah_from_wc(uint64_t context, uint32_t port_num, const struct efa_ah_wc *wc, uint64_t mr,
                           uint64_t grh_offset, struct efa_ah_ah_attr *attr);

/* 1 when libefa.so.1 was found and both efadv entry points resolved, else 0. */
int efa_ah_efadv_available(void);

/*
 * What the libefa.so.1 of this host offers, as a set of the bits below (0: no libefa.so.1). An
 * older libefa lacks the newer entry points; each family is used only if all of its are there,
 * and a call of a missing family answers -EOPNOTSUPP.
 */
#define EFA_AH_EFADV_LOADED 1u  /* libefa.so.1 was opened */
#define EFA_AH_EFADV_QUERY 2u   /* efadv_query_device, efadv_query_ah (EFA_1.1) */
#define EFA_AH_EFADV_CQ 4u      /* efadv_create_cq, efadv_cq_from_ibv_cq_ex (EFA_1.2) */
#define EFA_AH_EFADV_SRD 8u     /* efadv_create_qp_ex (EFA_1.1) */
#define EFA_AH_EFADV_DEPTH 16u  /* efadv_get_max_sq_depth, efadv_get_max_rq_depth (EFA_1.5, rdma-core 63) */
uint32_t efa_ah_efadv_families(void);

/* Bytes for an enum ibv_mtu value (1..5 -> 256..4096), 0 for any other value. */
uint32_t efa_ah_mtu_bytes(uint32_t ibv_mtu);

/*
 * The negative errno for a libibverbs return value rc and the errno read right after the call.
 * libibverbs mixes conventions: positive errno (most query/destroy calls), -1 with errno set
 * (ibv_query_gid), or a negative errno. A failure that left no errno reads as -EIO.
 */
int efa_ah_error_from_rc(int rc, int saved_errno);

/*
 * ibv_query_gid_ex: *type receives the enum ibv_gid_type of the GID at index (0 IB, 1 RoCE v1,
 * 2 RoCE v2). -ENODATA for an empty slot; -EOPNOTSUPP where libibverbs lacks ibv_query_gid_ex.
 */
int efa_ah_query_gid_type(uint64_t context, uint32_t port_num, uint32_t index, uint32_t *type);

/*
 * Asynchronous events (ibv_get_async_event). efa_ah_async_open makes the context's async_fd
 * non-blocking and pairs it with an eventfd; *channel receives the handle, freed with
 * efa_ah_async_close (no wait in progress, gives the fd its flags back) before the context is closed.
 * efa_ah_async_wait waits up to timeout_ms (-1: no limit) for events or a wake-up, then copies
 * and acknowledges every pending event, up to capacity: types[i] gets the enum ibv_event_type,
 * ports[i] the port for port events and 0 for others, *count how many (0 on timeout or wake-up).
 * One waiter per channel. efa_ah_async_wake makes a wait in progress, or the next, return.
 * -ENODEV when no event came and the device's uverbs node is gone: the device is being removed
 * by a driver that sends no IBV_EVENT_DEVICE_FATAL for it (rxe), and the removal waits for
 * every context to be closed.
 */
int efa_ah_async_open(uint64_t context, uint64_t *channel);
int efa_ah_async_wait(uint64_t channel, int32_t timeout_ms, uint32_t *types, uint32_t *ports, uint32_t capacity,
                      uint32_t *count);
int efa_ah_async_wake(uint64_t channel);
int efa_ah_async_close(uint64_t channel);

/* ---- Batched posts (efa_ah_batch.c) ---- */

/* Most work requests one batched call takes. */
#define EFA_AH_MAX_BATCH 64u

/*
 * ibv_post_recv of count (1..EFA_AH_MAX_BATCH) receives chained: receive i is length bytes at
 * offsets[i] in mr, with wr_ids[i]. Returns how many were posted from the first (1..count), or,
 * when the first is refused, its negative errno, as efa_ah_post_sends. offsets and wr_ids are
 * the caller's memory, read in place.
 */
int efa_ah_post_recv_batch(uint64_t qp, uint64_t mr, const uint32_t *offsets, uint32_t length,
                           const uint64_t *wr_ids, uint32_t count);

/* One send of a batch: length bytes at offset in the MR, completing with wr_id. 16 bytes, no padding. */
struct efa_ah_send_req {
    uint64_t wr_id;
    uint32_t offset;
    uint32_t length;
};

/*
 * ibv_post_send of count (1..EFA_AH_MAX_BATCH) signaled IBV_WR_SENDs chained, all to (ah,
 * remote_qpn, remote_qkey): send i is reqs[i].length bytes at reqs[i].offset in mr, with
 * reqs[i].wr_id. Returns how many were posted from the first (1..count; fewer when the provider or
 * the range check refused one, which the caller posts again alone to learn why), or, when the
 * first is refused, its negative errno. reqs is the caller's memory, read in place.
 */
int efa_ah_post_sends(uint64_t qp, uint64_t ah, uint32_t remote_qpn, uint32_t remote_qkey, uint64_t mr,
                      const struct efa_ah_send_req *reqs, uint32_t count);

/* ---- Completion channels (efa_ah_channel.c) ---- */

/*
 * efa_ah_channel_create: ibv_create_comp_channel, its fd made non-blocking, plus a stop eventfd.
 * A channel serves one CQ, made by efa_ah_channel_create_cq (-EBUSY for a second; on EFA
 * -EOPNOTSUPP where the device lacks CQ notifications) and destroyed with efa_ah_destroy_cq, which
 * first acknowledges the events still unacknowledged. efa_ah_channel_destroy after the CQ
 * (-EBUSY before). efa_ah_channel_fd gives the fd to poll for readability.
 * efa_ah_req_notify_cq: ibv_req_notify_cq(cq, 0), arming the CQ for one event on its next completion.
 * efa_ah_channel_wait: one waiter at a time; waits up to timeout_ms (-1: no limit) for the channel
 * or the stop, then reads every pending event: *events is how many (0 on timeout or a signal), -1
 * once efa_ah_channel_stop was called (from then on every wait returns at once).
 */
int efa_ah_channel_create(uint64_t context, uint64_t *channel);
int efa_ah_channel_fd(uint64_t channel, int32_t *fd);
int efa_ah_channel_create_cq(uint64_t context, uint64_t channel, uint32_t cqe, uint64_t *cq);
int efa_ah_req_notify_cq(uint64_t cq);
int efa_ah_channel_wait(uint64_t channel, int32_t timeout_ms, int32_t *events);
int efa_ah_channel_stop(uint64_t channel);
/* Ends the wait in progress, or the next one, with *events 0 (for a Java interrupt). */
int efa_ah_channel_wake(uint64_t channel);
int efa_ah_channel_destroy(uint64_t channel);
/* For efa_ah_destroy_cq: acknowledges the CQ's pending events; its channel, or 0 when it has none. */
uint64_t efa_ah_channel_release_cq(uint64_t cq);
/* For efa_ah_destroy_cq, once the CQ is gone: the channel may take a CQ again and be destroyed. */
void efa_ah_channel_after_destroy_cq(uint64_t channel);

/* ---- A readiness set of channels' fds, for the poller thread of parked waiters (efa_ah_poller.c) ---- */

/*
 * efa_ah_poller_create: an epoll instance and an eventfd; freed with efa_ah_poller_destroy (no wait
 * in progress). efa_ah_poller_arm: fd (a channel's, efa_ah_channel_fd) reports its next readiness
 * once (EPOLLONESHOT), added to the set if absent. efa_ah_poller_wait: waits up to timeout_ms
 * (-1: no limit) and puts the fds found readable in fds (*count of them, at most capacity); 0 of
 * them on timeout, a signal or efa_ah_poller_wake (which ends the wait in progress, or the next).
 */
int efa_ah_poller_create(uint64_t *poller);
int efa_ah_poller_arm(uint64_t poller, int32_t fd);
int efa_ah_poller_wait(uint64_t poller, int32_t timeout_ms, int32_t *fds, uint32_t capacity, uint32_t *count);
int efa_ah_poller_wake(uint64_t poller);
int efa_ah_poller_destroy(uint64_t poller);

/* ---- QP state (efa_ah_qp.c) ---- */

/* ibv_query_qp for IBV_QP_STATE: *state receives the enum ibv_qp_state value. */
int efa_ah_query_qp_state(uint64_t qp, uint32_t *state);

/*
 * ibv_modify_qp to IBV_QPS_RESET from any state: posted work requests are dropped without
 * completions. efa_ah_activate_ud_qp then takes the QP back to RTS (how an endpoint recovers a
 * QP in the error state).
 */
int efa_ah_reset_qp(uint64_t qp);

/*
 * ibv_modify_qp to IBV_QPS_ERR from any state: every posted work request completes, flushed
 * (IBV_WC_WR_FLUSH_ERR). How a QP is drained before efa_ah_reset_qp: libefa maps a completion to
 * its wr_id by slot at poll time, and RESET rewinds the slots.
 */
int efa_ah_error_qp(uint64_t qp);

/* ---- EFA extensions (efa_ah_efadv.c), through the dlopen()ed libefa ---- */

/*
 * efadv_create_cq with cqe entries (1..EFA_AH_MAX_CQE) and EFADV_WC_EX_WITH_SGID, plus the
 * standard completion fields. *cq receives a handle that the other CQ functions accept
 * (efa_ah_destroy_cq); poll it with efa_ah_efadv_poll_cq. -EOPNOTSUPP without libefa or when the
 * device is not EFA (libefa's answer).
 */
int efa_ah_efadv_create_cq(uint64_t context, uint32_t cqe, uint64_t *cq);

/*
 * efa_ah_efadv_create_cq whose events go to channel (efa_ah_channel_create; -EBUSY when it has its
 * CQ), as efa_ah_channel_create_cq: arm it with efa_ah_req_notify_cq, wait with efa_ah_channel_wait.
 * -EOPNOTSUPP also where the device lacks CQ notifications (libefa's create_cq).
 */
int efa_ah_efadv_create_cq_on_channel(uint64_t context, uint64_t channel, uint32_t cqe, uint64_t *cq);

/*
 * Polls a CQ from efa_ah_efadv_create_cq (ibv_start_poll, ibv_next_poll, ibv_end_poll) for up to
 * capacity (at most 64) completions into wc. For each successful receive the sender's GID is read
 * with efadv_wc_read_sgid into sgids + 16 * i and bit i of *sgid_valid set where that succeeds
 * (libefa answers -ENOENT when slid names an AH of the receiver instead, i.e. is not 0xFFFF).
 */
int efa_ah_efadv_poll_cq(uint64_t cq, struct efa_ah_wc *wc, uint32_t capacity, uint8_t *sgids,
                         uint64_t *sgid_valid, uint32_t *count);

/* efa_ah_efadv_poll_cq into records, as efa_ah_poll_cq_records; a GID read sets EFA_AH_CQE_SGID_VALID. */
int efa_ah_efadv_poll_cq_records(uint64_t cq, uint64_t *records, uint32_t capacity, uint8_t *sgids);

/*
 * efadv_create_qp_ex of driver type EFADV_QP_DRIVER_TYPE_SRD, one SGE each way, in RESET; the
 * UD functions activate, post to and destroy it. -EOPNOTSUPP without libefa or on a device that
 * is not EFA.
 */
int efa_ah_efadv_create_srd_qp(uint64_t pd, uint64_t send_cq, uint64_t recv_cq, uint32_t max_send_wr,
                               uint32_t max_recv_wr, uint64_t *qp, uint32_t *qpn);

/*
 * efadv_get_max_sq_depth and efadv_get_max_rq_depth for the QPs made here (one SGE each way, no
 * RDMA SGE, no inline data, no inline write): the deepest send and receive queue the device
 * takes, which libefa's efa_check_qp_limits holds max_send_wr and max_recv_wr to since rdma-core
 * 63. *sq_depth and *rq_depth receive each depth, or a negative errno where that call failed;
 * -EOPNOTSUPP in both where libefa lacks the pair (before rdma-core 63) or is absent, or the
 * device is not EFA. Returns -EINVAL for a bad argument, else 0.
 */
int efa_ah_efadv_max_depths(uint64_t context, int32_t *sq_depth, int32_t *rq_depth);

/* ---- Network changes for RoCE (efa_ah_netlink.c): rtnetlink, one socket per channel ---- */

/* Event types: the kernel's rtnetlink message types, plus two of this layer's. */
#define EFA_AH_NET_DUMP_DONE 3     /* NLMSG_DONE: a dump asked for with efa_ah_net_request_dump ended */
#define EFA_AH_NET_NEWLINK 16      /* RTM_NEWLINK */
#define EFA_AH_NET_DELLINK 17      /* RTM_DELLINK */
#define EFA_AH_NET_NEWNEIGH 28     /* RTM_NEWNEIGH */
#define EFA_AH_NET_DELNEIGH 29     /* RTM_DELNEIGH */
#define EFA_AH_NET_LOST 0x100      /* the socket overflowed (ENOBUFS): notifications were dropped */
/* Dump requests (RTM_GETLINK, RTM_GETNEIGH). */
#define EFA_AH_NET_DUMP_LINKS 18
#define EFA_AH_NET_DUMP_NEIGHBOURS 30
/* Bit of flags: the message is part of a dump's answer (NLM_F_MULTI), not a notification. */
#define EFA_AH_NET_FROM_DUMP 1u
/*
 * Bit of flags: the kernel marked the message NLM_F_DUMP_INTR (the table changed during the
 * dump). efa_ah_net_wait sets it on a dump's EFA_AH_NET_DUMP_DONE when any message of that dump
 * carried it: the answer may miss entries, and the dump must be asked for again.
 */
#define EFA_AH_NET_DUMP_INTR 2u

/*
 * One link or IP neighbour message, reduced. Fixed-width fields, so that a binding can read an
 * array of them as plain memory (the layout is checked in efa_ah_netlink.c).
 */
struct efa_ah_net_event {
    uint32_t type;        /* EFA_AH_NET_* */
    int32_t ifindex;      /* the netdev (ifi_index, ndm_ifindex) */
    uint32_t family;      /* neighbours: AF_INET or AF_INET6; links: 0 */
    uint32_t state;       /* neighbours: ndm_state (NUD_*); links: ifi_flags (IFF_*) */
    uint32_t mtu;         /* links: IFLA_MTU; 0 when absent */
    uint32_t addr_len;    /* neighbours: bytes of addr (4 or 16) */
    uint32_t lladdr_len;  /* bytes of lladdr; 0 when absent (an unresolved neighbour) */
    uint32_t flags;       /* EFA_AH_NET_FROM_DUMP, EFA_AH_NET_DUMP_INTR */
    uint8_t addr[16];     /* neighbours: NDA_DST, network order */
    uint8_t lladdr[32];   /* NDA_LLADDR or IFLA_ADDRESS */
    char ifname[16];      /* links: IFLA_IFNAME, NUL-terminated */
};

/*
 * efa_ah_net_open: a non-blocking NETLINK_ROUTE socket subscribed to link and neighbour
 * notifications, paired with an eventfd; *channel receives the handle, freed with
 * efa_ah_net_close (no wait in progress). efa_ah_net_request_dump asks for every link
 * (EFA_AH_NET_DUMP_LINKS) or neighbour (EFA_AH_NET_DUMP_NEIGHBOURS); its messages come through
 * efa_ah_net_wait flagged EFA_AH_NET_FROM_DUMP and end with one EFA_AH_NET_DUMP_DONE; one dump at
 * a time. efa_ah_net_wait waits up to timeout_ms (-1: no limit) for messages or a wake-up, then
 * fills up to capacity events with what is pending (the rest comes with the next call);
 * messages of other types or families are skipped. One waiter per channel. efa_ah_net_wake makes
 * a wait in progress, or the next, return.
 */
int efa_ah_net_open(uint64_t *channel);
int efa_ah_net_request_dump(uint64_t channel, uint32_t what);
int efa_ah_net_wait(uint64_t channel, int32_t timeout_ms, struct efa_ah_net_event *events, uint32_t capacity,
                    uint32_t *count);
int efa_ah_net_wake(uint64_t channel);
int efa_ah_net_close(uint64_t channel);

/*
 * Parses one rtnetlink message of length bytes into *out: 1 when it is an event, 0 when it is
 * skipped (another type or family, an acknowledgement), a negative errno for an error answer or a
 * malformed message. For the tests; efa_ah_net_wait uses it.
 */
int efa_ah_net_parse(const void *message, uint32_t length, struct efa_ah_net_event *out);

/*
 * ibv_query_gid_ex: *ifindex receives the ndev_ifindex of the GID at index (the netdev a RoCE
 * GID belongs to; 0 on InfiniBand). -ENODATA for an empty slot; -EOPNOTSUPP where libibverbs lacks
 * ibv_query_gid_ex.
 */
int efa_ah_query_gid_ndev(uint64_t context, uint32_t port_num, uint32_t index, uint32_t *ifindex);

#ifdef __cplusplus
}
#endif

#endif /* EFA_AH_NATIVE_H */
