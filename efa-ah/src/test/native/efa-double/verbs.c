/*
 * libibverbs.so.1 of the EFA double (see efa_double.h): devices, contexts, PDs, MRs, AHs, CQs,
 * completion channels and QPs, with the context ops the inline verbs (ibv_post_send,
 * ibv_post_recv, ibv_poll_cq, ibv_req_notify_cq) and the ibv_cq_ex pointers call. The context
 * is not a verbs_context (abi_compat stays NULL), so the inline ibv_query_port takes the
 * exported ibv_query_port, as it does with a provider of before the extended ABI.
 *
 * One mutex guards every object: a send touches the receiver's queue and CQ. It is never held
 * while a caller blocks (ibv_get_cq_event reads its pipe without it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "efa_double.h"

#define MAX_DEVICES 8
/* The limits a current EFA device reports (ibv_devinfo -v on EFA; libfabric PR #11337). */
#define MAX_SQ_WR 4096
#define MAX_RQ_WR 8192
#define MAX_SQ_SGE 2
#define MAX_RQ_SGE 3
#define MAX_CQE 32768
#define INLINE_BUF_SIZE 32
#define MAX_MSG_SZ 8928
/* max_wr_rdma_sge, and the LLQ: max_sq_wr descriptors of 64 bytes (EFA_IO_TX_DESC_SIZE_64). */
#define MAX_RDMA_SGE 1
#define TX_DESC_INLINE_MAX 32
#define LLQ_SIZE (MAX_SQ_WR * 64)
/* EFA_DOUBLE_MAX_DEPTH=smaller: depths below max_sq_wr and max_rq_wr (powers of two, as LLQs are). */
#define SMALLER_SQ_DEPTH 1024
#define SMALLER_RQ_DEPTH 2048

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

struct dev {
    struct ibv_device ibv;
    union ibv_gid gid;
    uint32_t next_qpn;
    uint32_t next_ahn;
    int ah_count;
};

static struct dev devices[MAX_DEVICES];
static int device_count;
static int err_flushes;
static int len_err_to_err;
static int device_err_uncached;
static int reset_keeps;
static int cq_notifications = 1;
static int rnr_retry_cap = 1;
/* The mock's default too (MockConfig.DEFAULT_MAX_AH, which says where 1024 comes from): a test
 * meets one max_ah whichever of the two it runs on. */
#define DEFAULT_MAX_AH 1024
static int max_ah = DEFAULT_MAX_AH;
static int ahn_lowest;
/* EFA_DOUBLE_MAX_DEPTH: absent (a libefa before rdma-core 63), device (the default) or smaller. */
enum { DEPTH_ABSENT, DEPTH_DEVICE, DEPTH_SMALLER };
static int max_depth_mode = DEPTH_DEVICE;
/* EFA_DOUBLE_RNR_STALL=K:MS (stall_after -1: none) and EFA_DOUBLE_HOLD_SENDS=N; under lock after init. */
static long stall_after = -1;
static long stall_millis;
static long hold_sends;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static int env_int(const char *name, int fallback)
{
    const char *v = getenv(name);
    return v != NULL && *v != '\0' ? atoi(v) : fallback;
}

static void init_devices(void)
{
    const char *err = getenv("EFA_DOUBLE_ERR");
    err_flushes = err != NULL && strcmp(err, "flush") == 0;
    const char *len_err = getenv("EFA_DOUBLE_LEN_ERR");
    len_err_to_err = len_err != NULL && strcmp(len_err, "err") == 0;
    const char *qp_err = getenv("EFA_DOUBLE_QP_ERR");
    device_err_uncached = qp_err != NULL && strcmp(qp_err, "device") == 0;
    const char *reset = getenv("EFA_DOUBLE_RESET");
    reset_keeps = reset != NULL && strcmp(reset, "keeps") == 0;
    cq_notifications = env_int("EFA_DOUBLE_CQ_NOTIFICATIONS", 1) != 0;
    rnr_retry_cap = env_int("EFA_DOUBLE_RNR_RETRY_CAP", 1) != 0;
    max_ah = env_int("EFA_DOUBLE_MAX_AH", DEFAULT_MAX_AH);
    const char *ahn = getenv("EFA_DOUBLE_AHN");
    if (ahn != NULL && *ahn != '\0' && strcmp(ahn, "lowest") != 0 && strcmp(ahn, "roundrobin") != 0) {
        fprintf(stderr, "efa double: EFA_DOUBLE_AHN=%s is neither lowest nor roundrobin\n", ahn);
        abort();
    }
    ahn_lowest = ahn != NULL && strcmp(ahn, "lowest") == 0;
    const char *depth = getenv("EFA_DOUBLE_MAX_DEPTH");
    if (depth != NULL && *depth != '\0') {
        if (strcmp(depth, "absent") == 0) {
            max_depth_mode = DEPTH_ABSENT;
        } else if (strcmp(depth, "smaller") == 0) {
            max_depth_mode = DEPTH_SMALLER;
        } else if (strcmp(depth, "device") != 0) {
            fprintf(stderr, "efa double: EFA_DOUBLE_MAX_DEPTH=%s is none of absent, device, smaller\n", depth);
            abort();
        }
    }
    const char *stall = getenv("EFA_DOUBLE_RNR_STALL");
    if (stall != NULL && *stall != '\0'
        && (sscanf(stall, "%ld:%ld", &stall_after, &stall_millis) != 2 || stall_after < 0 || stall_millis < 0)) {
        fprintf(stderr, "efa double: EFA_DOUBLE_RNR_STALL=%s is not K:MS (datagrams, then milliseconds)\n", stall);
        abort();
    }
    hold_sends = env_int("EFA_DOUBLE_HOLD_SENDS", 0);
    device_count = env_int("EFA_DOUBLE_DEVICES", 1);
    if (device_count < 0 || device_count > MAX_DEVICES) {
        device_count = 1;
    }
    const char *dev_path = getenv("EFA_DOUBLE_DEV_PATH");
    for (int i = 0; i < device_count; i++) {
        struct dev *d = &devices[i];
        d->ibv.node_type = IBV_NODE_UNSPECIFIED;
        d->ibv.transport_type = IBV_TRANSPORT_UNSPECIFIED;
        snprintf(d->ibv.name, sizeof(d->ibv.name), "rdmap%ds31", i);
        snprintf(d->ibv.dev_name, sizeof(d->ibv.dev_name), "uverbs%d", i);
        if (dev_path != NULL) {
            snprintf(d->ibv.dev_path, sizeof(d->ibv.dev_path), "%s", dev_path);
        } else {
            snprintf(d->ibv.dev_path, sizeof(d->ibv.dev_path), "/sys/class/infiniband_verbs/uverbs%d", i);
        }
        snprintf(d->ibv.ibdev_path, sizeof(d->ibv.ibdev_path), "/sys/class/infiniband/%s", d->ibv.name);
        /* EFA's one GID is an IPv6 address of the fabric: fe80::...:i here. */
        d->gid.raw[0] = 0xfe;
        d->gid.raw[1] = 0x80;
        d->gid.raw[8] = 0x0e;
        d->gid.raw[9] = 0xfa;
        d->gid.raw[15] = (uint8_t)(i + 1);
        d->next_qpn = 1;
        d->next_ahn = 1;
    }
}

static void init(void)
{
    (void)pthread_once(&init_once, init_devices);
}

/* ---- objects ---- */

struct context {
    struct ibv_context ibv;
    struct dev *dev;
};

struct mr {
    struct ibv_mr ibv;
    uint64_t pages;
    struct mr *next;
};

/*
 * The kernel's EFA AH cache (efa_create_ah, Linux 7.3): one hardware AH per (PD, GID), its AHN
 * given to every ibv_create_ah of that pair; the last destroy drops it.
 */
struct hw_ah {
    struct ibv_pd *pd;
    union ibv_gid gid;
    uint16_t ahn;
    int users;
    struct hw_ah *next;
};

struct ah {
    struct ibv_ah ibv;
    struct hw_ah *hw;
};

/* The device's completion status (efa_io_defs.h, enum efa_io_comp_status), the values used here. */
enum efa_status {
    EFA_OK = 0,
    EFA_FLUSHED = 1,
    EFA_LOCAL_INVALID_AH = 4,
    EFA_LOCAL_INVALID_LKEY = 5,
    EFA_LOCAL_BAD_LENGTH = 6,
    EFA_REMOTE_ABORT = 8,
    EFA_REMOTE_BAD_DEST_QPN = 9,
    EFA_REMOTE_RNR = 10,
    EFA_REMOTE_BAD_LENGTH = 11,
};

