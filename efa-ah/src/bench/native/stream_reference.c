/*
 * The C reference of `efa-ah stream` (both sides in one process), for scripts/bench-stream: what a
 * plain C program pays for the same stream over the same libibverbs and libefa. Bench-only, never
 * shipped; built by the script with gcc against the system's rdma-core headers and run over the
 * EFA double (LD_LIBRARY_PATH=efa-ah/target/native/efa-double/lib).
 *
 * The shape is the CLI's (StreamCommand.loopback over UdEndpoint), call for call, so that the
 * difference is efa-ah's own code and nothing else:
 * - one PD, two endpoints: the sender with 64 sends and 16 receives, the receiver with 1 send and
 *   --rx-depth receives (1,024); each a send CQ with a completion channel (ibv_create_cq), a
 *   receive CQ that reports the sender's GID, with a channel (efadv_create_cq,
 *   EFADV_WC_EX_WITH_SGID), a QP (SRD by efadv_create_qp_ex, UD by ibv_create_qp) taken to RTS
 *   with rnr_retry 3 on SRD (UdEndpoint.DEFAULT_RNR_RETRY), slots of the port's max_msg_sz (UD: 40
 *   bytes more), every receive posted at open;
 * - the sender (the main thread) posts up to 64 sends per ibv_post_send, each signaled; it polls
 *   its send CQ 16 at a time, until enough slots are free or a poll comes back short
 *   (SendSlots.tryPostBatch); with no slot free it waits;
 * - SRD RNR as SendSlots: a send that completes IBV_WC_RNR_RETRY_EXC_ERR keeps its slot and is
 *   posted again at once the first time, then after 64 us doubling to 100 ms, for 1 s from its
 *   first RNR; then it counts as failed. The resends due go in the batch's own ibv_post_send,
 *   ahead of its new sends; with no slot free (and in a flush) they go before each poll of the
 *   send CQ, all due in one ibv_post_send (SendSlots.tryPostBatch, resendDue);
 * - the receiver (a second thread) polls its receive CQ 64 at a time with ibv_start_poll and
 *   ibv_next_poll, reading every field the stub reads and the GID of each receive
 *   (efa_ah_efadv_poll_cq), until a poll comes back short, then hands out up to 64 per call to a
 *   handler that counts (a clock read per datagram, as the CLI's Counter) and reposts 64 at a time
 *   in one ibv_post_recv (ReceiveSlots.repost);
 * - every wait is CompletionWaiter's: spin (--spin, 50 us), then arm (ibv_req_notify_cq), step once
 *   more, and sleep in poll(2) on the channel's non-blocking fd with a wake and a stop eventfd,
 *   events read until EAGAIN and acknowledged 64 at a time; where what is awaited raises no event
 *   (a resend waiting for its time) it parks 20 us instead;
 * - the sender flushes (waits for every send to complete), then sends 5 end markers 50 ms apart;
 *   the receiver stops at the first.
 * With --pace (UD in scripts/bench-stream) the sender also waits, before each batch, for room in
 * the receiver's ring (see wait_for_credit), as the bench's Java harness does: UD then drops none.
 *
 * Printed on stdout, one line of key=value: sent, delivered (the datagrams the handler counted),
 * wall_ns (from the first send to the later of the flush's end and the last arrival), the
 * CLOCK_THREAD_CPUTIME_ID of the sender (first send to the flush's end) and of the receiver (its
 * whole receive loop), RNR resends and failures, and each side's sleeps; start_ns and end_ns, the
 * wall's ends on CLOCK_MONOTONIC, so that a profile taken with that clock (perf record -k
 * CLOCK_MONOTONIC: scripts/bench-stream --profile) can keep the stream's samples alone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <infiniband/efadv.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#define QKEY 0x11111111u
#define GRH 40
#define SEND_POLL 16
#define RECV_POLL 64
#define BATCH 64
#define ACK_BATCH 64u
#define PARK_NS 20000L
#define SLICE_MS 10000
#define FIRST_BACKOFF_NS 64000L
#define MAX_BACKOFF_NS 100000000L
#define RNR_BUDGET_NS 1000000000L
#define END 1
#define END_BYTES 9
#define END_COPIES 5

static void die(const char *what)
{
    fprintf(stderr, "stream_reference: %s: %s\n", what, strerror(errno));
    exit(1);
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* CompletionWaiter: one CQ, its channel, and the wake and stop eventfds polled beside it. */
struct waiter {
    struct ibv_comp_channel *channel;
    struct ibv_cq *cq;
    int wake_fd, stop_fd;
    unsigned int unacked;
    uint64_t spin_ns;
    uint64_t sleeps;
};

