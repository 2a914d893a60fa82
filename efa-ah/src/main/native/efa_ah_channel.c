/*
 * Completion channels (ibv_create_comp_channel, ibv_req_notify_cq, ibv_get_cq_event,
 * ibv_ack_cq_events): what lets a thread sleep until its CQ has a completion instead of polling.
 *
 * One channel serves one CQ, so that a waiter never takes another CQ's event. The channel's fd is
 * made non-blocking and polled together with a stop eventfd that, once written, stays readable:
 * every wait in progress and every later one returns at once, as an endpoint's close needs. Events
 * are counted and acknowledged in batches (ibv_ack_cq_events takes the CQ's mutex), and the rest
 * before the CQ is destroyed: ibv_destroy_cq waits for every event it reported to be acknowledged
 * (libibverbs ibv_cmd_destroy_cq), so one left over would hang it for ever.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "efa_ah_native.h"
#include "efa_ah_native_internal.h"

/* Events acknowledged at once; ibv_destroy_cq needs the rest acknowledged first. */
#define EFA_AH_ACK_BATCH 64u

struct efa_ah_comp_channel {
    /* First (see efa_ah_waker_wake_handle). A wake ends one wait (a Java interrupt); a stop ends every wait. */
    struct efa_ah_waker waker;
    struct ibv_comp_channel *channel;
    struct ibv_cq *cq;
    /* Events read and not yet acknowledged; touched only by the one waiter and by the CQ's destroy. */
    unsigned int unacked;
};

static struct efa_ah_comp_channel *as_channel(uint64_t handle)
{
    return (struct efa_ah_comp_channel *)(uintptr_t)handle;
}