/* libefa's to_ibv_status for those values. */
static enum ibv_wc_status to_ibv_status(enum efa_status status)
{
    switch (status) {
    case EFA_OK: return IBV_WC_SUCCESS;
    case EFA_FLUSHED: return IBV_WC_WR_FLUSH_ERR;
    case EFA_LOCAL_INVALID_AH: return IBV_WC_LOC_QP_OP_ERR;
    case EFA_LOCAL_INVALID_LKEY: return IBV_WC_LOC_PROT_ERR;
    case EFA_LOCAL_BAD_LENGTH: return IBV_WC_LOC_LEN_ERR;
    case EFA_REMOTE_ABORT: return IBV_WC_REM_ABORT_ERR;
    case EFA_REMOTE_BAD_DEST_QPN: return IBV_WC_REM_INV_RD_REQ_ERR;
    case EFA_REMOTE_RNR: return IBV_WC_RNR_RETRY_EXC_ERR;
    case EFA_REMOTE_BAD_LENGTH: return IBV_WC_REM_INV_REQ_ERR;
    }
    return IBV_WC_GENERAL_ERR;
}

struct cqe {
    struct qp *qp;
    uint32_t slot; /* resolved to a wr_id when polled, as libefa does */
    int is_send;
    enum efa_status status;
    uint32_t byte_len;
    uint32_t qp_num;
    uint32_t src_qp;
    uint16_t slid;
    union ibv_gid sgid;
};

struct cq {
    struct ibv_cq_ex ex; /* first: the struct ibv_cq is its prefix */
    struct efadv_cq efadv;
    int with_sgid;
    struct cqe *ring;
    uint32_t cap, head, len;
    int armed;
    uint32_t events_reported;
    int qps;
    struct cqe cur;
    uint64_t cur_wr_id;
};

struct channel {
    struct ibv_comp_channel ibv;
    int write_fd;
};

/* libefa's efa_wq: a wr_id table indexed by slot and a stack of free slots (efa_wq_*_wrid_idx). */
struct wq {
    uint64_t *wrid;
    uint32_t *pool;
    uint32_t pool_next;
    uint32_t cnt;
    uint32_t max_sge;
    /* libefa's producer index and phase (efa_sq_advance_post_idx: the phase turns each lap). */
    uint32_t pc;
    uint8_t phase;
};

struct recv {
    uint32_t slot;
    struct ibv_sge sge[MAX_RQ_SGE];
    int num_sge;
};

struct qp {
    struct ibv_qp ibv;
    struct dev *dev;
    int srd;
    int sq_sig_all;
    struct wq sq, rq;
    struct recv *fifo; /* posted receives that reached a descriptor, in order */
    uint32_t fifo_head, fifo_len;
    uint32_t qkey;
    uint8_t rnr_retry;
    struct ibv_qp_cap cap;
    /* EFA_DOUBLE_QP_ERR=device: the device put the QP in error; ibv.state does not say so. */
    int dev_err;
    /* The phase the device takes for a new send descriptor, and where it reads the next one. */
    uint8_t dev_phase;
    uint32_t dev_pc;
    struct qp *next;
};

/*
 * An SRD send waiting for its receiver to post a receive (rnr_retry 7: retry forever), or, to
 * NULL, a send the device holds (EFA_DOUBLE_HOLD_SENDS): it ends only by a flush or a destroy.
 */
struct pending {
    struct qp *from;
    struct qp *to;
    uint32_t slot;
    struct ibv_pd *from_pd;
    uint32_t len;
    struct pending *next;
    uint8_t data[];
};

static struct mr *mrs;
static struct hw_ah *hw_ahs;
static struct qp *qps;
static struct pending *pendings;

static struct context *to_ctx(struct ibv_context *c) { return (struct context *)c; }
static struct cq *to_cq(struct ibv_cq *c) { return (struct cq *)c; }
static struct cq *ex_to_cq(struct ibv_cq_ex *c) { return (struct cq *)c; }
static struct qp *to_qp(struct ibv_qp *q) { return (struct qp *)q; }
static struct ah *to_ah(struct ibv_ah *a) { return (struct ah *)a; }

static void *fail(int err)
{
    errno = err;
    return NULL;
}

/*
 * EFA_DOUBLE_RNR_STALL: a receiver that falls behind for a moment, as an application that stops
 * posting receives does. The device answers a send that finds no receive posted with RNR
 * (efa_io_defs.h: EFA_IO_COMP_STATUS_REMOTE_ERROR_RNR), retries it rnr_retry times, then
 * completes it with that status, IBV_WC_RNR_RETRY_EXC_ERR by libefa's to_ibv_status. The stall
 * starts once stall_after datagrams have reached SRD QPs and lasts stall_millis; receives posted
 * meanwhile stay out of sight, as if not yet posted. All under lock.
 */
enum { STALL_BEFORE, STALL_ON, STALL_OVER };
static int stall_phase;
static uint64_t stall_end_ns;
static uint64_t srd_delivered;
static unsigned long long stall_rnrs;

static void retry_pending(struct qp *to);

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Whether SRD receivers are stalled now; the stall's end lets the sends kept for RNR go. */
static int stalled(void)
{
    if (stall_phase == STALL_BEFORE) {
        if (stall_after < 0 || srd_delivered < (uint64_t)stall_after) {
            return 0;
        }
        stall_phase = STALL_ON;
        stall_end_ns = now_ns() + (uint64_t)stall_millis * 1000000u;
    }
    if (stall_phase == STALL_OVER) {
        return 0;
    }
    if (now_ns() < stall_end_ns) {
        return 1;
    }
    stall_phase = STALL_OVER;
    fprintf(stderr, "efa double: SRD receivers stalled %ld ms after %ld datagrams; %llu sends met RNR\n",
            stall_millis, stall_after, stall_rnrs);
    for (struct qp *q = qps; q != NULL; q = q->next) {
        if (q->srd && q->fifo_len > 0) {
            retry_pending(q);
        }
    }
    return 0;
}

/* ---- devices and contexts ---- */

#undef ibv_get_device_list
struct ibv_device **ibv_get_device_list(int *num)
{
    init();
    struct ibv_device **list = calloc((size_t)device_count + 1, sizeof(*list));
    if (list == NULL) {
        return fail(ENOMEM);
    }
    for (int i = 0; i < device_count; i++) {
        list[i] = &devices[i].ibv;
    }
    if (num != NULL) {
        *num = device_count;
    }
    return list;
}

void ibv_free_device_list(struct ibv_device **list)
{
    free(list);
}

const char *ibv_get_device_name(struct ibv_device *device)
{
    return device->name;
}

static int poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
static int req_notify_cq(struct ibv_cq *cq, int solicited_only);
static int post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
static int post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
    struct context *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return fail(ENOMEM);
    }
    c->dev = (struct dev *)device;
    c->ibv.device = device;
    c->ibv.ops.poll_cq = poll_cq;
    c->ibv.ops.req_notify_cq = req_notify_cq;
    c->ibv.ops.post_send = post_send;
    c->ibv.ops.post_recv = post_recv;
    c->ibv.cmd_fd = -1;
    /* The EFA driver sends no asynchronous event (no disassociate_ucontext): an fd that never fires. */
    c->ibv.async_fd = eventfd(0, EFD_CLOEXEC);
    if (c->ibv.async_fd < 0) {
        int saved = errno;
        free(c);
        return fail(saved);
    }
    c->ibv.num_comp_vectors = 1;
    pthread_mutex_init(&c->ibv.mutex, NULL);
    return &c->ibv;
}

int ibv_close_device(struct ibv_context *context)
{
    close(context->async_fd);
    pthread_mutex_destroy(&context->mutex);
    free(context);
    return 0;
}

int efa_double_is_efa(struct ibv_context *ctx)
{
    init();
    for (int i = 0; i < device_count; i++) {
        if (ctx->device == &devices[i].ibv) {
            return 1;
        }
    }
    return 0;
}

int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
    struct dev *d = to_ctx(context)->dev;
    memset(attr, 0, sizeof(*attr));
    snprintf(attr->fw_ver, sizeof(attr->fw_ver), "0.0.0 (efa double)");
    memcpy(&attr->node_guid, d->gid.raw + 8, sizeof(attr->node_guid));
    attr->max_mr_size = 1ull << 40;
    attr->page_size_cap = 4096;
    attr->vendor_id = EFA_DOUBLE_VENDOR_ID;
    attr->vendor_part_id = EFA_DOUBLE_VENDOR_PART_ID;
    attr->max_qp = 256;
    attr->max_qp_wr = MAX_SQ_WR;
    attr->max_sge = MAX_SQ_SGE;
    attr->max_cq = 512;
    attr->max_cqe = MAX_CQE;
    attr->max_mr = 1024;
    attr->max_pd = 256;
    attr->max_ah = max_ah;
    attr->max_pkeys = 1;
    attr->phys_port_cnt = 1;
    return 0;
}