struct endpoint {
    struct ibv_qp *qp;
    struct ibv_cq *send_cq;
    struct ibv_cq_ex *recv_cq;
    struct efadv_cq *recv_efa;
    struct waiter send_wait, recv_wait;
    struct ibv_mr *send_mr, *recv_mr;
    uint8_t *send_mem, *recv_mem;
    uint32_t send_depth, recv_depth, slot_size, prefix, max_msg;
    /* send side (SendSlots) */
    uint32_t *free_slots;
    uint32_t free_count;
    uint32_t *lengths;
    int *rnr_tries, *waiting;
    uint64_t *rnr_since, *resend_at;
    uint32_t awaiting;
    int cq_may_hold_more;
    uint64_t sent, rnr_resends, failed_rnr, failed_other;
    /* receive side (ReceiveSlots) */
    uint64_t *ring_wr;
    uint32_t *ring_len;
    uint32_t ring_head, ring_count, posted;
    struct ibv_sge repost_sge[BATCH];
    struct ibv_recv_wr repost_wr[BATCH];
    uint32_t reposts;
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static union ibv_gid gid;
static int srd;

static void waiter_init(struct waiter *w, struct ibv_comp_channel *channel, uint64_t spin_ns)
{
    w->channel = channel;
    w->spin_ns = spin_ns;
    if (channel == NULL) {
        return; /* a CQ without events: the waits park */
    }
    int flags = fcntl(channel->fd, F_GETFL);
    if (flags < 0 || fcntl(channel->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        die("fcntl");
    }
    w->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    w->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (w->wake_fd < 0 || w->stop_fd < 0) {
        die("eventfd");
    }
}

/* efa_ah_channel_wait: poll(2) on the three fds, then every event the channel has, acked in batches. */
static void channel_wait(struct waiter *w, int timeout_ms)
{
    struct pollfd fds[3] = {
        {.fd = w->channel->fd, .events = POLLIN},
        {.fd = w->wake_fd, .events = POLLIN},
        {.fd = w->stop_fd, .events = POLLIN},
    };
    if (poll(fds, 3, timeout_ms) < 0) {
        if (errno == EINTR) {
            return;
        }
        die("poll");
    }
    if (fds[1].revents != 0) {
        uint64_t wakes;
        (void)!read(w->wake_fd, &wakes, sizeof(wakes));
    }
    if (fds[0].revents == 0) {
        return;
    }
    for (;;) {
        struct ibv_cq *from;
        void *context;
        if (ibv_get_cq_event(w->channel, &from, &context) != 0) {
            break;
        }
        w->unacked++;
    }
    if (w->unacked >= ACK_BATCH) {
        ibv_ack_cq_events(w->cq, w->unacked);
        w->unacked = 0;
    }
}

typedef int (*step_fn)(struct endpoint *e, void *arg);
typedef int (*may_idle_fn)(struct endpoint *e);

/* CompletionWaiter.await: step until true or the deadline; spin, then arm, step, sleep. */
static int await(struct endpoint *e, struct waiter *w, step_fn step, void *arg, may_idle_fn may_idle,
                 uint64_t deadline)
{
    uint64_t spin_end = now_ns() + w->spin_ns;
    for (;;) {
        if (step(e, arg)) {
            return 1;
        }
        uint64_t now = now_ns();
        if (now > deadline) {
            return 0;
        }
        if (now < spin_end) {
            __builtin_ia32_pause();
            continue;
        }
        if (w->channel == NULL || !may_idle(e)) {
            struct timespec park = {0, PARK_NS};
            nanosleep(&park, NULL);
            continue;
        }
        if (ibv_req_notify_cq(w->cq, 0) != 0) {
            die("ibv_req_notify_cq");
        }
        if (step(e, arg)) {
            return 1;
        }
        if (!may_idle(e)) {
            continue;
        }
        uint64_t left = deadline - now_ns();
        int ms = (int)(left / 1000000u + 1);
        w->sleeps++;
        channel_wait(w, ms < SLICE_MS ? ms : SLICE_MS);
    }
}

/* ---- the endpoint ---- */

static void open_endpoint(struct endpoint *e, uint32_t send_depth, uint32_t recv_depth, uint32_t max_msg,
                          uint64_t spin_ns)
{
    memset(e, 0, sizeof(*e));
    e->send_depth = send_depth;
    e->recv_depth = recv_depth;
    e->max_msg = max_msg;
    e->prefix = srd ? 0 : GRH;
    e->slot_size = e->prefix + max_msg;

    struct ibv_comp_channel *sch = ibv_create_comp_channel(ctx);
    struct ibv_comp_channel *rch = ibv_create_comp_channel(ctx);
    if (sch == NULL || rch == NULL) {
        die("ibv_create_comp_channel");
    }
    /* Where the device has no CQ notifications (EOPNOTSUPP), CQs without a channel, as EndpointResources. */
    e->send_cq = ibv_create_cq(ctx, (int)send_depth, NULL, sch, 0);
    if (e->send_cq == NULL && errno == EOPNOTSUPP) {
        sch = NULL;
        e->send_cq = ibv_create_cq(ctx, (int)send_depth, NULL, NULL, 0);
    }
    if (e->send_cq == NULL) {
        die("ibv_create_cq");
    }
    struct ibv_cq_init_attr_ex cq_attr;
    memset(&cq_attr, 0, sizeof(cq_attr));
    cq_attr.cqe = recv_depth;
    cq_attr.wc_flags = IBV_WC_STANDARD_FLAGS;
    cq_attr.channel = rch;
    struct efadv_cq_init_attr efa_cq;
    memset(&efa_cq, 0, sizeof(efa_cq));
    efa_cq.wc_flags = EFADV_WC_EX_WITH_SGID;
    e->recv_cq = efadv_create_cq(ctx, &cq_attr, &efa_cq, sizeof(efa_cq));
    if (e->recv_cq == NULL && errno == EOPNOTSUPP) {
        rch = NULL;
        cq_attr.channel = NULL;
        e->recv_cq = efadv_create_cq(ctx, &cq_attr, &efa_cq, sizeof(efa_cq));
    }
    if (e->recv_cq == NULL) {
        die("efadv_create_cq");
    }
    e->recv_efa = efadv_cq_from_ibv_cq_ex(e->recv_cq);
    waiter_init(&e->send_wait, sch, spin_ns);
    e->send_wait.cq = e->send_cq;
    waiter_init(&e->recv_wait, rch, spin_ns);
    e->recv_wait.cq = ibv_cq_ex_to_cq(e->recv_cq);

    e->send_mem = aligned_alloc(4096, ((size_t)send_depth * max_msg + 4095) / 4096 * 4096);
    size_t recv_bytes = (size_t)(recv_depth + 1) * e->slot_size;
    e->recv_mem = aligned_alloc(4096, (recv_bytes + 4095) / 4096 * 4096);
    if (e->send_mem == NULL || e->recv_mem == NULL) {
        die("aligned_alloc");
    }
    memset(e->send_mem, 0, (size_t)send_depth * max_msg);
    memset(e->recv_mem, 0, recv_bytes);
    e->send_mr = ibv_reg_mr(pd, e->send_mem, (size_t)send_depth * max_msg, IBV_ACCESS_LOCAL_WRITE);
    e->recv_mr = ibv_reg_mr(pd, e->recv_mem, recv_bytes, IBV_ACCESS_LOCAL_WRITE);
    if (e->send_mr == NULL || e->recv_mr == NULL) {
        die("ibv_reg_mr");
    }

    struct ibv_qp_init_attr_ex qp_attr;
    memset(&qp_attr, 0, sizeof(qp_attr));
    qp_attr.send_cq = e->send_cq;
    qp_attr.recv_cq = ibv_cq_ex_to_cq(e->recv_cq);
    qp_attr.cap.max_send_wr = send_depth;
    qp_attr.cap.max_recv_wr = recv_depth;
    qp_attr.cap.max_send_sge = 1;
    qp_attr.cap.max_recv_sge = 1;
    if (srd) {
        qp_attr.qp_type = IBV_QPT_DRIVER;
        qp_attr.comp_mask = IBV_QP_INIT_ATTR_PD;
        qp_attr.pd = pd;
        struct efadv_qp_init_attr efa_qp;
        memset(&efa_qp, 0, sizeof(efa_qp));
        efa_qp.driver_qp_type = EFADV_QP_DRIVER_TYPE_SRD;
        e->qp = efadv_create_qp_ex(ctx, &qp_attr, &efa_qp, sizeof(efa_qp));
    } else {
        struct ibv_qp_init_attr init;
        memset(&init, 0, sizeof(init));
        init.send_cq = qp_attr.send_cq;
        init.recv_cq = qp_attr.recv_cq;
        init.cap = qp_attr.cap;
        init.qp_type = IBV_QPT_UD;
        e->qp = ibv_create_qp(pd, &init);
    }
    if (e->qp == NULL) {
        die("create QP");
    }
    struct ibv_qp_attr a;
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = 1;
    a.qkey = QKEY;
    if (ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY) != 0) {
        die("modify INIT");
    }
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTR;
    if (ibv_modify_qp(e->qp, &a, IBV_QP_STATE) != 0) {
        die("modify RTR");
    }
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = 0;
    int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
    if (srd) {
        a.rnr_retry = 3;
        mask |= IBV_QP_RNR_RETRY;
    }
    if (ibv_modify_qp(e->qp, &a, mask) != 0) {
        die("modify RTS");
    }
    for (uint32_t i = 0; i < recv_depth; i++) {
        struct ibv_sge sge = {.addr = (uintptr_t)(e->recv_mem + (size_t)i * e->slot_size),
                              .length = e->slot_size, .lkey = e->recv_mr->lkey};
        struct ibv_recv_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1}, *bad;
        if (ibv_post_recv(e->qp, &wr, &bad) != 0) {
            die("ibv_post_recv");
        }
    }
    e->posted = recv_depth;

