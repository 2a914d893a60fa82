/*
 * Tests of the rtnetlink channel (efa_ah_netlink.c) that need no RDMA device and no privilege:
 * the parser on hand-built messages, and a real link dump of this host (it has "lo" at least),
 * then a wake-up ending a wait with no limit.
 */
#include "efa_ah_native.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "check.h"

static void put_attr(unsigned char *buf, size_t *len, uint16_t type, const void *data, uint16_t n)
{
    struct rtattr *a = (struct rtattr *)(buf + *len);
    a->rta_type = type;
    a->rta_len = (uint16_t)RTA_LENGTH(n);
    memcpy(RTA_DATA(a), data, n);
    *len += RTA_SPACE(n);
}

static size_t neigh_message(unsigned char *buf, uint16_t type, int family, const void *dst, uint16_t dst_len,
                            const void *lladdr)
{
    memset(buf, 0, 256);
    struct nlmsghdr *h = (struct nlmsghdr *)buf;
    struct ndmsg *nd = NLMSG_DATA(h);
    nd->ndm_family = (uint8_t)family;
    nd->ndm_ifindex = 7;
    nd->ndm_state = NUD_PERMANENT;
    size_t len = NLMSG_LENGTH(sizeof(*nd));
    len = NLMSG_ALIGN(len);
    put_attr(buf, &len, NDA_DST, dst, dst_len);
    if (lladdr != NULL) {
        put_attr(buf, &len, NDA_LLADDR, lladdr, 6);
    }
    h->nlmsg_type = type;
    h->nlmsg_len = (uint32_t)len;
    return len;
}

static void parses_ipv4_and_ipv6_neighbours_and_skips_other_families(void)
{
    unsigned char buf[256];
    struct efa_ah_net_event e;
    const unsigned char ip4[4] = {10, 9, 1, 250};
    const unsigned char mac[6] = {2, 0, 10, 9, 1, 250};
    size_t len = neigh_message(buf, RTM_NEWNEIGH, AF_INET, ip4, 4, mac);
    CHECK_EQ(1, efa_ah_net_parse(buf, (uint32_t)len, &e));
    CHECK_EQ(EFA_AH_NET_NEWNEIGH, e.type);
    CHECK_EQ(7, e.ifindex);
    CHECK_EQ(AF_INET, e.family);
    CHECK_EQ(NUD_PERMANENT, e.state);
    CHECK_EQ(4, e.addr_len);
    CHECK_EQ(0, memcmp(e.addr, ip4, 4));
    CHECK_EQ(6, e.lladdr_len);
    CHECK_EQ(0, memcmp(e.lladdr, mac, 6));
    CHECK_EQ(0, e.flags);

    unsigned char ip6[16] = {0xfe, 0x80};
    ip6[15] = 1;
    len = neigh_message(buf, RTM_DELNEIGH, AF_INET6, ip6, 16, NULL);
    CHECK_EQ(1, efa_ah_net_parse(buf, (uint32_t)len, &e));
    CHECK_EQ(EFA_AH_NET_DELNEIGH, e.type);
    CHECK_EQ(16, e.addr_len);
    CHECK_EQ(0, e.lladdr_len);

    len = neigh_message(buf, RTM_NEWNEIGH, AF_BRIDGE, mac, 6, mac);
    CHECK_EQ(0, efa_ah_net_parse(buf, (uint32_t)len, &e));
    /* An IPv4 family with a 16-byte destination is malformed: skipped, not misread. */
    len = neigh_message(buf, RTM_NEWNEIGH, AF_INET, ip6, 16, mac);
    CHECK_EQ(0, efa_ah_net_parse(buf, (uint32_t)len, &e));
    /* A length beyond the buffer is refused. */
    CHECK_EQ(-EINVAL, efa_ah_net_parse(buf, (uint32_t)len - 4, &e));
}