/* The inline ibv_query_port comes here (no verbs_context): ibv_port_attr's older prefix. */
#undef ibv_query_port
int ibv_query_port(struct ibv_context *context, uint8_t port_num, struct _compat_ibv_port_attr *compat)
{
    struct ibv_port_attr *attr = (struct ibv_port_attr *)compat;
    (void)context;
    if (port_num != 1) {
        return EINVAL;
    }
    memset(attr, 0, offsetof(struct ibv_port_attr, link_layer));
    attr->state = IBV_PORT_ACTIVE;
    attr->max_mtu = IBV_MTU_4096;
    attr->active_mtu = IBV_MTU_4096;
    attr->gid_tbl_len = 1;
    attr->max_msg_sz = MAX_MSG_SZ;
    attr->pkey_tbl_len = 1;
    attr->active_width = 2;
    attr->active_speed = 32;
    attr->phys_state = 5;
    attr->link_layer = IBV_LINK_LAYER_UNSPECIFIED;
    return 0;
}

/* EFA has one GID per port (efa_query_gid: index 0; the core refuses others). */
int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
    if (port_num != 1 || index != 0) {
        errno = EINVAL;
        return -1;
    }
    *gid = to_ctx(context)->dev->gid;
    return 0;
}

int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t index,
                      struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
    if (flags != 0 || entry_size < sizeof(*entry) || port_num != 1 || index != 0) {
        return EINVAL;
    }
    memset(entry, 0, sizeof(*entry));
    entry->gid = to_ctx(context)->dev->gid;
    entry->port_num = 1;
    entry->gid_type = IBV_GID_TYPE_IB;
    return 0;
}

/* ---- PD, MR ---- */

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
    struct ibv_pd *pd = calloc(1, sizeof(*pd));
    if (pd == NULL) {
        return fail(ENOMEM);
    }
    pd->context = context;
    return pd;
}

static int pd_in_use(struct ibv_pd *pd)
{
    for (struct mr *m = mrs; m != NULL; m = m->next) {
        if (m->ibv.pd == pd) {
            return 1;
        }
    }
    for (struct hw_ah *h = hw_ahs; h != NULL; h = h->next) {
        if (h->pd == pd) {
            return 1;
        }
    }
    for (struct qp *q = qps; q != NULL; q = q->next) {
        if (q->ibv.pd == pd) {
            return 1;
        }
    }
    return 0;
}

/* The kernel refuses to free a PD that still has objects (ib_dealloc_pd_user's usecnt). */
int ibv_dealloc_pd(struct ibv_pd *pd)
{
    pthread_mutex_lock(&lock);
    int busy = pd_in_use(pd);
    pthread_mutex_unlock(&lock);
    if (busy) {
        return EBUSY;
    }
    free(pd);
    return 0;
}

/* The pages an MR pins: every page the range touches (ib_umem_get: ib_umem_num_pages). */
static uint64_t pinned_pages(const void *addr, size_t length)
{
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    uint64_t start = (uintptr_t)addr & ~(page - 1);
    uint64_t end = ((uintptr_t)addr + length + page - 1) & ~(page - 1);
    return (end - start) / page;
}

/* capable(CAP_IPC_LOCK) for this process: bit 14 of CapEff in /proc/self/status. */
static int can_lock_memory(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL) {
        return 1;
    }
    char line[256];
    unsigned long long caps = ~0ULL;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "CapEff: %llx", &caps) == 1) {
            break;
        }
    }
    fclose(f);
    return (caps >> 14) & 1;
}

/* The pages this process has pinned in MRs (the kernel's mm->pinned_vm); under lock. */
static uint64_t pinned_vm;

/*
 * efa_reg_mr pins the range with ib_umem_get, which refuses ENOMEM when the process would pin
 * more than RLIMIT_MEMLOCK without CAP_IPC_LOCK.
 */
#undef ibv_reg_mr
struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
    static uint32_t next_key = 0x100;
    struct rlimit limit;
    if (getrlimit(RLIMIT_MEMLOCK, &limit) != 0) {
        return fail(errno);
    }
    uint64_t lock_limit = limit.rlim_cur == RLIM_INFINITY ? UINT64_MAX : limit.rlim_cur / (uint64_t)sysconf(_SC_PAGESIZE);
    int unlimited = can_lock_memory();
    struct mr *m = calloc(1, sizeof(*m));
    if (m == NULL) {
        return fail(ENOMEM);
    }
    m->ibv.context = pd->context;
    m->ibv.pd = pd;
    m->ibv.addr = addr;
    m->ibv.length = length;
    m->pages = pinned_pages(addr, length);
    (void)access;
    pthread_mutex_lock(&lock);
    if (!unlimited && pinned_vm + m->pages > lock_limit) {
        pthread_mutex_unlock(&lock);
        free(m);
        return fail(ENOMEM);
    }
    pinned_vm += m->pages;
    m->ibv.lkey = m->ibv.rkey = next_key++;
    m->next = mrs;
    mrs = m;
    pthread_mutex_unlock(&lock);
    return &m->ibv;
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
    pthread_mutex_lock(&lock);
    for (struct mr **p = &mrs; *p != NULL; p = &(*p)->next) {
        if (&(*p)->ibv == mr) {
            pinned_vm -= (*p)->pages;
            *p = (*p)->next;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    free(mr);
    return 0;
}

/* An SGE the device may touch: inside an MR of the QP's PD with that lkey (else INVALID_LKEY). */
static int sge_ok(struct ibv_pd *pd, const struct ibv_sge *sge)
{
    for (struct mr *m = mrs; m != NULL; m = m->next) {
        if (m->ibv.lkey == sge->lkey && m->ibv.pd == pd) {
            uint64_t start = (uintptr_t)m->ibv.addr;
            return sge->addr >= start && sge->addr + sge->length <= start + m->ibv.length;
        }
    }
    return 0;
}

/* ---- AH ---- */

static struct dev *dev_by_gid(const union ibv_gid *gid)
{
    for (int i = 0; i < device_count; i++) {
        if (memcmp(devices[i].gid.raw, gid->raw, sizeof(gid->raw)) == 0) {
            return &devices[i];
        }
    }
    return NULL;
}

/*
 * The AHN of a new hardware AH, under lock. The kernel's efa_create_ah passes the device's answer
 * to its admin command (efa_com_create_ah: the completion's ah) to user space as
 * efa_address_handle, which libefa's efa_create_ah keeps and the device writes into each receive
 * completion (efa_io_rx_cdesc.ah, "Remote Address Handle FW index"): an index of the device's AH
 * table, below max_ah, that a destroy frees for a later create. In what order the device hands
 * them out is not public, so EFA_DOUBLE_AHN picks: lowest, the lowest free index (a destroyed
 * AH's number is the next create's), or roundrobin (the default), every number of 1..65534 in
 * turn, so a freed one comes back only after 65533 creates.
 */
static uint16_t new_ahn(struct dev *d)
{
    if (!ahn_lowest) {
        uint16_t ahn = (uint16_t)d->next_ahn;
        d->next_ahn = d->next_ahn % 0xFFFE + 1;
        return ahn;
    }
    /* Below max_ah, since the caller checked ah_count < max_ah; 0xFFFF is "no AH" (efa_io_defs.h). */
    for (uint32_t ahn = 0; ahn < EFA_DOUBLE_NO_AHN; ahn++) {
        int taken = 0;
        for (struct hw_ah *h = hw_ahs; h != NULL && !taken; h = h->next) {
            taken = h->ahn == ahn && to_ctx(h->pd->context)->dev == d;
        }
        if (!taken) {
            return (uint16_t)ahn;
        }
    }
    fprintf(stderr, "efa double: EFA_DOUBLE_AHN=lowest with max_ah %d: no AHN below 0xFFFF free\n", max_ah);
    abort();
}

static struct hw_ah *hw_ah_of(struct ibv_pd *pd, const union ibv_gid *gid)
{
    for (struct hw_ah *h = hw_ahs; h != NULL; h = h->next) {
        if (h->pd == pd && memcmp(h->gid.raw, gid->raw, sizeof(gid->raw)) == 0) {
            return h;
        }
    }
    return NULL;
}

/*
 * The core checks port and sgid_index (rdma_is_port_valid, rdma_get_gid_attr); the kernel's
 * efa_create_ah uses only the dgid, which must be a GID of the fabric: EINVAL otherwise
 * (libfabric PR #12136). max_ah spent: the admin queue's RESOURCE_ALLOCATION_FAILURE, ENOMEM
 * (efa_com_status_to_errno).
 */
struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
    if (attr->port_num != 1 || !attr->is_global || attr->grh.sgid_index != 0) {
        return fail(EINVAL);
    }
    struct ah *a = calloc(1, sizeof(*a));
    if (a == NULL) {
        return fail(ENOMEM);
    }
    pthread_mutex_lock(&lock);
    struct dev *d = to_ctx(pd->context)->dev;
    int err = 0;
    struct hw_ah *h = NULL;
    if (dev_by_gid(&attr->grh.dgid) == NULL) {
        err = EINVAL;
    } else if ((h = hw_ah_of(pd, &attr->grh.dgid)) == NULL) {
        if (d->ah_count >= max_ah) {
            err = ENOMEM;
        } else if ((h = calloc(1, sizeof(*h))) == NULL) {
            err = ENOMEM;
        } else {
            h->pd = pd;
            h->gid = attr->grh.dgid;
            h->ahn = new_ahn(d);
            h->next = hw_ahs;
            hw_ahs = h;
            d->ah_count++;
        }
    }
    if (h != NULL) {
        h->users++;
    }
    pthread_mutex_unlock(&lock);
    if (err != 0) {
        free(a);
        return fail(err);
    }
    a->ibv.context = pd->context;
    a->ibv.pd = pd;
    a->hw = h;
    return &a->ibv;
}