    e->free_slots = calloc(send_depth, sizeof(uint32_t));
    e->lengths = calloc(send_depth, sizeof(uint32_t));
    e->rnr_tries = calloc(send_depth, sizeof(int));
    e->waiting = calloc(send_depth, sizeof(int));
    e->rnr_since = calloc(send_depth, sizeof(uint64_t));
    e->resend_at = calloc(send_depth, sizeof(uint64_t));
    e->ring_wr = calloc(recv_depth, sizeof(uint64_t));
    e->ring_len = calloc(recv_depth, sizeof(uint32_t));
    for (uint32_t i = 0; i < send_depth; i++) {
        e->free_slots[i] = i;
    }
    e->free_count = send_depth;
}

/* ---- the send side ---- */

static struct ibv_ah *ah;
static uint32_t remote_qpn;

static void fill_wr(struct ibv_send_wr *wr, uint32_t slot, struct ibv_sge *sge)
{
    memset(wr, 0, sizeof(*wr));
    wr->wr_id = slot;
    wr->sg_list = sge;
    wr->num_sge = 1;
    wr->opcode = IBV_WR_SEND;
    wr->send_flags = IBV_SEND_SIGNALED;
    wr->wr.ud.ah = ah;
    wr->wr.ud.remote_qpn = remote_qpn;
    wr->wr.ud.remote_qkey = QKEY;
}

