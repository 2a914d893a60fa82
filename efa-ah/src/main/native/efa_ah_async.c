/*
 * The asynchronous events of a context (ibv_get_async_event(3)), read by one thread per device.
 * The context's async_fd is made non-blocking and polled together with an eventfd, so that a
 * wake-up (at close) ends a wait at once, and every pending event is drained per wake-up. Each
 * event is copied and acknowledged before returning: an unacknowledged event would make
 * ibv_destroy_qp/cq or ibv_close_device of its object wait for ever. The fd belongs to the
 * context: its flags are given back as found when the channel closes or fails to open.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "efa_ah_native_internal.h"

struct efa_ah_async_channel {
    struct efa_ah_waker waker; /* first: see efa_ah_waker_wake_handle */
    struct ibv_context *context;
    int saved_flags;
    /* dev_path existed at open: only its disappearance later says the device went away. */
    int dev_path_seen;
};

static struct efa_ah_async_channel *as_channel(uint64_t handle)
{
    return (struct efa_ah_async_channel *)(uintptr_t)handle;
}

int efa_ah_async_open(uint64_t context, uint64_t *channel)
{
    if (context == 0 || channel == NULL) {
        return -EINVAL;
    }
    *channel = 0;
    struct ibv_context *ctx = (struct ibv_context *)(uintptr_t)context;
    int rc;
    struct efa_ah_async_channel *c = efa_ah_waker_channel_new(sizeof(*c), 0, &rc);
    if (c == NULL) {
        return rc;
    }
    /* Changed last, so that no failure above leaves the context's fd altered. */
    int flags = fcntl(ctx->async_fd, F_GETFL);
    if (flags < 0 || fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        int saved = errno;
        efa_ah_waker_channel_free(c);
        return -saved;
    }
    c->saved_flags = flags;
    c->context = ctx;
    c->dev_path_seen = access(ctx->device->dev_path, F_OK) == 0;
    *channel = (uint64_t)(uintptr_t)c;
    return 0;
}

static int is_port_event(enum ibv_event_type type)
{
    switch (type) {
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_LID_CHANGE:
    case IBV_EVENT_PKEY_CHANGE:
    case IBV_EVENT_SM_CHANGE:
    case IBV_EVENT_CLIENT_REREGISTER:
    case IBV_EVENT_GID_CHANGE:
        return 1;
    default:
        return 0;
    }
}

int efa_ah_async_wait(uint64_t channel, int32_t timeout_ms, uint32_t *types, uint32_t *ports, uint32_t capacity,
                      uint32_t *count)
{
    if (channel == 0 || count == NULL || capacity == 0 || types == NULL || ports == NULL) {
        return -EINVAL;
    }
    *count = 0;
    struct efa_ah_async_channel *c = as_channel(channel);
    /* A wake is consumed; the caller decides whether to stop. */
    int found = efa_ah_waker_wait(&c->waker, c->context->async_fd, timeout_ms);
    if (found < 0) {
        return found;
    }
    if (!(found & EFA_AH_WAIT_READY)) {
        /*
         * Drivers without disassociate support (rxe among them) send no event when their device
         * is removed: the uverbs node just disappears while the removal waits for every context
         * to close. Say so, so that the caller can close and let the removal finish. A dev_path
         * that was never there (a container without the sysfs class, a libibverbs that fills
         * it otherwise) tells nothing: the device works, so it is not reported.
         */
        if (c->dev_path_seen && access(c->context->device->dev_path, F_OK) != 0 && errno == ENOENT) {
            return -ENODEV;
        }
        return 0;
    }
    while (*count < capacity) {
        struct ibv_async_event event;
        errno = 0;
        if (ibv_get_async_event(c->context, &event) != 0) {
            int saved = errno;
            if (saved == EAGAIN || saved == EWOULDBLOCK || *count > 0) {
                break; /* drained; a real error comes back on the next call */
            }
            /* A hung-up or failing fd must not turn the reader into a busy loop: report it. */
            return saved > 0 ? -saved : -EIO;
        }
        types[*count] = (uint32_t)event.event_type;
        ports[*count] = is_port_event(event.event_type) ? (uint32_t)event.element.port_num : 0;
        ibv_ack_async_event(&event);
        (*count)++;
    }
    return 0;
}

int efa_ah_async_wake(uint64_t channel)
{
    return efa_ah_waker_wake_handle(channel);
}

int efa_ah_async_close(uint64_t channel)
{
    if (channel == 0) {
        return -EINVAL;
    }
    struct efa_ah_async_channel *c = as_channel(channel);
    /*
     * The channel is freed whatever happens, so a failure here is not reported: the handle must
     * never look alive after this call. F_SETFL on a valid fd with flags it gave cannot fail.
     */
    (void)fcntl(c->context->async_fd, F_SETFL, c->saved_flags);
    efa_ah_waker_channel_free(c);
    return 0;
}
