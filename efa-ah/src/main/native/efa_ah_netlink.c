/*
 * Network changes that make RoCE AHs stale, read from rtnetlink (rtnetlink(7)): neighbour entries
 * (RTM_NEWNEIGH, RTM_DELNEIGH) and links (RTM_NEWLINK, RTM_DELLINK), as notifications of the
 * RTNLGRP_LINK and RTNLGRP_NEIGH groups and as dumps asked for with efa_ah_net_request_dump.
 *
 * A plain NETLINK_ROUTE socket rather than libnl-route-3: three fixed kernel structs and a few
 * attributes are all that is read, the uapi headers are enough, and the JNI library keeps needing
 * libibverbs only (it also loads on EFA hosts, where this never runs, whatever rdma-core was built
 * with). The socket is non-blocking and polled together with an eventfd, as the async-event
 * channel is, so that a wake-up (at close) ends a wait at once.
 *
 * Received datagrams are kept in the channel and parsed message by message, so a wait returns at
 * most capacity events and the next wait continues where it stopped; nothing is dropped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/if.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "efa_ah_native_internal.h"

_Static_assert(sizeof(struct efa_ah_net_event) == 96, "efa_ah_net_event layout is bound by offsets in Java");
_Static_assert(EFA_AH_NET_NEWLINK == RTM_NEWLINK && EFA_AH_NET_DELLINK == RTM_DELLINK
               && EFA_AH_NET_NEWNEIGH == RTM_NEWNEIGH && EFA_AH_NET_DELNEIGH == RTM_DELNEIGH
               && EFA_AH_NET_DUMP_DONE == NLMSG_DONE, "event types are the kernel's message types");

/* Big enough for any datagram rtnetlink sends (dumps fill at most 32 KiB per message batch). */
#define BUFFER_BYTES (64 * 1024)
/* Notifications queue in the socket while nobody reads; more room means fewer losses (ENOBUFS). */
#define RECEIVE_BUFFER_BYTES (4 * 1024 * 1024)

struct efa_ah_net_channel {
    struct efa_ah_waker waker; /* first: see efa_ah_waker_wake_handle */
    int fd;
    uint32_t seq;
    int dump_interrupted; /* a message of the dump in progress carried NLM_F_DUMP_INTR */
    size_t length; /* bytes of buffer received and not yet parsed from offset on */
    size_t offset;
    unsigned char buffer[BUFFER_BYTES];
};

static struct efa_ah_net_channel *as_channel(uint64_t handle)
{
    return (struct efa_ah_net_channel *)(uintptr_t)handle;
}

int efa_ah_net_open(uint64_t *channel)
{
    if (channel == NULL) {
        return -EINVAL;
    }
    *channel = 0;
    int rc;
    struct efa_ah_net_channel *c = efa_ah_waker_channel_new(sizeof(*c), 0, &rc);
    if (c == NULL) {
        return rc;
    }
    c->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
    if (c->fd < 0) {
        rc = -errno;
        efa_ah_waker_channel_free(c);
        return rc;
    }
    int rcvbuf = RECEIVE_BUFFER_BYTES;
    /* Best effort: the kernel caps it at net.core.rmem_max. */
    (void)setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    struct sockaddr_nl local = {.nl_family = AF_NETLINK, .nl_groups = RTMGRP_LINK | RTMGRP_NEIGH};
    if (bind(c->fd, (struct sockaddr *)&local, sizeof(local)) < 0) {
        rc = -errno;
        efa_ah_net_close((uint64_t)(uintptr_t)c);
        return rc;
    }
    *channel = (uint64_t)(uintptr_t)c;
    return 0;
}

int efa_ah_net_request_dump(uint64_t channel, uint32_t what)
{
    if (channel == 0 || (what != RTM_GETLINK && what != RTM_GETNEIGH)) {
        return -EINVAL;
    }
    struct efa_ah_net_channel *c = as_channel(channel);
    struct {
        struct nlmsghdr header;
        union {
            struct ifinfomsg link;
            struct ndmsg neigh;
        } body;
    } request;
    memset(&request, 0, sizeof(request));
    request.header.nlmsg_type = (uint16_t)what;
    request.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    request.header.nlmsg_seq = ++c->seq;
    if (what == RTM_GETLINK) {
        request.header.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg));
        request.body.link.ifi_family = AF_UNSPEC;
    } else {
        request.header.nlmsg_len = NLMSG_LENGTH(sizeof(struct ndmsg));
        request.body.neigh.ndm_family = AF_UNSPEC;
    }
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    if (sendto(c->fd, &request, request.header.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0) {
        return -errno;
    }
    return 0;
}