/* SendSlots.takeDueResends: the due resends into wrs[0..k), their slots no longer waiting; returns k. */
static uint32_t take_due_resends(struct endpoint *e, struct ibv_send_wr *wrs, struct ibv_sge *sges)
{
    uint64_t now = now_ns();
    uint32_t k = 0;
    for (uint32_t slot = 0; slot < e->send_depth && e->awaiting > 0; slot++) {
        if (!e->waiting[slot] || now < e->resend_at[slot]) {
            continue;
        }
        e->waiting[slot] = 0;
        e->awaiting--;
        sges[k].addr = (uintptr_t)(e->send_mem + (size_t)slot * e->max_msg);
        sges[k].length = e->lengths[slot];
        sges[k].lkey = e->send_mr->lkey;
        fill_wr(&wrs[k], slot, &sges[k]);
        k++;
    }
    return k;
}

/* posts wrs[0..n) chained, in one ibv_post_send */
static void post_chain(struct endpoint *e, struct ibv_send_wr *wrs, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        wrs[i].next = i + 1 < n ? &wrs[i + 1] : NULL;
    }
    struct ibv_send_wr *bad = NULL;
    if (ibv_post_send(e->qp, wrs, &bad) != 0) {
        die("ibv_post_send");
    }
}

/* SendSlots.resendDue: the resends due, to the one destination, in one ibv_post_send. */
static void resend_due(struct endpoint *e)
{
    struct ibv_sge sges[e->send_depth];
    struct ibv_send_wr wrs[e->send_depth];
    uint32_t k = take_due_resends(e, wrs, sges);
    if (k > 0) {
        post_chain(e, wrs, k);
        e->rnr_resends += k;
    }
}

