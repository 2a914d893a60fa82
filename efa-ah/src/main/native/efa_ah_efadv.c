/*
 * efa_ah_efadv: everything of libefa (efadv.h), reached through one dlopen() table so that hosts
 * without libefa still load this library (see efa_ah_native.h): device and AH queries (used by
 * efa_ah_native.c), a CQ that reports the sender's GID, and SRD QPs. The mirrors follow efadv.h's
 * documented ABI; where the header is at hand their layout is asserted against it.
 */
#define _GNU_SOURCE
#include "efa_ah_native_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

/* Prefix of efadv_cq_init_attr (16 bytes up to rdma-core 58; flags and ext_mem_dmabuf follow since 59). */
struct efa_ah_efadv_cq_init_attr {
    uint64_t comp_mask;
    uint64_t wc_flags;
};

/*
 * Prefix of efadv_qp_init_attr. Bytes 12..15 were reserved up to rdma-core 51, then became
 * flags (52), sl (55) and one reserved byte; wr_flags follows since 64. Zero in every one of
 * them means what a caller of the oldest version got.
 */
struct efa_ah_efadv_qp_init_attr {
    uint64_t comp_mask;
    uint32_t driver_qp_type;
    uint8_t zeroed[4];
};

/* Prefix of efadv_cq, which libefa allocates (wc_is_unsolicited follows since rdma-core 52). */
struct efa_ah_efadv_cq {
    uint64_t comp_mask;
    int (*wc_read_sgid)(struct efa_ah_efadv_cq *cq, union ibv_gid *sgid);
};

/*
 * efadv_sq_depth_attr and efadv_rq_depth_attr (EFA_1.5, rdma-core 63), which older headers lack.
 * libefa reads them whole (vext_field_avail up to max_inline_data and max_recv_sge).
 */
struct efa_ah_efadv_sq_depth_attr {
    uint64_t comp_mask;
    uint32_t flags;
    uint32_t max_send_sge;
    uint32_t max_rdma_sge;
    uint32_t max_inline_data;
};

struct efa_ah_efadv_rq_depth_attr {
    uint64_t comp_mask;
    uint32_t max_recv_sge;
};

/* Values of efadv.h's enums, which are ABI. */
#define EFA_AH_EFADV_WC_EX_WITH_SGID 1u
#define EFA_AH_EFADV_QP_DRIVER_TYPE_SRD 0u

/* Our own sizes, passed as inlen: they must not change with the header at hand. */
_Static_assert(sizeof(struct efa_ah_efadv_device_attr) == 32, "efadv_device_attr prefix is 32 bytes");
_Static_assert(sizeof(struct efa_ah_efadv_ah_attr) == 16, "efadv_ah_attr prefix is 16 bytes");
_Static_assert(sizeof(struct efa_ah_efadv_cq_init_attr) == 16, "efadv_cq_init_attr prefix is 16 bytes");
_Static_assert(sizeof(struct efa_ah_efadv_qp_init_attr) == 16, "efadv_qp_init_attr prefix is 16 bytes");
_Static_assert(sizeof(struct efa_ah_efadv_sq_depth_attr) == 24, "efadv_sq_depth_attr is 24 bytes");
_Static_assert(sizeof(struct efa_ah_efadv_rq_depth_attr) == 16, "efadv_rq_depth_attr is 16 bytes");