static void copy_attr(const struct rtattr *a, uint8_t *to, size_t room, uint32_t *length)
{
    size_t n = RTA_PAYLOAD(a);
    if (n > room) {
        n = room;
    }
    memcpy(to, RTA_DATA(a), n);
    *length = (uint32_t)n;
}

static int parse_link(const struct nlmsghdr *h, struct efa_ah_net_event *out)
{
    if (h->nlmsg_len < NLMSG_LENGTH(sizeof(struct ifinfomsg))) {
        return 0;
    }
    const struct ifinfomsg *ifi = NLMSG_DATA(h);
    if (ifi->ifi_family == AF_BRIDGE) {
        return 0; /* a bridge port's view of a link, not the link's own state */
    }
    out->ifindex = ifi->ifi_index;
    out->state = ifi->ifi_flags;
    int left = (int)IFLA_PAYLOAD(h);
    for (const struct rtattr *a = IFLA_RTA(ifi); RTA_OK(a, left); a = RTA_NEXT(a, left)) {
        switch (a->rta_type) {
        case IFLA_ADDRESS:
            copy_attr(a, out->lladdr, sizeof(out->lladdr), &out->lladdr_len);
            break;
        case IFLA_MTU:
            if (RTA_PAYLOAD(a) >= sizeof(uint32_t)) {
                memcpy(&out->mtu, RTA_DATA(a), sizeof(uint32_t));
            }
            break;
        case IFLA_IFNAME: {
            uint32_t n;
            copy_attr(a, (uint8_t *)out->ifname, sizeof(out->ifname) - 1, &n);
            out->ifname[n] = '\0';
            break;
        }
        default:
            break;
        }
    }
    return 1;
}

static int parse_neigh(const struct nlmsghdr *h, struct efa_ah_net_event *out)
{
    if (h->nlmsg_len < NLMSG_LENGTH(sizeof(struct ndmsg))) {
        return 0;
    }
    const struct ndmsg *nd = NLMSG_DATA(h);
    if (nd->ndm_family != AF_INET && nd->ndm_family != AF_INET6) {
        return 0; /* bridge forwarding entries and the like: not an IP neighbour */
    }
    out->ifindex = nd->ndm_ifindex;
    out->family = nd->ndm_family;
    out->state = nd->ndm_state;
    int left = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(struct ndmsg)));
    const struct rtattr *a = (const struct rtattr *)((const char *)nd + NLMSG_ALIGN(sizeof(struct ndmsg)));
    for (; RTA_OK(a, left); a = RTA_NEXT(a, left)) {
        switch (a->rta_type) {
        case NDA_DST:
            copy_attr(a, out->addr, sizeof(out->addr), &out->addr_len);
            break;
        case NDA_LLADDR:
            copy_attr(a, out->lladdr, sizeof(out->lladdr), &out->lladdr_len);
            break;
        default:
            break;
        }
    }
    return out->addr_len == (nd->ndm_family == AF_INET ? 4u : 16u);
}

int efa_ah_net_parse(const void *message, uint32_t length, struct efa_ah_net_event *out)
{
    if (message == NULL || out == NULL || length < sizeof(struct nlmsghdr)) {
        return -EINVAL;
    }
    const struct nlmsghdr *h = message;
    if (h->nlmsg_len < sizeof(struct nlmsghdr) || h->nlmsg_len > length) {
        return -EINVAL;
    }
    memset(out, 0, sizeof(*out));
    out->type = h->nlmsg_type;
    out->flags = ((h->nlmsg_flags & NLM_F_MULTI) ? EFA_AH_NET_FROM_DUMP : 0)
                 | ((h->nlmsg_flags & NLM_F_DUMP_INTR) ? EFA_AH_NET_DUMP_INTR : 0);
    switch (h->nlmsg_type) {
    case NLMSG_DONE:
        return 1;
    case NLMSG_ERROR: {
        if (h->nlmsg_len < NLMSG_LENGTH(sizeof(struct nlmsgerr))) {
            return -EINVAL;
        }
        const struct nlmsgerr *e = NLMSG_DATA(h);
        return e->error < 0 ? e->error : 0;
    }
    case RTM_NEWLINK:
    case RTM_DELLINK:
        return parse_link(h, out);
    case RTM_NEWNEIGH:
    case RTM_DELNEIGH:
        return parse_neigh(h, out);
    default:
        return 0;
    }
}