/* SendSlots.keepForResend: true when the send is to go again, its time set. */
static int keep_for_resend(struct endpoint *e, uint32_t slot)
{
    uint64_t now = now_ns();
    int tries = e->rnr_tries[slot];
    if (tries == 0) {
        e->rnr_since[slot] = now;
    }
    uint64_t end = e->rnr_since[slot] + RNR_BUDGET_NS;
    if (now >= end) {
        return 0;
    }
    uint64_t backoff = tries == 0 ? 0 : (uint64_t)FIRST_BACKOFF_NS << (tries - 1 < 20 ? tries - 1 : 20);
    if (backoff > MAX_BACKOFF_NS) {
        backoff = MAX_BACKOFF_NS;
    }
    e->resend_at[slot] = now + backoff < end ? now + backoff : end;
    e->rnr_tries[slot] = tries + 1;
    e->waiting[slot] = 1;
    e->awaiting++;
    return 1;
}

/* SendSlots.pollSends: with resend, the due resends go first; a caller that posts next passes 0. */
static int poll_sends(struct endpoint *e, int resend)
{
    if (resend && e->awaiting > 0) {
        resend_due(e);
    }
    struct ibv_wc wc[SEND_POLL];
    int n = ibv_poll_cq(e->send_cq, SEND_POLL, wc);
    if (n < 0) {
        die("ibv_poll_cq");
    }
    e->cq_may_hold_more = n == SEND_POLL;
    for (int i = 0; i < n; i++) {
        uint32_t slot = (uint32_t)wc[i].wr_id;
        if (wc[i].status == IBV_WC_RNR_RETRY_EXC_ERR && keep_for_resend(e, slot)) {
            continue;
        }
        e->rnr_tries[slot] = 0;
        if (wc[i].status == IBV_WC_RNR_RETRY_EXC_ERR) {
            e->failed_rnr++;
        } else if (wc[i].status != IBV_WC_SUCCESS) {
            e->failed_other++;
        }
        e->free_slots[e->free_count++] = slot;
    }
    return n;
}

static int send_may_idle(struct endpoint *e)
{
    return e->awaiting == 0 && !e->cq_may_hold_more;
}

struct batch {
    const uint8_t *payload;
    uint32_t length;
    uint32_t count;
    uint32_t posted;
};

/* SendSlots.tryPostBatch: reap until enough slots are free or the CQ is empty, then post what fits. */
static int try_post_batch(struct endpoint *e, void *arg)
{
    struct batch *b = arg;
    while (e->free_count < b->count && poll_sends(e, 0) == SEND_POLL) {
    }
    if (e->free_count == 0 && e->awaiting > 0) {
        /* no post to carry the resends due: they go on their own, each poll after them */
        while (poll_sends(e, 1) == SEND_POLL) {
        }
    }
    if (e->free_count == 0) {
        b->posted = 0;
        return 0;
    }
    uint32_t n = b->count < e->free_count ? b->count : e->free_count;
    struct ibv_sge sges[e->send_depth];
    struct ibv_send_wr wrs[e->send_depth];
    /* the resends due first (they are older), then the new sends, in one ibv_post_send */
    uint32_t k = e->awaiting > 0 ? take_due_resends(e, wrs, sges) : 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t slot = e->free_slots[--e->free_count];
        memcpy(e->send_mem + (size_t)slot * e->max_msg, b->payload, b->length);
        e->lengths[slot] = b->length;
        sges[k + i].addr = (uintptr_t)(e->send_mem + (size_t)slot * e->max_msg);
        sges[k + i].length = b->length;
        sges[k + i].lkey = e->send_mr->lkey;
        fill_wr(&wrs[k + i], slot, &sges[k + i]);
    }
    post_chain(e, wrs, k + n);
    e->rnr_resends += k;
    e->sent += n;
    b->posted = n;
    return 1;
}

static void send_batch(struct endpoint *e, const uint8_t *payload, uint32_t length, uint32_t count)
{
    uint32_t done = 0;
    while (done < count) {
        struct batch b = {payload, length, count - done, 0};
        if (!try_post_batch(e, &b)
            && !await(e, &e->send_wait, try_post_batch, &b, send_may_idle, now_ns() + 10000000000u)) {
            fprintf(stderr, "stream_reference: no send slot in 10 s\n");
            exit(1);
        }
        done += b.posted;
    }
}