int ibv_destroy_ah(struct ibv_ah *ibv)
{
    struct ah *a = to_ah(ibv);
    pthread_mutex_lock(&lock);
    if (--a->hw->users == 0) {
        for (struct hw_ah **p = &hw_ahs; *p != NULL; p = &(*p)->next) {
            if (*p == a->hw) {
                *p = a->hw->next;
                break;
            }
        }
        to_ctx(ibv->context)->dev->ah_count--;
        free(a->hw);
    }
    pthread_mutex_unlock(&lock);
    free(a);
    return 0;
}

uint16_t efa_double_ahn(struct ibv_ah *ah)
{
    return to_ah(ah)->hw->ahn;
}

/* libibverbs' ibv_init_ah_from_wc: without IBV_WC_GRH (never set on EFA) a local AH to slid. */
int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num, struct ibv_wc *wc,
                        struct ibv_grh *grh, struct ibv_ah_attr *attr)
{
    (void)context;
    memset(attr, 0, sizeof(*attr));
    attr->dlid = wc->slid;
    attr->sl = wc->sl;
    attr->src_path_bits = wc->dlid_path_bits;
    attr->port_num = port_num;
    if (wc->wc_flags & IBV_WC_GRH) {
        attr->is_global = 1;
        attr->grh.dgid = grh->sgid;
        attr->grh.hop_limit = 0xFF;
    }
    return 0;
}

/* ---- completion channels and CQs ---- */

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
    struct channel *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return fail(ENOMEM);
    }
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        int saved = errno;
        free(c);
        return fail(saved);
    }
    c->ibv.context = context;
    c->ibv.fd = fds[0];
    c->write_fd = fds[1];
    return &c->ibv;
}

/* libibverbs' ibv_destroy_comp_channel: EBUSY while a CQ uses the channel. */
int ibv_destroy_comp_channel(struct ibv_comp_channel *ibv)
{
    struct channel *c = (struct channel *)ibv;
    pthread_mutex_lock(&lock);
    int busy = c->ibv.refcnt != 0;
    pthread_mutex_unlock(&lock);
    if (busy) {
        return EBUSY;
    }
    close(c->ibv.fd);
    close(c->write_fd);
    free(c);
    return 0;
}

static int start_poll(struct ibv_cq_ex *cq, struct ibv_poll_cq_attr *attr);
static int next_poll(struct ibv_cq_ex *cq);
static void end_poll(struct ibv_cq_ex *cq);
static enum ibv_wc_opcode read_opcode(struct ibv_cq_ex *cq);
static uint32_t read_vendor_err(struct ibv_cq_ex *cq);
static uint32_t read_byte_len(struct ibv_cq_ex *cq);
static uint32_t read_qp_num(struct ibv_cq_ex *cq);
static uint32_t read_src_qp(struct ibv_cq_ex *cq);
static unsigned int read_wc_flags(struct ibv_cq_ex *cq);
static uint32_t read_slid(struct ibv_cq_ex *cq);
static uint8_t read_sl(struct ibv_cq_ex *cq);
static uint8_t read_dlid_path_bits(struct ibv_cq_ex *cq);
static int read_sgid(struct efadv_cq *cq, union ibv_gid *sgid);

static struct cq *new_cq(struct ibv_context *ctx, int cqe, void *cq_context, struct ibv_comp_channel *channel)
{
    /* efa_create_cq_ex: a channel needs the CQ_NOTIFICATIONS capability. */
    if (channel != NULL && !cq_notifications) {
        return fail(EOPNOTSUPP);
    }
    if (cqe < 1 || cqe > MAX_CQE) {
        return fail(EINVAL);
    }
    struct cq *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return fail(ENOMEM);
    }
    c->ex.context = ctx;
    c->ex.channel = channel;
    c->ex.cq_context = cq_context;
    /* libefa rounds the depth up to a power of two (roundup_pow_of_two in efa_create_cq_ex). */
    uint32_t depth = 1;
    while (depth < (uint32_t)cqe) {
        depth <<= 1;
    }
    c->ex.cqe = (int)depth;
    pthread_mutex_init(&c->ex.mutex, NULL);
    pthread_cond_init(&c->ex.cond, NULL);
    c->ex.start_poll = start_poll;
    c->ex.next_poll = next_poll;
    c->ex.end_poll = end_poll;
    c->ex.read_opcode = read_opcode;
    c->ex.read_vendor_err = read_vendor_err;
    c->ex.read_byte_len = read_byte_len;
    c->ex.read_qp_num = read_qp_num;
    c->ex.read_src_qp = read_src_qp;
    c->ex.read_wc_flags = read_wc_flags;
    c->ex.read_slid = read_slid;
    c->ex.read_sl = read_sl;
    c->ex.read_dlid_path_bits = read_dlid_path_bits;
    c->efadv.wc_read_sgid = read_sgid;
    if (channel != NULL) {
        pthread_mutex_lock(&lock);
        channel->refcnt++;
        pthread_mutex_unlock(&lock);
    }
    return c;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
                             struct ibv_comp_channel *channel, int comp_vector)
{
    (void)comp_vector;
    struct cq *c = new_cq(context, cqe, cq_context, channel);
    return c == NULL ? NULL : (struct ibv_cq *)&c->ex;
}

struct ibv_cq_ex *efa_double_create_cq(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *attr, int with_sgid)
{
    struct cq *c = new_cq(ctx, (int)attr->cqe, attr->cq_context, attr->channel);
    if (c == NULL) {
        return NULL;
    }
    c->with_sgid = with_sgid;
    attr->cqe = (uint32_t)c->ex.cqe;
    return &c->ex;
}

struct efadv_cq *efa_double_efadv_cq(struct ibv_cq_ex *cq)
{
    return &ex_to_cq(cq)->efadv;
}

static void abort_with(const char *what)
{
    fprintf(stderr, "efa double: %s\n", what);
    abort();
}

int ibv_destroy_cq(struct ibv_cq *ibv)
{
    struct cq *c = to_cq(ibv);
    pthread_mutex_lock(&lock);
    if (c->qps != 0) {
        pthread_mutex_unlock(&lock);
        return EBUSY;
    }
    /* libibverbs' ibv_cmd_destroy_cq waits, for ever, for every event to be acknowledged. */
    if (c->events_reported != c->ex.comp_events_completed) {
        abort_with("ibv_destroy_cq with unacknowledged completion events: libibverbs would wait for ever");
    }
    if (c->ex.channel != NULL) {
        c->ex.channel->refcnt--;
    }
    pthread_mutex_unlock(&lock);
    pthread_cond_destroy(&c->ex.cond);
    pthread_mutex_destroy(&c->ex.mutex);
    free(c->ring);
    free(c);
    return 0;
}

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
    struct ibv_cq *from;
    if (read(channel->fd, &from, sizeof(from)) != (ssize_t)sizeof(from)) {
        return -1;
    }
    pthread_mutex_lock(&lock);
    to_cq(from)->events_reported++;
    pthread_mutex_unlock(&lock);
    *cq = from;
    *cq_context = from->cq_context;
    return 0;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
    pthread_mutex_lock(&lock);
    cq->comp_events_completed += nevents;
    pthread_mutex_unlock(&lock);
}

static int req_notify_cq(struct ibv_cq *ibv, int solicited_only)
{
    (void)solicited_only;
    struct cq *c = to_cq(ibv);
    if (c->ex.channel == NULL) {
        return EINVAL;
    }
    pthread_mutex_lock(&lock);
    c->armed = 1;
    pthread_mutex_unlock(&lock);
    return 0;
}

/* Under lock. An armed CQ signals its channel once, for its next completion. */
static void push(struct cq *c, const struct cqe *e)
{
    if (c->len == c->cap) {
        uint32_t cap = c->cap == 0 ? 64 : c->cap * 2;
        struct cqe *ring = malloc(cap * sizeof(*ring));
        if (ring == NULL) {
            abort_with("out of memory growing a CQ");
        }
        for (uint32_t i = 0; i < c->len; i++) {
            ring[i] = c->ring[(c->head + i) % c->cap];
        }
        free(c->ring);
        c->ring = ring;
        c->cap = cap;
        c->head = 0;
    }
    c->ring[(c->head + c->len) % c->cap] = *e;
    c->len++;
    if (c->armed && c->ex.channel != NULL) {
        struct ibv_cq *self = (struct ibv_cq *)&c->ex;
        c->armed = 0;
        if (write(((struct channel *)c->ex.channel)->write_fd, &self, sizeof(self)) != (ssize_t)sizeof(self)) {
            abort_with("completion channel pipe full");
        }
    }
}