/* Receives one datagram into the channel's buffer: 1 read, 0 nothing pending, or a negative errno. */
static int receive(struct efa_ah_net_channel *c)
{
    struct sockaddr_nl from;
    struct iovec iov = {.iov_base = c->buffer, .iov_len = sizeof(c->buffer)};
    for (;;) {
        struct msghdr msg = {.msg_name = &from, .msg_namelen = sizeof(from), .msg_iov = &iov, .msg_iovlen = 1};
        ssize_t n = recvmsg(c->fd, &msg, 0);
        if (n < 0) {
            return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : errno == EINTR ? 0 : -errno;
        }
        if (from.nl_pid != 0 || (msg.msg_flags & MSG_TRUNC)) {
            continue; /* only the kernel speaks for the network; a cut datagram cannot be parsed */
        }
        c->length = (size_t)n;
        c->offset = 0;
        return 1;
    }
}

int efa_ah_net_wait(uint64_t channel, int32_t timeout_ms, struct efa_ah_net_event *events, uint32_t capacity,
                    uint32_t *count)
{
    if (channel == 0 || events == NULL || count == NULL || capacity == 0) {
        return -EINVAL;
    }
    *count = 0;
    struct efa_ah_net_channel *c = as_channel(channel);
    int waited = 0;
    while (*count < capacity) {
        if (c->offset >= c->length) {
            int rc = receive(c);
            if (rc == -ENOBUFS) {
                /* Notifications were dropped: the caller must read the tables again. */
                memset(&events[*count], 0, sizeof(events[0]));
                events[(*count)++].type = EFA_AH_NET_LOST;
                continue;
            }
            if (rc < 0) {
                return *count > 0 ? 0 : rc;
            }
            if (rc == 0) {
                if (*count > 0 || waited) {
                    break;
                }
                int found = efa_ah_waker_wait(&c->waker, c->fd, timeout_ms);
                if (found < 0) {
                    return found;
                }
                waited = 1;
                if (found & EFA_AH_WAIT_WOKEN) {
                    break;
                }
                continue;
            }
        }
        const struct nlmsghdr *h = (const struct nlmsghdr *)(c->buffer + c->offset);
        size_t left = c->length - c->offset;
        if (!NLMSG_OK(h, left)) {
            c->offset = c->length; /* a malformed tail: drop it */
            continue;
        }
        c->offset += NLMSG_ALIGN(h->nlmsg_len);
        int rc = efa_ah_net_parse(h, h->nlmsg_len, &events[*count]);
        if (rc < 0) {
            /* An error answer to a dump request (EBUSY while another dump runs, say). */
            if (*count > 0) {
                c->offset -= NLMSG_ALIGN(h->nlmsg_len); /* reported on the next call */
                break;
            }
            return rc;
        }
        /* The kernel flags the message where it saw the change, not necessarily the last one. */
        if (h->nlmsg_flags & NLM_F_DUMP_INTR) {
            c->dump_interrupted = 1;
        }
        if (rc > 0 && h->nlmsg_type == NLMSG_DONE) {
            if (c->dump_interrupted) {
                events[*count].flags |= EFA_AH_NET_DUMP_INTR;
            }
            c->dump_interrupted = 0;
        }
        *count += (uint32_t)rc;
    }
    return 0;
}

int efa_ah_net_wake(uint64_t channel)
{
    return efa_ah_waker_wake_handle(channel);
}

int efa_ah_net_close(uint64_t channel)
{
    if (channel == 0) {
        return -EINVAL;
    }
    struct efa_ah_net_channel *c = as_channel(channel);
    close(c->fd);
    efa_ah_waker_channel_free(c);
    return 0;
}