static int flush_step(struct endpoint *e, void *arg)
{
    (void)arg;
    while (poll_sends(e, 1) == SEND_POLL) {
    }
    return e->free_count == e->send_depth;
}

/* ---- the receive side ---- */

/* The datagrams the handler counted so far, published after each receive call (for --pace). */
static uint64_t delivered_so_far;

struct counter {
    uint64_t datagrams, bytes, first, last;
    int64_t announced;
};

static void repost(struct endpoint *e, uint32_t slot)
{
    uint32_t i = e->reposts;
    e->repost_sge[i].addr = (uintptr_t)(e->recv_mem + (size_t)slot * e->slot_size);
    e->repost_sge[i].length = e->slot_size;
    e->repost_sge[i].lkey = e->recv_mr->lkey;
    memset(&e->repost_wr[i], 0, sizeof(e->repost_wr[i]));
    e->repost_wr[i].wr_id = slot;
    e->repost_wr[i].sg_list = &e->repost_sge[i];
    e->repost_wr[i].num_sge = 1;
    e->repost_wr[i].next = NULL;
    if (i > 0) {
        e->repost_wr[i - 1].next = &e->repost_wr[i];
    }
    uint32_t batch = e->recv_depth / 4 < BATCH ? (e->recv_depth / 4 > 0 ? e->recv_depth / 4 : 1) : BATCH;
    if (++e->reposts == batch) {
        struct ibv_recv_wr *bad;
        if (ibv_post_recv(e->qp, e->repost_wr, &bad) != 0) {
            die("ibv_post_recv");
        }
        e->posted += e->reposts;
        e->reposts = 0;
    }
}

/* efa_ah_efadv_poll_cq's reads, then the ring (ReceiveSlots.takeAllLocked): until a poll is short. */
static void take_all(struct endpoint *e)
{
    for (;;) {
        struct ibv_poll_cq_attr attr = {0};
        uint32_t n = 0;
        if (ibv_start_poll(e->recv_cq, &attr) == 0) {
            for (;;) {
                struct ibv_cq_ex *c = e->recv_cq;
                uint64_t wr_id = c->wr_id;
                enum ibv_wc_status status = c->status;
                uint32_t opcode = ibv_wc_read_opcode(c);
                volatile uint32_t sink = ibv_wc_read_vendor_err(c) + ibv_wc_read_qp_num(c);
                uint32_t len = 0;
                if (opcode & IBV_WC_RECV) {
                    sink += ibv_wc_read_wc_flags(c);
                    len = ibv_wc_read_byte_len(c);
                    sink += ibv_wc_read_src_qp(c) + ibv_wc_read_slid(c) + ibv_wc_read_sl(c)
                            + ibv_wc_read_dlid_path_bits(c);
                    union ibv_gid sgid;
                    if (status == IBV_WC_SUCCESS && efadv_wc_read_sgid(e->recv_efa, &sgid) == 0) {
                        sink += sgid.raw[15];
                    }
                }
                (void)sink;
                if (status != IBV_WC_SUCCESS) {
                    fprintf(stderr, "stream_reference: receive completion status %d\n", status);
                    exit(1);
                }
                uint32_t at = (e->ring_head + e->ring_count) % e->recv_depth;
                e->ring_wr[at] = wr_id;
                e->ring_len[at] = len > e->prefix ? len - e->prefix : 0;
                e->ring_count++;
                e->posted--;
                if (++n == RECV_POLL || ibv_next_poll(c) != 0) {
                    break;
                }
            }
            ibv_end_poll(e->recv_cq);
        }
        if (n < RECV_POLL || e->posted == 0) {
            return;
        }
    }
}

struct receive_call {
    struct counter *counter;
    uint32_t limit;
    uint32_t got;
};

/* The CLI's Counter: the end marker, or a datagram counted with a clock read. */
static void handle(struct counter *c, const uint8_t *p, uint32_t len)
{
    if (c->announced >= 0) {
        return;
    }
    if (len == END_BYTES && p[0] == END) {
        int64_t v = 0;
        for (int i = 1; i < END_BYTES; i++) {
            v = (v << 8) | p[i];
        }
        c->announced = v;
        return;
    }
    uint64_t now = now_ns();
    if (c->datagrams == 0) {
        c->first = now;
    }
    c->last = now;
    c->datagrams++;
    c->bytes += len;
}