/*
 * Under lock. libefa resolves a completion's wr_id by slot when it is polled
 * (efa_wq_get_wrid_by_dev_req_id) and hands the slot back (efa_wq_put_wrid_idx_locked). A
 * completion from before a RESET (efa_qp_init_indices) hands back a slot twice: past the pool.
 */
static uint64_t take(struct cqe *e)
{
    struct wq *w = e->is_send ? &e->qp->sq : &e->qp->rq;
    if (w->pool_next == 0) {
        abort_with("a completion polled after its QP was reset handed a slot back twice "
                   "(libefa would write before its wrid_idx_pool)");
    }
    w->pool[--w->pool_next] = e->slot;
    return w->wrid[e->slot];
}

static int pop(struct cq *c, struct cqe *out, uint64_t *wr_id)
{
    if (stall_phase == STALL_ON) {
        (void)stalled(); /* a poll is when the device is seen to make progress */
    }
    if (c->len == 0) {
        return 0;
    }
    *out = c->ring[c->head];
    c->head = (c->head + 1) % c->cap;
    c->len--;
    *wr_id = take(out);
    return 1;
}

/*
 * efa_process_cqe, field for field: wc_flags 0 (no GRH flag on EFA), vendor_err the device
 * status, sl 0 on a receive. What it leaves unwritten stays as the caller left it: pkey_index,
 * dlid_path_bits and imm_data of a receive, and every receive field of a send.
 */
static void to_wc(const struct cqe *e, uint64_t wr_id, struct ibv_wc *wc)
{
    wc->wc_flags = 0;
    wc->wr_id = wr_id;
    wc->status = to_ibv_status(e->status);
    wc->vendor_err = (uint32_t)e->status;
    wc->qp_num = e->qp_num;
    wc->opcode = e->is_send ? IBV_WC_SEND : IBV_WC_RECV;
    if (!e->is_send) {
        wc->byte_len = e->byte_len;
        wc->src_qp = e->src_qp;
        wc->slid = e->slid;
        wc->sl = 0;
    }
}

static int poll_cq(struct ibv_cq *ibv, int n, struct ibv_wc *wc)
{
    struct cq *c = to_cq(ibv);
    int got = 0;
    pthread_mutex_lock(&lock);
    struct cqe e;
    uint64_t wr_id;
    while (got < n && pop(c, &e, &wr_id)) {
        to_wc(&e, wr_id, &wc[got++]);
    }
    pthread_mutex_unlock(&lock);
    return got;
}

static int load_current(struct cq *c)
{
    pthread_mutex_lock(&lock);
    int got = pop(c, &c->cur, &c->cur_wr_id);
    pthread_mutex_unlock(&lock);
    if (!got) {
        return ENOENT;
    }
    c->ex.wr_id = c->cur_wr_id;
    c->ex.status = to_ibv_status(c->cur.status);
    return 0;
}

static int start_poll(struct ibv_cq_ex *cq, struct ibv_poll_cq_attr *attr)
{
    if (attr->comp_mask != 0) {
        return EINVAL;
    }
    return load_current(ex_to_cq(cq));
}

static int next_poll(struct ibv_cq_ex *cq) { return load_current(ex_to_cq(cq)); }
static void end_poll(struct ibv_cq_ex *cq) { (void)cq; }

static struct ibv_wc current_wc(struct ibv_cq_ex *cq)
{
    struct ibv_wc wc;
    memset(&wc, 0, sizeof(wc)); /* what to_wc leaves unwritten reads 0 here, as libefa's read_* give */
    to_wc(&ex_to_cq(cq)->cur, ex_to_cq(cq)->cur_wr_id, &wc);
    return wc;
}

static enum ibv_wc_opcode read_opcode(struct ibv_cq_ex *cq) { return current_wc(cq).opcode; }
static uint32_t read_vendor_err(struct ibv_cq_ex *cq) { return current_wc(cq).vendor_err; }
static uint32_t read_byte_len(struct ibv_cq_ex *cq) { return current_wc(cq).byte_len; }
static uint32_t read_qp_num(struct ibv_cq_ex *cq) { return current_wc(cq).qp_num; }
static uint32_t read_src_qp(struct ibv_cq_ex *cq) { return current_wc(cq).src_qp; }
static unsigned int read_wc_flags(struct ibv_cq_ex *cq) { return current_wc(cq).wc_flags; }
static uint32_t read_slid(struct ibv_cq_ex *cq) { return current_wc(cq).slid; }
static uint8_t read_sl(struct ibv_cq_ex *cq) { return current_wc(cq).sl; }
static uint8_t read_dlid_path_bits(struct ibv_cq_ex *cq) { return current_wc(cq).dlid_path_bits; }

/* efa_wc_read_sgid: the GID only where slid names no AH of the receiver (0xFFFF), else -ENOENT. */
static int read_sgid(struct efadv_cq *efadv, union ibv_gid *sgid)
{
    struct cq *c = (struct cq *)((char *)efadv - offsetof(struct cq, efadv));
    if (c->cur.slid != EFA_DOUBLE_NO_AHN) {
        return -ENOENT;
    }
    /* Without EFA_CREATE_CQ_WITH_SGID the device leaves the descriptor's address unwritten. */
    if (c->with_sgid) {
        *sgid = c->cur.sgid;
    } else {
        memset(sgid, 0, sizeof(*sgid));
    }
    return 0;
}

/* ---- QPs ---- */

static int wq_init(struct wq *w, uint32_t cnt, uint32_t max_sge)
{
    w->wrid = calloc(cnt, sizeof(*w->wrid));
    w->pool = calloc(cnt, sizeof(*w->pool));
    w->cnt = cnt;
    w->max_sge = max_sge;
    return w->wrid != NULL && w->pool != NULL ? 0 : ENOMEM;
}

/* efa_qp_init_indices: every slot free again, in order, the producer index 0; not the phase. */
static void wq_rewind(struct wq *w)
{
    for (uint32_t i = 0; i < w->cnt; i++) {
        w->pool[i] = i;
    }
    w->pool_next = 0;
    w->pc = 0;
}

static uint32_t wq_take(struct wq *w, uint64_t wr_id)
{
    uint32_t slot = w->pool[w->pool_next++];
    w->wrid[slot] = wr_id;
    return slot;
}

static void qp_free(struct qp *q)
{
    free(q->sq.wrid);
    free(q->sq.pool);
    free(q->rq.wrid);
    free(q->rq.pool);
    free(q->fifo);
    free(q);
}

/* efa_check_qp_attr and efa_check_qp_limits: depths, SGEs and inline size against the device. */
static struct ibv_qp *create(struct ibv_pd *pd, struct ibv_qp_init_attr *attr, int srd)
{
    if (attr->send_cq == NULL || attr->recv_cq == NULL || attr->srq != NULL) {
        return fail(EINVAL);
    }
    struct ibv_qp_cap *cap = &attr->cap;
    if (cap->max_send_sge > MAX_SQ_SGE || cap->max_recv_sge > MAX_RQ_SGE || cap->max_inline_data > INLINE_BUF_SIZE) {
        return fail(EINVAL);
    }
    /*
     * Before rdma-core 63 the depths are held to max_sq_wr and max_rq_wr; since, to
     * efa_calc_sq_max_depth and efa_calc_rq_max_depth (what efadv_get_max_*_depth report).
     */
    if (max_depth_mode == DEPTH_ABSENT ? cap->max_send_wr > MAX_SQ_WR || cap->max_recv_wr > MAX_RQ_WR
        : (int64_t)cap->max_send_wr > efa_double_max_sq_depth(pd->context, cap->max_send_sge, 0, cap->max_inline_data, 0)
          || (int64_t)cap->max_recv_wr > efa_double_max_rq_depth(pd->context, cap->max_recv_sge > 0 ? cap->max_recv_sge : 1)) {
        return fail(EINVAL);
    }
    struct qp *q = calloc(1, sizeof(*q));
    if (q == NULL) {
        return fail(ENOMEM);
    }
    /* The kernel gives at least one slot per queue (efa_create_qp rounds up). */
    uint32_t sq = cap->max_send_wr > 0 ? cap->max_send_wr : 1;
    uint32_t rq = cap->max_recv_wr > 0 ? cap->max_recv_wr : 1;
    if (wq_init(&q->sq, sq, cap->max_send_sge) != 0 || wq_init(&q->rq, rq, cap->max_recv_sge) != 0
        || (q->fifo = calloc(rq, sizeof(*q->fifo))) == NULL) {
        qp_free(q);
        return fail(ENOMEM);
    }
    wq_rewind(&q->sq);
    wq_rewind(&q->rq);
    q->srd = srd;
    q->sq_sig_all = attr->sq_sig_all;
    q->cap = *cap;
    q->cap.max_send_wr = sq;
    q->cap.max_recv_wr = rq;
    q->cap.max_inline_data = INLINE_BUF_SIZE;
    *cap = q->cap;
    /* rnr_retry 7, retry for ever: SRD's default (libfabric sets it as "the SRD default"). */
    q->rnr_retry = 7;
    q->ibv.context = pd->context;
    q->ibv.qp_context = attr->qp_context;
    q->ibv.pd = pd;
    q->ibv.send_cq = attr->send_cq;
    q->ibv.recv_cq = attr->recv_cq;
    q->ibv.qp_type = attr->qp_type;
    q->ibv.state = IBV_QPS_RESET;
    pthread_mutex_init(&q->ibv.mutex, NULL);
    pthread_cond_init(&q->ibv.cond, NULL);
    pthread_mutex_lock(&lock);
    q->dev = to_ctx(pd->context)->dev;
    /* 16 bits: efa_io_rx_cdesc.src_qp_num carries no more. */
    q->ibv.qp_num = q->dev->next_qpn;
    q->dev->next_qpn = q->dev->next_qpn % 0xFFFF + 1;
    to_cq(attr->send_cq)->qps++;
    to_cq(attr->recv_cq)->qps++;
    q->next = qps;
    qps = q;
    pthread_mutex_unlock(&lock);
    return &q->ibv;
}