int efa_ah_channel_create(uint64_t context, uint64_t *channel)
{
    if (context == 0 || channel == NULL) {
        return -EINVAL;
    }
    *channel = 0;
    int rc;
    struct efa_ah_comp_channel *c = efa_ah_waker_channel_new(sizeof(*c), 1, &rc);
    if (c == NULL) {
        return rc;
    }
    errno = 0;
    c->channel = ibv_create_comp_channel((struct ibv_context *)(uintptr_t)context);
    if (c->channel == NULL) {
        rc = efa_ah_error_from_rc(0, errno);
        efa_ah_waker_channel_free(c);
        return rc;
    }
    int flags = fcntl(c->channel->fd, F_GETFL);
    if (flags < 0 || fcntl(c->channel->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        rc = -errno;
        ibv_destroy_comp_channel(c->channel);
        efa_ah_waker_channel_free(c);
        return rc;
    }
    *channel = (uint64_t)(uintptr_t)c;
    return 0;
}

int efa_ah_channel_fd(uint64_t channel, int32_t *fd)
{
    if (channel == 0 || fd == NULL) {
        return -EINVAL;
    }
    *fd = as_channel(channel)->channel->fd;
    return 0;
}

int efa_ah_channel_create_cq(uint64_t context, uint64_t channel, uint32_t cqe, uint64_t *cq)
{
    if (context == 0 || channel == 0 || cq == NULL || cqe < 1 || cqe > EFA_AH_MAX_CQE) {
        return -EINVAL;
    }
    *cq = 0;
    struct efa_ah_comp_channel *c = as_channel(channel);
    if (c->cq != NULL) {
        return -EBUSY;
    }
    errno = 0;
    /* cq_context names the channel, so that efa_ah_destroy_cq finds the events to acknowledge. */
    struct ibv_cq *created = ibv_create_cq((struct ibv_context *)(uintptr_t)context, (int)cqe, c, c->channel, 0);
    if (created == NULL) {
        return efa_ah_error_from_rc(0, errno);
    }
    c->cq = created;
    *cq = (uint64_t)(uintptr_t)created;
    return 0;
}

int efa_ah_req_notify_cq(uint64_t cq)
{
    if (cq == 0) {
        return -EINVAL;
    }
    int rc = ibv_req_notify_cq((struct ibv_cq *)(uintptr_t)cq, 0);
    return rc == 0 ? 0 : efa_ah_error_from_rc(rc, errno);
}

static void ack_pending(struct efa_ah_comp_channel *c)
{
    if (c->unacked > 0 && c->cq != NULL) {
        ibv_ack_cq_events(c->cq, c->unacked);
        c->unacked = 0;
    }
}

int efa_ah_channel_wait(uint64_t channel, int32_t timeout_ms, int32_t *events)
{
    if (channel == 0 || events == NULL) {
        return -EINVAL;
    }
    *events = 0;
    struct efa_ah_comp_channel *c = as_channel(channel);
    int found = efa_ah_waker_wait(&c->waker, c->channel->fd, timeout_ms);
    if (found < 0) {
        return found;
    }
    if (found & EFA_AH_WAIT_STOPPED) {
        *events = -1;
        return 0;
    }
    if (!(found & EFA_AH_WAIT_READY)) {
        return 0;
    }
    for (;;) {
        struct ibv_cq *from;
        void *context;
        errno = 0;
        if (ibv_get_cq_event(c->channel, &from, &context) != 0) {
            int saved = errno;
            if (saved == EAGAIN || saved == EWOULDBLOCK || *events > 0) {
                break;
            }
            return saved > 0 ? -saved : -EIO;
        }
        (*events)++;
        c->unacked++;
    }
    if (c->unacked >= EFA_AH_ACK_BATCH) {
        ack_pending(c);
    }
    return 0;
}

int efa_ah_channel_wake(uint64_t channel)
{
    return efa_ah_waker_wake_handle(channel);
}

int efa_ah_channel_stop(uint64_t channel)
{
    return efa_ah_waker_stop_handle(channel);
}

uint64_t efa_ah_channel_release_cq(uint64_t cq)
{
    struct ibv_cq *q = (struct ibv_cq *)(uintptr_t)cq;
    if (q == NULL || q->channel == NULL || q->cq_context == NULL) {
        return 0;
    }
    struct efa_ah_comp_channel *c = q->cq_context;
    if (c->cq != q) {
        return 0;
    }
    ack_pending(c);
    return (uint64_t)(uintptr_t)c;
}

void efa_ah_channel_after_destroy_cq(uint64_t channel)
{
    if (channel != 0) {
        as_channel(channel)->cq = NULL;
    }
}

int efa_ah_channel_destroy(uint64_t channel)
{
    if (channel == 0) {
        return -EINVAL;
    }
    struct efa_ah_comp_channel *c = as_channel(channel);
    int rc = ibv_destroy_comp_channel(c->channel);
    if (rc != 0) {
        return efa_ah_error_from_rc(rc, errno); /* EBUSY while its CQ exists */
    }
    efa_ah_waker_channel_free(c);
    return 0;
}

int efa_ah_channel_for_new_cq(uint64_t channel, struct ibv_comp_channel **verbs_channel, void **cq_context)
{
    if (channel == 0 || verbs_channel == NULL || cq_context == NULL) {
        return -EINVAL;
    }
    struct efa_ah_comp_channel *c = as_channel(channel);
    if (c->cq != NULL) {
        return -EBUSY;
    }
    *verbs_channel = c->channel;
    *cq_context = c;
    return 0;
}

void efa_ah_channel_adopt_cq(uint64_t channel, struct ibv_cq *cq)
{
    struct efa_ah_comp_channel *c = as_channel(channel);
    /*
     * efadv_create_cq calls libefa's create_cq directly, not through libibverbs'
     * __lib_ibv_create_cq_ex, so verbs_init_cq never runs for it (rdma-core 44 to 65): the kernel
     * reports the CQ's events on the channel (ibv_icmd_create_cq passes the channel's fd), but
     * cq->channel and cq->cq_context stay NULL and the channel's refcnt is not raised. Do what
     * verbs_init_cq does (through the public struct fields; the function itself is libibverbs'
     * private ABI), so that efa_ah_channel_release_cq finds the events to acknowledge before
     * ibv_destroy_cq (whose refcnt decrement this balances). Left alone if a libibverbs did it.
     */
    if (cq->channel == NULL) {
        pthread_mutex_lock(&cq->context->mutex);
        ++c->channel->refcnt;
        pthread_mutex_unlock(&cq->context->mutex);
        cq->channel = c->channel;
        cq->cq_context = c;
        cq->comp_events_completed = 0;
        cq->async_events_completed = 0;
        pthread_mutex_init(&cq->mutex, NULL);
        pthread_cond_init(&cq->cond, NULL);
    }
    c->cq = cq;
}