static void parses_an_error_answer_as_its_errno(void)
{
    unsigned char buf[64] = {0};
    struct nlmsghdr *h = (struct nlmsghdr *)buf;
    struct nlmsgerr *err = NLMSG_DATA(h);
    h->nlmsg_type = NLMSG_ERROR;
    h->nlmsg_len = NLMSG_LENGTH(sizeof(*err));
    err->error = -EBUSY;
    struct efa_ah_net_event e;
    CHECK_EQ(-EBUSY, efa_ah_net_parse(buf, h->nlmsg_len, &e));
    err->error = 0; /* an acknowledgement */
    CHECK_EQ(0, efa_ah_net_parse(buf, h->nlmsg_len, &e));
}

/* Issue 28 case 8: an interrupted dump (NLM_F_DUMP_INTR) is told apart from a complete one. */
static void flags_a_message_of_an_interrupted_dump(void)
{
    unsigned char buf[64] = {0};
    struct nlmsghdr *h = (struct nlmsghdr *)buf;
    h->nlmsg_type = NLMSG_DONE;
    h->nlmsg_len = NLMSG_LENGTH(sizeof(int));
    h->nlmsg_flags = NLM_F_MULTI;
    struct efa_ah_net_event e;
    CHECK_EQ(1, efa_ah_net_parse(buf, h->nlmsg_len, &e));
    CHECK_EQ(EFA_AH_NET_FROM_DUMP, e.flags);
    h->nlmsg_flags = NLM_F_MULTI | NLM_F_DUMP_INTR;
    CHECK_EQ(1, efa_ah_net_parse(buf, h->nlmsg_len, &e));
    CHECK_EQ(EFA_AH_NET_FROM_DUMP | EFA_AH_NET_DUMP_INTR, e.flags);
}

static void dumps_this_hosts_links_then_wakes(void)
{
    uint64_t channel = 0;
    int rc = efa_ah_net_open(&channel);
    if (rc == -EAFNOSUPPORT || rc == -EPERM || rc == -EACCES) {
        fprintf(stderr, "no rtnetlink here (%d): link dump not tested\n", rc);
        return;
    }
    CHECK_EQ(0, rc);
    CHECK_EQ(0, efa_ah_net_request_dump(channel, EFA_AH_NET_DUMP_LINKS));
    struct efa_ah_net_event events[4]; /* fewer than most hosts' links: the rest must come with later calls */
    int links = 0, loopback = 0, done = 0;
    for (int i = 0; i < 1000 && !done; i++) {
        uint32_t count = 0;
        CHECK_EQ(0, efa_ah_net_wait(channel, 2000, events, 4, &count));
        if (count == 0) {
            break;
        }
        for (uint32_t j = 0; j < count; j++) {
            if (events[j].type == EFA_AH_NET_DUMP_DONE) {
                done = 1;
            } else if (events[j].type == EFA_AH_NET_NEWLINK && (events[j].flags & EFA_AH_NET_FROM_DUMP)) {
                links++;
                if (strcmp(events[j].ifname, "lo") == 0) {
                    loopback = 1;
                    CHECK_EQ(65536, events[j].mtu);
                }
            }
        }
    }
    CHECK_EQ(1, done);
    CHECK_EQ(1, loopback);
    if (links < 1) {
        fprintf(stderr, "no link in the dump\n");
        failures++;
    }
    /* A wake-up ends a wait with no limit at once. */
    CHECK_EQ(0, efa_ah_net_wake(channel));
    uint32_t count = 99;
    CHECK_EQ(0, efa_ah_net_wait(channel, -1, events, 4, &count));
    CHECK_EQ(0, count);
    CHECK_EQ(-EINVAL, efa_ah_net_request_dump(channel, 99));
    CHECK_EQ(0, efa_ah_net_close(channel));
    CHECK_EQ(-EINVAL, efa_ah_net_wait(0, 0, events, 4, &count));
}

int main(void)
{
    parses_ipv4_and_ipv6_neighbours_and_skips_other_families();
    parses_an_error_answer_as_its_errno();
    flags_a_message_of_an_interrupted_dump();
    dumps_this_hosts_links_then_wakes();
    if (failures) {
        fprintf(stderr, "%d failure(s)\n", failures);
        return 1;
    }
    puts("efa_ah_netlink: all tests passed");
    return 0;
}
