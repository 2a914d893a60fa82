/*
 * A readiness set for the library's poller thread (org.efaah.ud.ChannelPoller): one epoll(7)
 * instance waiting for many completion channels' fds at once, plus an eventfd that ends a wait,
 * as the JDK's sun.nio.ch.EPollPoller waits for the fds of parked virtual threads. Each fd is
 * armed for one readiness (EPOLLONESHOT): a waiter arms it before it parks, and the event that
 * unparks it disables it until the next arm, so a channel nobody waits on raises nothing.
 * Level-triggered: an fd readable when armed reports at once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "efa_ah_native.h"

struct efa_ah_poller {
    int epoll_fd;
    int wake_fd;
};

static struct efa_ah_poller *as_poller(uint64_t handle)
{
    return (struct efa_ah_poller *)(uintptr_t)handle;
}

int efa_ah_poller_create(uint64_t *poller)
{
    if (poller == NULL) {
        return -EINVAL;
    }
    *poller = 0;
    struct efa_ah_poller *p = calloc(1, sizeof(*p));
    if (p == NULL) {
        return -ENOMEM;
    }
    p->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    p->wake_fd = p->epoll_fd < 0 ? -1 : eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct epoll_event wake = {.events = EPOLLIN, .data.fd = -1};
    if (p->wake_fd < 0 || epoll_ctl(p->epoll_fd, EPOLL_CTL_ADD, p->wake_fd, &wake) != 0) {
        int rc = -errno;
        if (p->wake_fd >= 0) {
            close(p->wake_fd);
        }
        if (p->epoll_fd >= 0) {
            close(p->epoll_fd);
        }
        free(p);
        return rc;
    }
    *poller = (uint64_t)(uintptr_t)p;
    return 0;
}

int efa_ah_poller_arm(uint64_t poller, int32_t fd)
{
    if (poller == 0 || fd < 0) {
        return -EINVAL;
    }
    struct efa_ah_poller *p = as_poller(poller);
    struct epoll_event e = {.events = EPOLLIN | EPOLLONESHOT, .data.fd = fd};
    /*
     * Re-armed (MOD) when already in the set; added when not, or when the number names a new file
     * (epoll keys on the file and the number: a closed channel's entry went with its file).
     */
    if (epoll_ctl(p->epoll_fd, EPOLL_CTL_MOD, fd, &e) == 0) {
        return 0;
    }
    if (errno != ENOENT) {
        return -errno;
    }
    if (epoll_ctl(p->epoll_fd, EPOLL_CTL_ADD, fd, &e) == 0) {
        return 0;
    }
    return -errno;
}

int efa_ah_poller_wait(uint64_t poller, int32_t timeout_ms, int32_t *fds, uint32_t capacity, uint32_t *count)
{
    if (poller == 0 || fds == NULL || count == NULL || capacity == 0) {
        return -EINVAL;
    }
    *count = 0;
    struct efa_ah_poller *p = as_poller(poller);
    struct epoll_event events[64];
    int max = capacity < 64 ? (int)capacity : 64;
    int n = epoll_wait(p->epoll_fd, events, max, timeout_ms < 0 ? -1 : timeout_ms);
    if (n < 0) {
        return errno == EINTR ? 0 : -errno;
    }
    for (int i = 0; i < n; i++) {
        if (events[i].data.fd < 0) {
            uint64_t wakes;
            if (read(p->wake_fd, &wakes, sizeof(wakes)) < 0 && errno != EAGAIN) {
                return -errno;
            }
            continue;
        }
        fds[(*count)++] = events[i].data.fd;
    }
    return 0;
}

int efa_ah_poller_wake(uint64_t poller)
{
    if (poller == 0) {
        return -EINVAL;
    }
    uint64_t one = 1;
    if (write(as_poller(poller)->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN) {
        return -errno;
    }
    return 0;
}

int efa_ah_poller_destroy(uint64_t poller)
{
    if (poller == 0) {
        return -EINVAL;
    }
    struct efa_ah_poller *p = as_poller(poller);
    close(p->wake_fd);
    close(p->epoll_fd);
    free(p);
    return 0;
}