/* efa_create_qp: UD only through ibv_create_qp (SRD needs efadv_create_qp_ex). */
struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
    if (attr->qp_type != IBV_QPT_UD) {
        return fail(EOPNOTSUPP);
    }
    return create(pd, attr, 0);
}

struct ibv_qp *efa_double_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr_ex *attr, int srd)
{
    struct ibv_qp_init_attr init;
    memset(&init, 0, sizeof(init));
    init.qp_context = attr->qp_context;
    init.send_cq = attr->send_cq;
    init.recv_cq = attr->recv_cq;
    init.srq = attr->srq;
    init.cap = attr->cap;
    init.qp_type = attr->qp_type;
    init.sq_sig_all = attr->sq_sig_all;
    struct ibv_qp *q = create(pd, &init, srd);
    if (q != NULL) {
        attr->cap = init.cap;
    }
    return q;
}

/* Under lock. A completion of q's own work request on its send or receive CQ. */
static void complete(struct qp *q, int is_send, uint32_t slot, enum efa_status status)
{
    struct cqe e;
    memset(&e, 0, sizeof(e));
    e.qp = q;
    e.slot = slot;
    e.is_send = is_send;
    e.status = status;
    e.qp_num = q->ibv.qp_num;
    e.slid = EFA_DOUBLE_NO_AHN;
    push(to_cq(is_send ? q->ibv.send_cq : q->ibv.recv_cq), &e);
}

/* Under lock: every posted receive and every send still waiting on RNR completes FLUSHED. */
static void flush(struct qp *q)
{
    while (q->fifo_len > 0) {
        complete(q, 0, q->fifo[q->fifo_head].slot, EFA_FLUSHED);
        q->fifo_head = (q->fifo_head + 1) % q->rq.cnt;
        q->fifo_len--;
    }
    for (struct pending **p = &pendings; *p != NULL;) {
        struct pending *s = *p;
        if (s->from == q) {
            complete(q, 1, s->slot, EFA_FLUSHED);
            *p = s->next;
            free(s);
        } else {
            p = &s->next;
        }
    }
}

/*
 * Under lock: the QP enters ERR, by ibv_modify_qp or (EFA_DOUBLE_LEN_ERR=err) by the device after
 * a receive too short; with EFA_DOUBLE_ERR=flush its posted work requests complete FLUSHED.
 */
static void to_error(struct qp *q)
{
    enum ibv_qp_state from = q->ibv.state;
    q->ibv.state = IBV_QPS_ERR;
    if (from != IBV_QPS_ERR && err_flushes) {
        flush(q);
    }
}

/*
 * Under lock: the device puts the QP in error. With EFA_DOUBLE_QP_ERR=cached that is written to
 * ibv.state, as if libibverbs knew; with =device only the device knows (libefa's efa_modify_qp is
 * the one writer of verbs_qp.qp.state, and the device's error goes through none of it).
 */
static void device_error(struct qp *q)
{
    if (!device_err_uncached) {
        to_error(q);
        return;
    }
    if (!q->dev_err && err_flushes) {
        q->dev_err = 1;
        flush(q);
    }
    q->dev_err = 1;
}

/* Under lock: the sends q's device still keeps (RNR, held) are dropped, uncompleted. */
static void forget_kept(struct qp *q)
{
    for (struct pending **p = &pendings; *p != NULL;) {
        struct pending *s = *p;
        if (s->from == q) {
            *p = s->next;
            free(s);
        } else {
            p = &s->next;
        }
    }
}

/*
 * The core's ib_modify_qp_is_ok for UD-like QPs (RESET->INIT needs PKEY_INDEX, PORT, QKEY;
 * RTR->RTS needs SQ_PSN) and the kernel's efa_modify_qp_validate (port 1, P_Key index 0, else
 * EOPNOTSUPP; rnr_retry only at RTR->RTS and only with the RNR_RETRY capability).
 */
int ibv_modify_qp(struct ibv_qp *ibv, struct ibv_qp_attr *attr, int mask)
{
    struct qp *q = to_qp(ibv);
    pthread_mutex_lock(&lock);
    enum ibv_qp_state from = ibv->state;
    enum ibv_qp_state to = (mask & IBV_QP_STATE) ? attr->qp_state : from;
    int need = 0, allowed = IBV_QP_STATE | IBV_QP_CUR_STATE;
    int ok = 1;
    if (to == IBV_QPS_RESET || to == IBV_QPS_ERR) {
        /* any state may go there */
    } else if (from == IBV_QPS_RESET && to == IBV_QPS_INIT) {
        need = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
        allowed |= need;
    } else if (from == IBV_QPS_INIT && (to == IBV_QPS_INIT || to == IBV_QPS_RTR)) {
        allowed |= IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
    } else if (from == IBV_QPS_RTR && to == IBV_QPS_RTS) {
        need = IBV_QP_SQ_PSN;
        allowed |= need | IBV_QP_QKEY | (rnr_retry_cap ? IBV_QP_RNR_RETRY : 0);
    } else if (from == IBV_QPS_RTS && to == IBV_QPS_RTS) {
        allowed |= IBV_QP_QKEY;
    } else {
        ok = 0;
    }
    int err = 0;
    if (q->dev_err) {
        /* EFA_DOUBLE_QP_ERR=device: the device refuses the command for a QP it put in error. */
        err = EINVAL;
    } else if (!ok || (mask & need) != need || (mask & ~allowed) != 0) {
        err = EINVAL;
    } else if (((mask & IBV_QP_PORT) && attr->port_num != 1) || ((mask & IBV_QP_PKEY_INDEX) && attr->pkey_index != 0)) {
        err = EOPNOTSUPP;
    } else if ((mask & IBV_QP_RNR_RETRY) && attr->rnr_retry > 7) {
        err = EINVAL;
    }
    if (err == 0) {
        if (mask & IBV_QP_QKEY) {
            q->qkey = attr->qkey;
        }
        if (mask & IBV_QP_RNR_RETRY) {
            q->rnr_retry = attr->rnr_retry;
        }
        if (to == IBV_QPS_ERR) {
            to_error(q);
        } else {
            ibv->state = to;
        }
        if (to == IBV_QPS_RESET) {
            /*
             * efa_modify_qp: efa_qp_init_indices. EFA_DOUBLE_RESET=forgets: whatever was posted
             * is forgotten, not completed, and the SQ's phase starts over with the device's.
             * =keeps: what was posted completes FLUSHED (into slots RESET makes free again), and
             * libefa's sq.wq.phase stays while the device starts the queue over at phase 0.
             */
            if (reset_keeps) {
                flush(q);
            } else {
                forget_kept(q);
                q->sq.phase = 0;
            }
            wq_rewind(&q->sq);
            wq_rewind(&q->rq);
            q->fifo_head = q->fifo_len = 0;
            q->dev_phase = 0;
            q->dev_pc = 0;
        }
    }
    pthread_mutex_unlock(&lock);
    return err;
}

int ibv_query_qp(struct ibv_qp *ibv, struct ibv_qp_attr *attr, int mask, struct ibv_qp_init_attr *init)
{
    (void)mask;
    struct qp *q = to_qp(ibv);
    memset(attr, 0, sizeof(*attr));
    memset(init, 0, sizeof(*init));
    pthread_mutex_lock(&lock);
    /* efa_query_qp asks the device; libibverbs' ibv_query_qp writes what it said to ibv.state. */
    if (q->dev_err) {
        ibv->state = IBV_QPS_ERR;
    }
    attr->qp_state = ibv->state;
    attr->cur_qp_state = ibv->state;
    attr->qkey = q->qkey;
    attr->port_num = 1;
    attr->rnr_retry = q->rnr_retry;
    attr->cap = q->cap;
    pthread_mutex_unlock(&lock);
    init->send_cq = ibv->send_cq;
    init->recv_cq = ibv->recv_cq;
    init->cap = q->cap;
    init->qp_type = ibv->qp_type;
    init->sq_sig_all = q->sq_sig_all;
    return 0;
}