#if defined(__has_include)
#if __has_include(<infiniband/efadv.h>)
#include <infiniband/efadv.h>
/* A mirrored field sits where the header has it, with the header's width. */
#define EFA_AH_SAME_FIELD(mine, theirs, field)                                                      \
    _Static_assert(offsetof(struct mine, field) == offsetof(struct theirs, field), #theirs "." #field " moved"); \
    _Static_assert(sizeof(((struct mine *)0)->field) == sizeof(((struct theirs *)0)->field),       \
                   #theirs "." #field " changed width")
/* A mirror is a prefix: never longer than the header's struct (which may grow). */
#define EFA_AH_PREFIX_OF(mine, theirs) \
    _Static_assert(sizeof(struct mine) <= sizeof(struct theirs), #theirs " is shorter than its mirror")

EFA_AH_PREFIX_OF(efa_ah_efadv_device_attr, efadv_device_attr);
EFA_AH_SAME_FIELD(efa_ah_efadv_device_attr, efadv_device_attr, comp_mask);
EFA_AH_SAME_FIELD(efa_ah_efadv_device_attr, efadv_device_attr, max_sq_wr);
EFA_AH_SAME_FIELD(efa_ah_efadv_device_attr, efadv_device_attr, max_rq_wr);
EFA_AH_SAME_FIELD(efa_ah_efadv_device_attr, efadv_device_attr, max_sq_sge);
EFA_AH_SAME_FIELD(efa_ah_efadv_device_attr, efadv_device_attr, max_rq_sge);
EFA_AH_SAME_FIELD(efa_ah_efadv_device_attr, efadv_device_attr, inline_buf_size);
#ifdef EFA_AH_HAVE_EFADV_INLINE_BUF_SIZE_EX
EFA_AH_SAME_FIELD(efa_ah_efadv_device_attr, efadv_device_attr, inline_buf_size_ex);
#endif
EFA_AH_SAME_FIELD(efa_ah_efadv_device_attr, efadv_device_attr, device_caps);
EFA_AH_SAME_FIELD(efa_ah_efadv_device_attr, efadv_device_attr, max_rdma_size);

EFA_AH_PREFIX_OF(efa_ah_efadv_ah_attr, efadv_ah_attr);
EFA_AH_SAME_FIELD(efa_ah_efadv_ah_attr, efadv_ah_attr, comp_mask);
EFA_AH_SAME_FIELD(efa_ah_efadv_ah_attr, efadv_ah_attr, ahn);

EFA_AH_PREFIX_OF(efa_ah_efadv_cq_init_attr, efadv_cq_init_attr);
EFA_AH_SAME_FIELD(efa_ah_efadv_cq_init_attr, efadv_cq_init_attr, comp_mask);
EFA_AH_SAME_FIELD(efa_ah_efadv_cq_init_attr, efadv_cq_init_attr, wc_flags);

EFA_AH_PREFIX_OF(efa_ah_efadv_qp_init_attr, efadv_qp_init_attr);
EFA_AH_SAME_FIELD(efa_ah_efadv_qp_init_attr, efadv_qp_init_attr, comp_mask);
EFA_AH_SAME_FIELD(efa_ah_efadv_qp_init_attr, efadv_qp_init_attr, driver_qp_type);

EFA_AH_PREFIX_OF(efa_ah_efadv_cq, efadv_cq);
EFA_AH_SAME_FIELD(efa_ah_efadv_cq, efadv_cq, comp_mask);
EFA_AH_SAME_FIELD(efa_ah_efadv_cq, efadv_cq, wc_read_sgid);

/* rdma-core 63 added EFADV_SQ_DEPTH_ATTR_INLINE_WRITE (an enum) with the structs. */
#ifdef EFA_AH_HAVE_EFADV_MAX_DEPTH
EFA_AH_PREFIX_OF(efa_ah_efadv_sq_depth_attr, efadv_sq_depth_attr);
EFA_AH_SAME_FIELD(efa_ah_efadv_sq_depth_attr, efadv_sq_depth_attr, comp_mask);
EFA_AH_SAME_FIELD(efa_ah_efadv_sq_depth_attr, efadv_sq_depth_attr, flags);
EFA_AH_SAME_FIELD(efa_ah_efadv_sq_depth_attr, efadv_sq_depth_attr, max_send_sge);
EFA_AH_SAME_FIELD(efa_ah_efadv_sq_depth_attr, efadv_sq_depth_attr, max_rdma_sge);
EFA_AH_SAME_FIELD(efa_ah_efadv_sq_depth_attr, efadv_sq_depth_attr, max_inline_data);
EFA_AH_PREFIX_OF(efa_ah_efadv_rq_depth_attr, efadv_rq_depth_attr);
EFA_AH_SAME_FIELD(efa_ah_efadv_rq_depth_attr, efadv_rq_depth_attr, comp_mask);
EFA_AH_SAME_FIELD(efa_ah_efadv_rq_depth_attr, efadv_rq_depth_attr, max_recv_sge);
#endif

_Static_assert(EFA_AH_EFADV_WC_EX_WITH_SGID == EFADV_WC_EX_WITH_SGID, "EFADV_WC_EX_WITH_SGID");
_Static_assert(EFA_AH_EFADV_QP_DRIVER_TYPE_SRD == EFADV_QP_DRIVER_TYPE_SRD, "EFADV_QP_DRIVER_TYPE_SRD");
#endif
#endif

typedef struct ibv_cq_ex *(*efadv_create_cq_fn)(struct ibv_context *, struct ibv_cq_init_attr_ex *,
                                               struct efa_ah_efadv_cq_init_attr *, uint32_t);
typedef struct efa_ah_efadv_cq *(*efadv_cq_from_ibv_cq_ex_fn)(struct ibv_cq_ex *);
typedef struct ibv_qp *(*efadv_create_qp_ex_fn)(struct ibv_context *, struct ibv_qp_init_attr_ex *,
                                               struct efa_ah_efadv_qp_init_attr *, uint32_t);
typedef int (*efadv_get_max_sq_depth_fn)(struct ibv_context *, struct efa_ah_efadv_sq_depth_attr *, uint32_t);
typedef int (*efadv_get_max_rq_depth_fn)(struct ibv_context *, struct efa_ah_efadv_rq_depth_attr *, uint32_t);

static pthread_once_t efadv_once = PTHREAD_ONCE_INIT;
efadv_query_device_fn efadv_query_device_ptr;
efadv_query_ah_fn efadv_query_ah_ptr;
static efadv_create_cq_fn create_cq_ptr;
static efadv_cq_from_ibv_cq_ex_fn cq_from_ex_ptr;
static efadv_create_qp_ex_fn create_qp_ex_ptr;
static efadv_get_max_sq_depth_fn max_sq_depth_ptr;
static efadv_get_max_rq_depth_fn max_rq_depth_ptr;
static uint32_t families;

/* POSIX guarantees object and function pointers convert; the memcpy avoids a pedantic warning. */
#define EFA_AH_SET_FN(dst, sym) memcpy(&(dst), &(sym), sizeof(sym))

uint32_t efa_ah_efadv_resolve(void *handle, efa_ah_symbol_lookup lookup, struct efa_ah_efadv_symbols *out)
{
    memset(out, 0, sizeof(*out));
    if (handle == NULL) {
        return 0;
    }
    uint32_t found = EFA_AH_EFADV_LOADED;
    void *query_device = lookup(handle, "efadv_query_device");
    void *query_ah = lookup(handle, "efadv_query_ah");
    void *create_cq = lookup(handle, "efadv_create_cq");
    void *cq_from_ex = lookup(handle, "efadv_cq_from_ibv_cq_ex");
    void *create_qp_ex = lookup(handle, "efadv_create_qp_ex");
    void *max_sq_depth = lookup(handle, "efadv_get_max_sq_depth");
    void *max_rq_depth = lookup(handle, "efadv_get_max_rq_depth");
    /* Each family stands alone: an older libefa may know SRD QPs but not the CQ with the GID. */
    if (query_device != NULL && query_ah != NULL) {
        out->query_device = query_device;
        out->query_ah = query_ah;
        found |= EFA_AH_EFADV_QUERY;
    }
    if (create_cq != NULL && cq_from_ex != NULL) {
        out->create_cq = create_cq;
        out->cq_from_ex = cq_from_ex;
        found |= EFA_AH_EFADV_CQ;
    }
    if (create_qp_ex != NULL) {
        out->create_qp_ex = create_qp_ex;
        found |= EFA_AH_EFADV_SRD;
    }
    if (max_sq_depth != NULL && max_rq_depth != NULL) {
        out->get_max_sq_depth = max_sq_depth;
        out->get_max_rq_depth = max_rq_depth;
        found |= EFA_AH_EFADV_DEPTH;
    }
    return found;
}

static void efadv_load(void)
{
    /*
     * The handle is kept for the life of the process: the function pointers must stay valid,
     * and when an EFA device is present libibverbs already holds the same library open.
     */
    void *handle = dlopen("libefa.so.1", RTLD_NOW | RTLD_LOCAL);
    struct efa_ah_efadv_symbols found;
    families = efa_ah_efadv_resolve(handle, dlsym, &found);
    if (found.query_device != NULL) {
        EFA_AH_SET_FN(efadv_query_device_ptr, found.query_device);
        EFA_AH_SET_FN(efadv_query_ah_ptr, found.query_ah);
    }
    if (found.create_cq != NULL) {
        EFA_AH_SET_FN(create_cq_ptr, found.create_cq);
        EFA_AH_SET_FN(cq_from_ex_ptr, found.cq_from_ex);
    }
    if (found.create_qp_ex != NULL) {
        EFA_AH_SET_FN(create_qp_ex_ptr, found.create_qp_ex);
    }
    if (found.get_max_sq_depth != NULL) {
        EFA_AH_SET_FN(max_sq_depth_ptr, found.get_max_sq_depth);
        EFA_AH_SET_FN(max_rq_depth_ptr, found.get_max_rq_depth);
    }
}

static void efadv_init(void)
{
    /* pthread_once can only fail on misuse; efadv then simply stays unavailable. */
    (void)pthread_once(&efadv_once, efadv_load);
}

int efa_ah_efadv_available(void)
{
    efadv_init();
    return efadv_query_device_ptr != NULL && efadv_query_ah_ptr != NULL;
}

uint32_t efa_ah_efadv_families(void)
{
    efadv_init();
    return families;
}

/* Completion fields read for every completion; EFA supports exactly the standard set. */
#define EFA_AH_CQ_WC_FLAGS IBV_WC_STANDARD_FLAGS

/*
 * efadv_create_cq with the sender's GID; with a channel (non-zero) its events go there: libefa's
 * create_cq (providers/efa/verbs.c) honours ibv_cq_init_attr_ex.channel (passing
 * EFA_CREATE_CQ_WITH_COMPLETION_CHANNEL to the kernel) where the device reports
 * EFA_DEV_CAP(CQ_NOTIFICATIONS), and fails EOPNOTSUPP elsewhere, as efa_create_cq_ex does.
 */
static int create_cq_with_sgid(uint64_t context, uint32_t cqe, uint64_t channel, uint64_t *cq)
{
    if (context == 0 || cq == NULL || cqe < 1 || cqe > EFA_AH_MAX_CQE) {
        return -EINVAL;
    }
    *cq = 0;
    efadv_init();
    if (create_cq_ptr == NULL) {
        return -EOPNOTSUPP;
    }
    struct ibv_cq_init_attr_ex attr;
    memset(&attr, 0, sizeof(attr));
    attr.cqe = cqe;
    attr.wc_flags = EFA_AH_CQ_WC_FLAGS;
    if (channel != 0) {
        /* cq_context names our channel, so that efa_ah_destroy_cq finds the events to acknowledge. */
        int rc = efa_ah_channel_for_new_cq(channel, &attr.channel, &attr.cq_context);
        if (rc != 0) {
            return rc;
        }
    }
    struct efa_ah_efadv_cq_init_attr efa;
    memset(&efa, 0, sizeof(efa));
    efa.wc_flags = EFA_AH_EFADV_WC_EX_WITH_SGID;
    errno = 0;
    struct ibv_cq_ex *created = create_cq_ptr((struct ibv_context *)(uintptr_t)context, &attr, &efa,
                                              (uint32_t)sizeof(efa));
    if (created == NULL) {
        return efa_ah_error_from_rc(0, errno);
    }
    /* The handle is the struct ibv_cq every other CQ call takes; it is the same object. */
    struct ibv_cq *made = ibv_cq_ex_to_cq(created);
    if (channel != 0) {
        efa_ah_channel_adopt_cq(channel, made);
    }
    *cq = (uint64_t)(uintptr_t)made;
    return 0;
}

int efa_ah_efadv_create_cq(uint64_t context, uint32_t cqe, uint64_t *cq)
{
    return create_cq_with_sgid(context, cqe, 0, cq);
}

int efa_ah_efadv_create_cq_on_channel(uint64_t context, uint64_t channel, uint32_t cqe, uint64_t *cq)
{
    if (channel == 0) {
        return -EINVAL;
    }
    return create_cq_with_sgid(context, cqe, channel, cq);
}

static void read_current(struct ibv_cq_ex *cq, struct efa_ah_wc *out)
{
    memset(out, 0, sizeof(*out));
    out->wr_id = cq->wr_id;
    out->status = (uint32_t)cq->status;
    out->opcode = (uint32_t)ibv_wc_read_opcode(cq);
    out->vendor_err = ibv_wc_read_vendor_err(cq);
    out->qp_num = ibv_wc_read_qp_num(cq);
    /*
     * libefa's readers of these fields take the completion as a receive descriptor whatever it
     * is (efa_wc_read_src_qp, efa_wc_read_slid): on a send completion they return bytes of
     * another layout. Read them only for receives, as efa_process_cqe fills them.
     */
    if ((out->opcode & IBV_WC_RECV) != 0) {
        out->wc_flags = (uint32_t)ibv_wc_read_wc_flags(cq);
        out->byte_len = ibv_wc_read_byte_len(cq);
        out->src_qp = ibv_wc_read_src_qp(cq);
        out->slid = ibv_wc_read_slid(cq);
        out->sl = ibv_wc_read_sl(cq);
        out->dlid_path_bits = ibv_wc_read_dlid_path_bits(cq);
    }
}

/*
 * ibv_start_poll and ibv_next_poll into wc or, when wc is NULL, each completion packed straight
 * into records (efa_ah_cqe_pack), without an efa_ah_wc array between: one pass, not two.
 */
static int efadv_poll(uint64_t cq, uint32_t capacity, struct efa_ah_wc *wc, uint64_t *records, uint8_t *sgids,
                      uint64_t *sgid_valid, uint32_t *count)
{
    *count = 0;
    *sgid_valid = 0;
    if (capacity == 0) {
        return 0;
    }
    efadv_init();
    if (cq_from_ex_ptr == NULL) {
        return -EOPNOTSUPP;
    }
    /* A CQ made by efadv_create_cq: the struct ibv_cq is the start of its struct ibv_cq_ex. */
    struct ibv_cq_ex *cqx = (struct ibv_cq_ex *)(uintptr_t)cq;
    struct efa_ah_efadv_cq *efa = cq_from_ex_ptr(cqx);
    struct ibv_poll_cq_attr attr;
    memset(&attr, 0, sizeof(attr));
    int rc = ibv_start_poll(cqx, &attr);
    if (rc == ENOENT) {
        return 0;
    }
    if (rc != 0) {
        return efa_ah_error_from_rc(rc, errno);
    }
    uint32_t n = 0;
    uint64_t valid = 0;
    for (;;) {
        struct efa_ah_wc current;
        read_current(cqx, &current);
        int has_gid = 0;
        if (efa != NULL && current.status == IBV_WC_SUCCESS && (current.opcode & IBV_WC_RECV) != 0) {
            union ibv_gid gid;
            /*
             * -ENOENT when the receiver holds an AH for the sender (slid is then its AHN). Asked
             * for every receive, not only slid 0xFFFF, so that a device answering otherwise shows.
             */
            if (efa->wc_read_sgid(efa, &gid) == 0) {
                memcpy(sgids + (size_t)n * EFA_AH_GID_LEN, gid.raw, EFA_AH_GID_LEN);
                valid |= 1ull << n;
                has_gid = 1;
            }
        }
        if (wc != NULL) {
            wc[n] = current;
        } else {
            efa_ah_cqe_pack(&current, has_gid, records + (size_t)n * EFA_AH_CQE_WORDS);
        }
        n++;
        if (n == capacity) {
            break;
        }
        rc = ibv_next_poll(cqx);
        if (rc != 0) {
            /* ENOENT: drained. Another error recurs at the next poll; what was read is returned. */
            break;
        }
    }
    ibv_end_poll(cqx);
    *count = n;
    *sgid_valid = valid;
    return 0;
}

int efa_ah_efadv_poll_cq(uint64_t cq, struct efa_ah_wc *wc, uint32_t capacity, uint8_t *sgids,
                         uint64_t *sgid_valid, uint32_t *count)
{
    if (cq == 0 || count == NULL || sgid_valid == NULL || capacity > 64
        || (capacity > 0 && (wc == NULL || sgids == NULL))) {
        return -EINVAL;
    }
    return efadv_poll(cq, capacity, wc, NULL, sgids, sgid_valid, count);
}

int efa_ah_efadv_poll_cq_records(uint64_t cq, uint64_t *records, uint32_t capacity, uint8_t *sgids)
{
    if (cq == 0 || capacity > 64 || (capacity > 0 && (records == NULL || sgids == NULL))) {
        return -EINVAL;
    }
    uint64_t valid = 0;
    uint32_t n = 0;
    int rc = efadv_poll(cq, capacity, NULL, records, sgids, &valid, &n);
    return rc != 0 ? rc : (int)n;
}

int efa_ah_efadv_create_srd_qp(uint64_t pd, uint64_t send_cq, uint64_t recv_cq, uint32_t max_send_wr,
                               uint32_t max_recv_wr, uint64_t *qp, uint32_t *qpn)
{
    if (pd == 0 || send_cq == 0 || recv_cq == 0 || qp == NULL || qpn == NULL || max_send_wr < 1
        || max_send_wr > EFA_AH_MAX_QP_WR || max_recv_wr < 1 || max_recv_wr > EFA_AH_MAX_QP_WR) {
        return -EINVAL;
    }
    *qp = 0;
    *qpn = 0;
    efadv_init();
    if (create_qp_ex_ptr == NULL) {
        return -EOPNOTSUPP;
    }
    struct ibv_pd *p = (struct ibv_pd *)(uintptr_t)pd;
    struct ibv_qp_init_attr_ex attr;
    memset(&attr, 0, sizeof(attr));
    attr.send_cq = (struct ibv_cq *)(uintptr_t)send_cq;
    attr.recv_cq = (struct ibv_cq *)(uintptr_t)recv_cq;
    attr.cap.max_send_wr = max_send_wr;
    attr.cap.max_recv_wr = max_recv_wr;
    attr.cap.max_send_sge = 1;
    attr.cap.max_recv_sge = 1;
    attr.qp_type = IBV_QPT_DRIVER;
    attr.comp_mask = IBV_QP_INIT_ATTR_PD;
    attr.pd = p;
    /* sq_sig_all stays 0 and every send carries IBV_SEND_SIGNALED, which EFA requires. */
    struct efa_ah_efadv_qp_init_attr efa;
    memset(&efa, 0, sizeof(efa));
    efa.driver_qp_type = EFA_AH_EFADV_QP_DRIVER_TYPE_SRD;
    errno = 0;
    struct ibv_qp *created = create_qp_ex_ptr(p->context, &attr, &efa, (uint32_t)sizeof(efa));
    if (created == NULL) {
        return efa_ah_error_from_rc(0, errno);
    }
    *qp = (uint64_t)(uintptr_t)created;
    *qpn = created->qp_num;
    return 0;
}

/*
 * What the QPs made here ask for (efa_ah_efadv_create_srd_qp, efa_ah_create_ud_qp): one send SGE,
 * no RDMA SGE (RDMA is never posted), cap.max_inline_data 0 (sends are never IBV_SEND_INLINE),
 * no EFADV_QP_FLAGS_INLINE_WRITE; one receive SGE. The depths libefa computes for exactly these
 * are the ones its efa_check_qp_limits holds the QP to.
 */
int efa_ah_efadv_max_depths(uint64_t context, int32_t *sq_depth, int32_t *rq_depth)
{
    if (context == 0 || sq_depth == NULL || rq_depth == NULL) {
        return -EINVAL;
    }
    *sq_depth = -EOPNOTSUPP;
    *rq_depth = -EOPNOTSUPP;
    efadv_init();
    if (max_sq_depth_ptr == NULL) {
        return 0;
    }
    struct ibv_context *ctx = (struct ibv_context *)(uintptr_t)context;
    struct efa_ah_efadv_sq_depth_attr sq;
    memset(&sq, 0, sizeof(sq));
    sq.max_send_sge = 1;
    /* Both return the depth, or a negative errno (efadv_get_max_sq_depth, efadv_get_max_rq_depth). */
    int rc = max_sq_depth_ptr(ctx, &sq, (uint32_t)sizeof(sq));
    *sq_depth = rc;
    struct efa_ah_efadv_rq_depth_attr rq;
    memset(&rq, 0, sizeof(rq));
    rq.max_recv_sge = 1;
    rc = max_rq_depth_ptr(ctx, &rq, (uint32_t)sizeof(rq));
    *rq_depth = rc;
    return 0;
}
