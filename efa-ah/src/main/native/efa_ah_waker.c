/*
 * The wake-and-wait shared by efa_ah_async.c, efa_ah_netlink.c and efa_ah_channel.c (see
 * struct efa_ah_waker in efa_ah_native_internal.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "efa_ah_native_internal.h"

void *efa_ah_waker_channel_new(size_t size, int with_stop, int *rc)
{
    struct efa_ah_waker *w = calloc(1, size);
    if (w == NULL) {
        *rc = -ENOMEM;
        return NULL;
    }
    w->stop_fd = -1;
    w->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (w->wake_fd >= 0 && with_stop) {
        w->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    }
    if (w->wake_fd < 0 || (with_stop && w->stop_fd < 0)) {
        *rc = -errno;
        efa_ah_waker_channel_free(w);
        return NULL;
    }
    *rc = 0;
    return w;
}

void efa_ah_waker_channel_free(void *channel)
{
    struct efa_ah_waker *w = channel;
    if (w == NULL) {
        return;
    }
    if (w->stop_fd >= 0) {
        close(w->stop_fd);
    }
    if (w->wake_fd >= 0) {
        close(w->wake_fd);
    }
    free(w);
}

int efa_ah_waker_wait(const struct efa_ah_waker *w, int fd, int32_t timeout_ms)
{
    struct pollfd fds[3] = {
        {.fd = fd, .events = POLLIN},
        {.fd = w->wake_fd, .events = POLLIN},
        {.fd = w->stop_fd, .events = POLLIN},
    };
    if (poll(fds, 3, timeout_ms < 0 ? -1 : timeout_ms) < 0) {
        return errno == EINTR ? 0 : -errno;
    }
    int found = 0;
    if (fds[2].revents != 0) {
        found |= EFA_AH_WAIT_STOPPED;
    }
    if (fds[1].revents != 0) {
        uint64_t wakes;
        if (read(w->wake_fd, &wakes, sizeof(wakes)) < 0 && errno != EAGAIN) {
            return -errno;
        }
        found |= EFA_AH_WAIT_WOKEN;
    }
    if (fds[0].revents != 0) {
        found |= EFA_AH_WAIT_READY;
    }
    return found;
}

/* Adds one to the eventfd; a counter already at its maximum (EAGAIN) still reads as signalled. */
static int signal_eventfd(int fd)
{
    uint64_t one = 1;
    if (write(fd, &one, sizeof(one)) < 0 && errno != EAGAIN) {
        return -errno;
    }
    return 0;
}

static const struct efa_ah_waker *as_waker(uint64_t channel)
{
    return (const struct efa_ah_waker *)(uintptr_t)channel;
}

int efa_ah_waker_wake_handle(uint64_t channel)
{
    return channel == 0 ? -EINVAL : signal_eventfd(as_waker(channel)->wake_fd);
}

int efa_ah_waker_stop_handle(uint64_t channel)
{
    if (channel == 0 || as_waker(channel)->stop_fd < 0) {
        return -EINVAL;
    }
    return signal_eventfd(as_waker(channel)->stop_fd);
}