/*
 * libefa's efa_destroy_qp; the device "will clear all active WQEs on ibv_destroy_qp()" (libfabric
 * PR #10968): its completions, and sends waiting on RNR, go with it. Sends of others waiting on
 * this QP as receiver end BAD_DEST_QPN (to_ibv_status: EFA_REMOTE_BAD_DEST_QPN).
 */
int ibv_destroy_qp(struct ibv_qp *ibv)
{
    struct qp *q = to_qp(ibv);
    pthread_mutex_lock(&lock);
    for (struct pending **p = &pendings; *p != NULL;) {
        struct pending *s = *p;
        if (s->from == q || s->to == q) {
            if (s->from != q) {
                complete(s->from, 1, s->slot, EFA_REMOTE_BAD_DEST_QPN);
            }
            *p = s->next;
            free(s);
        } else {
            p = &s->next;
        }
    }
    struct cq *cqs[2] = {to_cq(ibv->send_cq), to_cq(ibv->recv_cq)};
    for (int i = 0; i < 2; i++) {
        struct cq *c = cqs[i];
        uint32_t kept = 0;
        for (uint32_t j = 0; j < c->len; j++) {
            struct cqe e = c->ring[(c->head + j) % c->cap];
            if (e.qp != q) {
                c->ring[(c->head + kept++) % c->cap] = e;
            }
        }
        c->len = kept;
        c->qps--;
    }
    for (struct qp **p = &qps; *p != NULL; p = &(*p)->next) {
        if (*p == q) {
            *p = q->next;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    pthread_cond_destroy(&ibv->cond);
    pthread_mutex_destroy(&ibv->mutex);
    qp_free(q);
    return 0;
}

/* ---- the fabric ---- */

static struct qp *find_qp(const union ibv_gid *gid, uint32_t qpn)
{
    for (struct qp *q = qps; q != NULL; q = q->next) {
        if (q->ibv.qp_num == qpn && memcmp(q->dev->gid.raw, gid->raw, sizeof(gid->raw)) == 0) {
            return q;
        }
    }
    return NULL;
}

/*
 * Under lock: the receive at the head of to's queue takes the datagram. UD's payload lands 40
 * bytes in (the area is not a GRH: filled here with a pattern, never a GID); SRD's at offset 0.
 * A receive too short ends LOC_LEN_ERR (to_ibv_status: LOCAL_ERROR_BAD_LENGTH), and the sender
 * of SRD gets REMOTE_ERROR_BAD_LENGTH (EFA_REMOTE_BAD_LENGTH); whether the receiver's QP then
 * leaves RTS is unknown on EFA (efa_io_defs.h and libefa's efa_process_cqe do not say), so it
 * stays in RTS or, with EFA_DOUBLE_LEN_ERR=err, enters ERR. byte_len counts the 40 bytes,
 * as on InfiniBand (unverified on EFA). slid is the receiver PD's AHN for the sender
 * (efa_io_rx_cdesc.ah), else 0xFFFF and the GID is read with efadv_wc_read_sgid.
 */
static enum efa_status deliver(struct qp *from, struct qp *to, const uint8_t *data, uint32_t len)
{
    struct recv *r = &to->fifo[to->fifo_head];
    to->fifo_head = (to->fifo_head + 1) % to->rq.cnt;
    to->fifo_len--;
    if (to->srd) {
        srd_delivered++;
    }
    uint32_t prefix = to->srd ? 0 : EFA_DOUBLE_UD_PREFIX;
    uint64_t room = 0;
    int lkeys_ok = 1;
    for (int i = 0; i < r->num_sge; i++) {
        room += r->sge[i].length;
        lkeys_ok &= sge_ok(to->ibv.pd, &r->sge[i]);
    }
    struct cqe e;
    memset(&e, 0, sizeof(e));
    e.qp = to;
    e.slot = r->slot;
    e.qp_num = to->ibv.qp_num;
    e.src_qp = from->ibv.qp_num & 0xFFFF;
    struct hw_ah *h = hw_ah_of(to->ibv.pd, &from->dev->gid);
    e.slid = h != NULL ? h->ahn : EFA_DOUBLE_NO_AHN;
    e.sgid = from->dev->gid;
    enum efa_status sender = EFA_OK;
    if (!lkeys_ok) {
        e.status = EFA_LOCAL_INVALID_LKEY;
        sender = EFA_REMOTE_ABORT;
    } else if (room < (uint64_t)prefix + len) {
        e.status = EFA_LOCAL_BAD_LENGTH;
        sender = EFA_REMOTE_BAD_LENGTH;
    } else {
        uint8_t area[EFA_DOUBLE_UD_PREFIX];
        memset(area, 0xEF, sizeof(area));
        uint32_t total = prefix + len, done = 0;
        for (int i = 0; i < r->num_sge && done < total; i++) {
            uint8_t *dst = (uint8_t *)(uintptr_t)r->sge[i].addr;
            for (uint32_t k = 0; k < r->sge[i].length && done < total; k++, done++) {
                dst[k] = done < prefix ? area[done] : data[done - prefix];
            }
        }
        e.status = EFA_OK;
        e.byte_len = total;
    }
    push(to_cq(to->ibv.recv_cq), &e);
    if (e.status == EFA_LOCAL_BAD_LENGTH && len_err_to_err) {
        device_error(to);
    }
    return to->srd ? sender : EFA_OK;
}

/* Under lock: SRD sends that met RNR go out, in order, as to posts receives. */
static void retry_pending(struct qp *to)
{
    if (stalled()) {
        return;
    }
    /* Unlinked before its delivery, which may flush (to_error) and so change the list: restart. */
    for (struct pending **p = &pendings; *p != NULL && to->fifo_len > 0;) {
        struct pending *s = *p;
        if (s->to == to) {
            *p = s->next;
            complete(s->from, 1, s->slot, deliver(s->from, to, s->data, s->len));
            free(s);
            p = &pendings;
        } else {
            p = &s->next;
        }
    }
}

/* Under lock: a send kept by the device, after those kept before it. */
static void keep(struct qp *from, struct qp *to, uint32_t slot, const uint8_t *data, uint32_t len)
{
    struct pending *s = malloc(sizeof(*s) + len);
    if (s == NULL) {
        abort_with("out of memory keeping a send");
    }
    s->from = from;
    s->to = to;
    s->slot = slot;
    s->len = len;
    if (len > 0) {
        memcpy(s->data, data, len);
    }
    s->next = NULL;
    struct pending **tail = &pendings;
    while (*tail != NULL) {
        tail = &(*tail)->next;
    }
    *tail = s;
}

static int receiving(const struct qp *q)
{
    return (q->ibv.state == IBV_QPS_RTR || q->ibv.state == IBV_QPS_RTS) && !q->dev_err;
}

/*
 * Under lock: one validated send. Another PD's AH is taken at post (libefa copies the AHN) and
 * fails as a completion (LOCAL_ERROR_INVALID_AH: EFA_LOCAL_INVALID_AH); a bad lkey fails
 * LOCAL_ERROR_INVALID_LKEY (EFA_LOCAL_INVALID_LKEY). UD to no QP, a Q_Key mismatch or a QP not
 * receiving is lost and still completes; SRD to no QP ends BAD_DEST_QPN. SRD without a posted
 * receive meets RNR: kept and resent as receives come with rnr_retry 7, otherwise ended
 * REMOTE_ERROR_RNR (EFA_REMOTE_RNR) at once, the retries counted as spent. The first
 * EFA_DOUBLE_HOLD_SENDS sends are held, whatever they are.
 */
static void send_one(struct qp *q, struct ibv_send_wr *wr, uint32_t slot)
{
    if (hold_sends > 0) {
        hold_sends--;
        keep(q, NULL, slot, NULL, 0);
        return;
    }
    struct ah *a = to_ah(wr->wr.ud.ah);
    uint8_t data[MAX_MSG_SZ];
    uint32_t len = 0;
    int lkeys_ok = 1;
    for (int i = 0; i < wr->num_sge; i++) {
        if (!(wr->send_flags & IBV_SEND_INLINE)) {
            lkeys_ok &= sge_ok(q->ibv.pd, &wr->sg_list[i]);
        }
        uint32_t n = wr->sg_list[i].length;
        if (len + n > sizeof(data)) {
            complete(q, 1, slot, EFA_LOCAL_BAD_LENGTH);
            return;
        }
        memcpy(data + len, (void *)(uintptr_t)wr->sg_list[i].addr, n);
        len += n;
    }
    if (a->ibv.pd != q->ibv.pd) {
        complete(q, 1, slot, EFA_LOCAL_INVALID_AH);
        return;
    }
    if (!lkeys_ok) {
        complete(q, 1, slot, EFA_LOCAL_INVALID_LKEY);
        return;
    }
    struct qp *to = find_qp(&a->hw->gid, wr->wr.ud.remote_qpn);
    if (to == NULL || to->srd != q->srd || !receiving(to) || to->qkey != wr->wr.ud.remote_qkey) {
        complete(q, 1, slot, q->srd ? EFA_REMOTE_BAD_DEST_QPN : EFA_OK);
        return;
    }
    int stall = to->srd && stalled();
    if (to->fifo_len > 0 && !stall) {
        complete(q, 1, slot, deliver(q, to, data, len));
        return;
    }
    if (!q->srd) {
        complete(q, 1, slot, EFA_OK);
        return;
    }
    stall_rnrs += (unsigned long long)stall;
    if (q->rnr_retry < 7) {
        complete(q, 1, slot, EFA_REMOTE_RNR);
        return;
    }
    keep(q, to, slot, data, len);
}

static uint32_t outstanding(const struct wq *w)
{
    return w->pool_next;
}

/*
 * libefa's efa_post_send_validate and efa_post_send_validate_wr, in its order: state RTS (or
 * SQD), signaled (EINVAL), flags SIGNALED|INLINE only, queue full ENOMEM, opcode SEND or
 * SEND_WITH_IMM, inline size, num_sge. The first refused request is *bad, its errno returned
 * positive; those before it were posted.
 */
static int post_send(struct ibv_qp *ibv, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
    struct qp *q = to_qp(ibv);
    int err = 0;
    pthread_mutex_lock(&lock);
    for (; wr != NULL; wr = wr->next) {
        if (ibv->state != IBV_QPS_RTS && ibv->state != IBV_QPS_SQD) {
            err = EINVAL;
        } else if (!(wr->send_flags & IBV_SEND_SIGNALED) && !q->sq_sig_all) {
            err = EINVAL;
        } else if (wr->send_flags & ~(IBV_SEND_SIGNALED | IBV_SEND_INLINE)) {
            err = EINVAL;
        } else if (outstanding(&q->sq) == q->sq.cnt) {
            err = ENOMEM;
        } else if (wr->opcode != IBV_WR_SEND && wr->opcode != IBV_WR_SEND_WITH_IMM) {
            err = EINVAL;
        } else if (wr->send_flags & IBV_SEND_INLINE) {
            uint64_t total = 0;
            for (int i = 0; i < wr->num_sge; i++) {
                total += wr->sg_list[i].length;
            }
            err = total > INLINE_BUF_SIZE ? EINVAL : 0;
        } else if (wr->num_sge < 0 || (uint32_t)wr->num_sge > q->sq.max_sge) {
            err = EINVAL;
        }
        if (err != 0) {
            *bad = wr;
            break;
        }
        uint32_t slot = wq_take(&q->sq, wr->wr_id);
        /* efa_set_common_ctrl_flags writes sq.wq.phase; efa_sq_advance_post_idx turns it each lap. */
        uint8_t phase = q->sq.phase;
        if (++q->sq.pc % q->sq.cnt == 0) {
            q->sq.phase ^= 1;
        }
        if (phase != q->dev_phase) {
            keep(q, NULL, slot, NULL, 0); /* a descriptor of an old lap to the device: never run */
            continue;
        }
        if (++q->dev_pc % q->sq.cnt == 0) {
            q->dev_phase ^= 1;
        }
        if (q->dev_err) {
            /* EFA_DOUBLE_QP_ERR=device: accepted by libefa, not run by the device in error. */
            if (err_flushes) {
                complete(q, 1, slot, EFA_FLUSHED);
            } else {
                keep(q, NULL, slot, NULL, 0);
            }
            continue;
        }
        send_one(q, wr, slot);
    }
    pthread_mutex_unlock(&lock);
    return err;
}

/*
 * libefa's efa_post_recv_validate: not in RESET or ERR, num_sge, queue full ENOMEM. A receive
 * with no SGE takes a slot but writes no descriptor (efa_post_recv's loop): it never completes.
 * Each SGE's length is cut to 16 bits (rx_buf.length = min(length, UINT16_MAX)).
 */
static int post_recv(struct ibv_qp *ibv, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
    struct qp *q = to_qp(ibv);
    int err = 0;
    pthread_mutex_lock(&lock);
    for (; wr != NULL; wr = wr->next) {
        if (ibv->state == IBV_QPS_RESET || ibv->state == IBV_QPS_ERR) {
            err = EINVAL;
        } else if (wr->num_sge < 0 || (uint32_t)wr->num_sge > q->rq.max_sge) {
            err = EINVAL;
        } else if (outstanding(&q->rq) == q->rq.cnt) {
            err = ENOMEM;
        }
        if (err != 0) {
            *bad = wr;
            break;
        }
        uint32_t slot = wq_take(&q->rq, wr->wr_id);
        if (wr->num_sge == 0) {
            continue;
        }
        if (q->dev_err && err_flushes) {
            complete(q, 0, slot, EFA_FLUSHED); /* EFA_DOUBLE_QP_ERR=device: flushed at once */
            continue;
        }
        struct recv *r = &q->fifo[(q->fifo_head + q->fifo_len) % q->rq.cnt];
        r->slot = slot;
        r->num_sge = wr->num_sge;
        for (int i = 0; i < wr->num_sge; i++) {
            r->sge[i] = wr->sg_list[i];
            if (r->sge[i].length > UINT16_MAX) {
                r->sge[i].length = UINT16_MAX;
            }
        }
        q->fifo_len++;
    }
    retry_pending(q);
    pthread_mutex_unlock(&lock);
    return err;
}

/* ---- asynchronous events: EFA sends none ---- */

int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
    uint64_t n;
    (void)event;
    if (read(context->async_fd, &n, sizeof(n)) < 0) {
        return -1;
    }
    errno = EIO;
    return -1;
}

void ibv_ack_async_event(struct ibv_async_event *event)
{
    (void)event;
}

/*
 * efa_calc_sq_max_depth: the LLQ over the descriptor's size (128 bytes with more inline data than
 * a 64-byte one holds, or inline write), rounded down to a power of two; -EOPNOTSUPP where
 * EFA_DOUBLE_MAX_DEPTH=absent (the stub then meets what a libefa without the call gives it).
 * EFA_DOUBLE_MAX_DEPTH=smaller reports SMALLER_SQ_DEPTH instead, below max_sq_wr.
 */
int efa_double_max_sq_depth(struct ibv_context *ctx, uint32_t max_send_sge, uint32_t max_rdma_sge,
                            uint32_t max_inline_data, int inline_write)
{
    (void)ctx;
    if (max_depth_mode == DEPTH_ABSENT) {
        return -EOPNOTSUPP;
    }
    /* efadv_get_max_sq_depth's checks against ctx->max_sq_sge, max_wr_rdma_sge, inline_buf_size_ex. */
    if (max_send_sge > MAX_SQ_SGE || max_rdma_sge > MAX_RDMA_SGE || max_inline_data > INLINE_BUF_SIZE) {
        return -EINVAL;
    }
    int wqe = max_inline_data > TX_DESC_INLINE_MAX || inline_write ? 128 : 64;
    int depth = 1;
    while (depth * 2 <= LLQ_SIZE / wqe) {
        depth *= 2;
    }
    return max_depth_mode == DEPTH_SMALLER && depth > SMALLER_SQ_DEPTH ? SMALLER_SQ_DEPTH : depth;
}

/* efa_calc_rq_max_depth: max_rq_wr over max_recv_sge (1 or more); smaller: SMALLER_RQ_DEPTH at most. */
int efa_double_max_rq_depth(struct ibv_context *ctx, uint32_t max_recv_sge)
{
    (void)ctx;
    if (max_depth_mode == DEPTH_ABSENT) {
        return -EOPNOTSUPP;
    }
    if (max_recv_sge > MAX_RQ_SGE) {
        return -EINVAL;
    }
    if (max_recv_sge == 0) {
        /* libefa divides by it unchecked (SIGFPE): misuse that a test run must show. */
        fprintf(stderr, "efa double: efadv_get_max_rq_depth with max_recv_sge 0 divides by zero in libefa\n");
        abort();
    }
    int depth = MAX_RQ_WR / (int)max_recv_sge;
    return max_depth_mode == DEPTH_SMALLER && depth > SMALLER_RQ_DEPTH ? SMALLER_RQ_DEPTH : depth;
}

void efa_double_device_attr(struct ibv_context *ctx, struct efadv_device_attr *attr)
{
    (void)ctx;
    attr->max_sq_wr = MAX_SQ_WR;
    attr->max_rq_wr = MAX_RQ_WR;
    attr->max_sq_sge = MAX_SQ_SGE;
    attr->max_rq_sge = MAX_RQ_SGE;
    attr->inline_buf_size = INLINE_BUF_SIZE;
    attr->device_caps = EFADV_DEVICE_ATTR_CAPS_CQ_WITH_SGID | (rnr_retry_cap ? EFADV_DEVICE_ATTR_CAPS_RNR_RETRY : 0);
}