/* One lend step: up to limit datagrams handed to the handler, their slots reposted. */
static int lend_step(struct endpoint *e, void *arg)
{
    struct receive_call *r = arg;
    if (e->ring_count == 0) {
        take_all(e);
        if (e->ring_count == 0) {
            return 0;
        }
    }
    uint32_t n = 0;
    while (e->ring_count > 0 && n < r->limit) {
        uint32_t slot = (uint32_t)e->ring_wr[e->ring_head];
        uint32_t len = e->ring_len[e->ring_head];
        e->ring_head = (e->ring_head + 1) % e->recv_depth;
        e->ring_count--;
        handle(r->counter, e->recv_mem + (size_t)slot * e->slot_size + e->prefix, len);
        repost(e, slot);
        n++;
    }
    r->got = n;
    return 1;
}

static int recv_may_idle(struct endpoint *e)
{
    return e->ring_count == 0;
}

struct receiver_result {
    struct endpoint *e;
    struct counter counter;
    uint64_t cpu_ns;
};

static void *receiver_main(void *arg)
{
    struct receiver_result *res = arg;
    struct endpoint *e = res->e;
    uint64_t cpu0 = thread_cpu_ns();
    res->counter.announced = -1;
    for (;;) {
        struct receive_call r = {&res->counter, BATCH, 0};
        if (!lend_step(e, &r) && !await(e, &e->recv_wait, lend_step, &r, recv_may_idle, now_ns() + 10000000000u)) {
            break; /* the end marker was lost */
        }
        __atomic_store_n(&delivered_so_far, res->counter.datagrams, __ATOMIC_RELEASE);
        if (res->counter.announced >= 0) {
            break;
        }
    }
    res->cpu_ns = thread_cpu_ns() - cpu0;
    return NULL;
}

/*
 * --pace (scripts/bench-stream's UD): a batch goes only while the datagrams sent and not yet
 * counted leave room in the receiver's ring for it, with a margin for the receives taken and not
 * yet reposted (up to a repost batch, 64) and a poll's worth (64): so UD drops nothing and both
 * programs are measured on the same datagrams. The wait parks 20 us at a time without spinning, so
 * that a sender held back by a slower receiver burns no CPU for it.
 */
static uint64_t pace_parks;

static void wait_for_credit(struct endpoint *e, uint32_t rx_depth)
{
    uint64_t limit = rx_depth > 3 * BATCH ? rx_depth - 3 * BATCH : 1;
    uint64_t give_up = 0;
    while (e->sent - __atomic_load_n(&delivered_so_far, __ATOMIC_ACQUIRE) > limit) {
        uint64_t now = now_ns();
        if (give_up == 0) {
            give_up = now + 1000000000u;
        } else if (now > give_up) {
            return; /* a datagram lost after all: go on rather than wait for ever */
        }
        struct timespec park = {0, PARK_NS};
        nanosleep(&park, NULL);
        pace_parks++;
    }
}

static void usage(void)
{
    fprintf(stderr, "Usage: stream_reference [--transport srd|ud] [-s SIZE] [-n COUNT] [--window N] "
                    "[--rx-depth N] [--spin MICROSECONDS] [--pace]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    uint32_t size = 64, window = 64, rx_depth = 1024;
    uint64_t count = 100000, spin_us = 50;
    int pace = 0;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (strcmp(o, "--pace") == 0) {
            pace = 1;
            continue;
        }
        if (i + 1 >= argc) {
            usage();
        }
        const char *v = argv[++i];
        if (strcmp(o, "--transport") == 0) {
            if (strcmp(v, "srd") == 0) {
                srd = 1;
            } else if (strcmp(v, "ud") != 0) {
                usage();
            }
        } else if (strcmp(o, "-s") == 0) {
            size = (uint32_t)strtoul(v, NULL, 10);
        } else if (strcmp(o, "-n") == 0) {
            count = strtoull(v, NULL, 10);
        } else if (strcmp(o, "--window") == 0) {
            window = (uint32_t)strtoul(v, NULL, 10);
        } else if (strcmp(o, "--rx-depth") == 0) {
            rx_depth = (uint32_t)strtoul(v, NULL, 10);
        } else if (strcmp(o, "--spin") == 0) {
            spin_us = strtoull(v, NULL, 10);
        } else {
            usage();
        }
    }
    if (size < 1 || count < 1 || window < 1 || window > BATCH || rx_depth < 1) {
        usage();
    }
    int num;
    struct ibv_device **list = ibv_get_device_list(&num);
    if (list == NULL || num < 1) {
        die("no device");
    }
    ctx = ibv_open_device(list[0]);
    if (ctx == NULL) {
        die("ibv_open_device");
    }
    struct ibv_port_attr port;
    if (ibv_query_port(ctx, 1, &port) != 0 || ibv_query_gid(ctx, 1, 0, &gid) != 0) {
        die("ibv_query_port");
    }
    uint32_t max_msg = port.max_msg_sz;
    if (size > max_msg) {
        fprintf(stderr, "stream_reference: -s %u is above max_msg_sz %u\n", size, max_msg);
        return 2;
    }
    pd = ibv_alloc_pd(ctx);
    if (pd == NULL) {
        die("ibv_alloc_pd");
    }
    static struct endpoint receiver, sender;
    open_endpoint(&receiver, 1, rx_depth, max_msg, spin_us * 1000);
    open_endpoint(&sender, window, 16, max_msg, spin_us * 1000);
    struct ibv_ah_attr ah_attr;
    memset(&ah_attr, 0, sizeof(ah_attr));
    ah_attr.is_global = 1;
    ah_attr.grh.dgid = gid;
    ah_attr.grh.sgid_index = 0;
    ah_attr.grh.hop_limit = 1;
    ah_attr.port_num = 1;
    ah = ibv_create_ah(pd, &ah_attr);
    if (ah == NULL) {
        die("ibv_create_ah");
    }
    remote_qpn = receiver.qp->qp_num;

    static struct receiver_result res;
    res.e = &receiver;
    pthread_t t;
    if (pthread_create(&t, NULL, receiver_main, &res) != 0) {
        die("pthread_create");
    }
    uint8_t *payload = malloc(size);
    memset(payload, 0x7b, size);
    uint64_t cpu0 = thread_cpu_ns();
    uint64_t start = now_ns();
    for (uint64_t i = 0; i < count;) {
        uint32_t n = (uint32_t)(count - i < window ? count - i : window);
        if (pace) {
            wait_for_credit(&sender, rx_depth);
        }
        send_batch(&sender, payload, size, n);
        i = sender.sent;
    }
    if (!await(&sender, &sender.send_wait, flush_step, NULL, send_may_idle, now_ns() + 10000000000u)) {
        fprintf(stderr, "stream_reference: sends still in flight after 10 s\n");
        return 1;
    }
    uint64_t end = now_ns();
    uint64_t sender_cpu = thread_cpu_ns() - cpu0;
    uint64_t sent = sender.sent;
    uint8_t marker[END_BYTES];
    marker[0] = END;
    for (int i = 1; i < END_BYTES; i++) {
        marker[i] = (uint8_t)(sent >> (8 * (END_BYTES - 1 - i)));
    }
    for (int i = 0; i < END_COPIES; i++) {
        struct timespec pause = {0, 50000000L};
        nanosleep(&pause, NULL);
        send_batch(&sender, marker, END_BYTES, 1);
    }
    (void)await(&sender, &sender.send_wait, flush_step, NULL, send_may_idle, now_ns() + 1000000000u);
    pthread_join(t, NULL);
    uint64_t last = res.counter.last > end ? res.counter.last : end;
    printf("sent=%llu delivered=%llu announced=%lld wall_ns=%llu start_ns=%llu end_ns=%llu sender_cpu_ns=%llu "
           "receiver_cpu_ns=%llu rnr_resends=%llu send_failures_rnr=%llu send_failures_other=%llu send_sleeps=%llu "
           "receive_sleeps=%llu pace_parks=%llu\n",
           (unsigned long long)sent, (unsigned long long)res.counter.datagrams, (long long)res.counter.announced,
           (unsigned long long)(last - start), (unsigned long long)start, (unsigned long long)last,
           (unsigned long long)sender_cpu, (unsigned long long)res.cpu_ns,
           (unsigned long long)sender.rnr_resends, (unsigned long long)sender.failed_rnr,
           (unsigned long long)sender.failed_other, (unsigned long long)sender.send_wait.sleeps,
           (unsigned long long)receiver.recv_wait.sleeps, (unsigned long long)pace_parks);
    /* The verbs objects go with the process, as the double and libibverbs allow. */
    return sender.failed_other > 0 ? 1 : 0;
}
