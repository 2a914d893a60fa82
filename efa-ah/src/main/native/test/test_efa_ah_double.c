/*
 * The stub's EFA paths over the EFA double (src/test/native/efa-double, first on
 * LD_LIBRARY_PATH): efadv queries, the CQ with the sender's GID, UD and SRD layouts, slid,
 * RNR, queue limits, AHs to GIDs that do not exist, the asynchronous reader. ctest runs it
 * plain and as "removed" (the device's dev_path made and then deleted by the test).
 * Argument: "removed", "old-libibverbs" or nothing.
 */
#define _GNU_SOURCE
#include "efa_ah_native_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

#define QKEY 0x11111111u
#define SLOT 256

struct side {
    uint64_t pd, cq, qp, mr;
    uint32_t qpn;
    uint8_t *buf;
};

static uint64_t context;
static uint8_t gid[EFA_AH_GID_LEN];

static void open_first_device(void)
{
    char names[4 * EFA_AH_NAME_MAX];
    uint32_t count = 0;
    CHECK_EQ(0, efa_ah_device_list(names, 4, &count));
    CHECK_EQ(1, count);
    CHECK_EQ(0, efa_ah_open_device(names, &context));
    struct efa_ah_device_attr attr;
    CHECK_EQ(0, efa_ah_query_device(context, &attr));
    CHECK_EQ(0x1d0f, attr.vendor_id);
    CHECK_EQ(1, efa_ah_efadv_available());
    CHECK_EQ(0, efa_ah_query_gid(context, 1, 0, gid));
}

static void make_side(struct side *s, uint64_t pd, int srd)
{
    s->pd = pd;
    s->buf = calloc(4, SLOT);
    CHECK_EQ(0, efa_ah_reg_mr(pd, (uint64_t)(uintptr_t)s->buf, 4 * SLOT, &s->mr));
    CHECK_EQ(0, efa_ah_efadv_create_cq(context, 16, &s->cq));
    if (srd) {
        CHECK_EQ(0, efa_ah_efadv_create_srd_qp(pd, s->cq, s->cq, 2, 2, &s->qp, &s->qpn));
        CHECK_EQ(0, efa_ah_activate_srd_qp(s->qp, 1, QKEY, EFA_AH_RNR_RETRY_DEFAULT));
    } else {
        CHECK_EQ(0, efa_ah_create_ud_qp(pd, s->cq, s->cq, 2, 2, &s->qp, &s->qpn));
        CHECK_EQ(0, efa_ah_activate_ud_qp(s->qp, 1, 0, QKEY));
    }
}

static void free_side(struct side *s)
{
    CHECK_EQ(0, efa_ah_destroy_qp(s->qp));
    CHECK_EQ(0, efa_ah_destroy_cq(s->cq));
    CHECK_EQ(0, efa_ah_dereg_mr(s->mr));
    free(s->buf);
}

static uint32_t poll(struct side *s, struct efa_ah_wc *wc, uint8_t *sgids, uint64_t *valid)
{
    uint32_t n = 0;
    CHECK_EQ(0, efa_ah_efadv_poll_cq(s->cq, wc, 4, sgids, valid, &n));
    return n;
}

static uint64_t ah_to(uint64_t pd, const uint8_t *dgid, int32_t *ahn)
{
    struct efa_ah_ah_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.is_global = 1;
    attr.port_num = 1;
    attr.hop_limit = 255;
    memcpy(attr.dgid, dgid, EFA_AH_GID_LEN);
    uint64_t ah = 0;
    CHECK_EQ(0, efa_ah_create_ah(pd, &attr, &ah, ahn));
    return ah;
}

/* UD: 40 bytes before the payload, no GRH flag, slid 0xFFFF and the GID for a sender the receiver's PD has no AH for. */
static void ud_layout_and_source(void)
{
    uint64_t pd_a, pd_b;
    CHECK_EQ(0, efa_ah_alloc_pd(context, &pd_a));
    CHECK_EQ(0, efa_ah_alloc_pd(context, &pd_b));
    struct side a, b;
    make_side(&a, pd_a, 0);
    make_side(&b, pd_b, 0);
    int32_t ahn = -1;
    uint64_t ah = ah_to(pd_a, gid, &ahn);
    CHECK_EQ(1, ahn >= 0 && ahn < 0xFFFF);
    memcpy(a.buf, "datagram", 8);
    CHECK_EQ(0, efa_ah_post_recv(b.qp, b.mr, 0, SLOT, 7));
    CHECK_EQ(0, efa_ah_post_send(a.qp, ah, b.qpn, QKEY, a.mr, 0, 8, 9));
    struct efa_ah_wc wc[4];
    uint8_t sgids[4 * EFA_AH_GID_LEN];
    uint64_t valid = 0;
    CHECK_EQ(1, poll(&b, wc, sgids, &valid));
    CHECK_EQ(7, wc[0].wr_id);
    CHECK_EQ(IBV_WC_SUCCESS, wc[0].status);
    CHECK_EQ(0, wc[0].wc_flags);
    CHECK_EQ(EFA_AH_GRH_LEN + 8, wc[0].byte_len);
    CHECK_EQ(0, memcmp(b.buf + EFA_AH_GRH_LEN, "datagram", 8));
    CHECK_EQ(0xFFFF, wc[0].slid);
    CHECK_EQ(a.qpn, wc[0].src_qp);
    CHECK_EQ(1, valid);
    CHECK_EQ(0, memcmp(sgids, gid, EFA_AH_GID_LEN));
    CHECK_EQ(1, poll(&a, wc, sgids, &valid));
    CHECK_EQ(9, wc[0].wr_id);

    /* Once the receiver's PD has an AH for the sender, slid is its AHN and there is no GID. */
    int32_t b_ahn = -1;
    uint64_t b_ah = ah_to(pd_b, gid, &b_ahn);
    CHECK_EQ(0, efa_ah_post_recv(b.qp, b.mr, SLOT, SLOT, 8));
    CHECK_EQ(0, efa_ah_post_send(a.qp, ah, b.qpn, QKEY, a.mr, 0, 8, 10));
    CHECK_EQ(1, poll(&b, wc, sgids, &valid));
    CHECK_EQ(b_ahn, wc[0].slid);
    CHECK_EQ(0, valid);
    CHECK_EQ(1, poll(&a, wc, sgids, &valid));

    /* A receive too short for the 40 bytes and the payload: LOC_LEN_ERR (to_ibv_status). */
    CHECK_EQ(0, efa_ah_post_recv(b.qp, b.mr, 0, EFA_AH_GRH_LEN + 4, 11));
    CHECK_EQ(0, efa_ah_post_send(a.qp, ah, b.qpn, QKEY, a.mr, 0, 8, 12));
    CHECK_EQ(1, poll(&b, wc, sgids, &valid));
    CHECK_EQ(IBV_WC_LOC_LEN_ERR, wc[0].status);
    CHECK_EQ(1, poll(&a, wc, sgids, &valid));

    /* Send queue full (two slots, their completions not polled): ENOMEM. */
    CHECK_EQ(0, efa_ah_post_send(a.qp, ah, b.qpn, QKEY, a.mr, 0, 8, 13));
    CHECK_EQ(0, efa_ah_post_send(a.qp, ah, b.qpn, QKEY, a.mr, 0, 8, 14));
    CHECK_EQ(-ENOMEM, efa_ah_post_send(a.qp, ah, b.qpn, QKEY, a.mr, 0, 8, 15));
    CHECK_EQ(2, poll(&a, wc, sgids, &valid));

    /* An AH to a GID that does not exist: EINVAL (libfabric PR #12136). */
    struct efa_ah_ah_attr bad;
    memset(&bad, 0, sizeof(bad));
    bad.is_global = 1;
    bad.port_num = 1;
    bad.dgid[0] = 0xfd;
    uint64_t none = 0;
    int32_t none_ahn = 0;
    CHECK_EQ(-EINVAL, efa_ah_create_ah(pd_a, &bad, &none, &none_ahn));

    CHECK_EQ(0, efa_ah_destroy_ah(ah));
    CHECK_EQ(0, efa_ah_destroy_ah(b_ah));
    free_side(&a);
    free_side(&b);
    CHECK_EQ(0, efa_ah_dealloc_pd(pd_a));
    CHECK_EQ(0, efa_ah_dealloc_pd(pd_b));
}

/* SRD: the payload at offset 0; with rnr_retry 7 a send to a QP without receives waits for one. */
static void srd_layout_and_rnr(void)
{
    uint64_t pd;
    CHECK_EQ(0, efa_ah_alloc_pd(context, &pd));
    struct side a, b;
    make_side(&a, pd, 1);
    make_side(&b, pd, 1);
    int32_t ahn = -1;
    uint64_t ah = ah_to(pd, gid, &ahn);
    memcpy(a.buf, "reliable", 8);
    CHECK_EQ(0, efa_ah_post_send(a.qp, ah, b.qpn, QKEY, a.mr, 0, 8, 1));
    struct efa_ah_wc wc[4];
    uint8_t sgids[4 * EFA_AH_GID_LEN];
    uint64_t valid = 0;
    CHECK_EQ(0, poll(&a, wc, sgids, &valid));
    CHECK_EQ(0, efa_ah_post_recv(b.qp, b.mr, 0, 8, 2));
    CHECK_EQ(1, poll(&b, wc, sgids, &valid));
    CHECK_EQ(8, wc[0].byte_len);
    CHECK_EQ(ahn, wc[0].slid);
    CHECK_EQ(0, memcmp(b.buf, "reliable", 8));
    CHECK_EQ(1, poll(&a, wc, sgids, &valid));
    CHECK_EQ(IBV_WC_SUCCESS, wc[0].status);
    CHECK_EQ(0, efa_ah_destroy_ah(ah));
    free_side(&a);
    free_side(&b);
    CHECK_EQ(0, efa_ah_dealloc_pd(pd));
}

/* A dev_path that is not there at open says nothing about the device; one that goes away does. */
static void async_reader(int removed, const char *path)
{
    uint64_t channel = 0;
    CHECK_EQ(0, efa_ah_async_open(context, &channel));
    uint32_t types[4], ports[4], count = 9;
    CHECK_EQ(0, efa_ah_async_wait(channel, 0, types, ports, 4, &count));
    CHECK_EQ(0, count);
    if (removed) {
        CHECK_EQ(0, unlink(path));
        CHECK_EQ(-ENODEV, efa_ah_async_wait(channel, 0, types, ports, 4, &count));
    }
    CHECK_EQ(0, efa_ah_async_close(channel));
}

/* rdma-core before 32 has no ibv_query_gid_ex: -EOPNOTSUPP, which devices -v leaves out. */
static void gid_type(int old)
{
    uint32_t type = 99;
    CHECK_EQ(old ? -EOPNOTSUPP : 0, efa_ah_query_gid_type(context, 1, 0, &type));
    CHECK_EQ(old ? 0 : IBV_GID_TYPE_IB, type);
}

/*
 * efadv_get_max_sq_depth and efadv_get_max_rq_depth (EFA_1.5) as EFA_DOUBLE_MAX_DEPTH sets them,
 * and the SRD QP held to them as libefa's efa_check_qp_limits holds it (max_sq_wr and max_rq_wr
 * where absent): the depths the Java endpoint checks first.
 */
static void max_depths(void)
{
    const char *mode = getenv("EFA_DOUBLE_MAX_DEPTH");
    int absent = mode != NULL && strcmp(mode, "absent") == 0;
    int smaller = mode != NULL && strcmp(mode, "smaller") == 0;
    CHECK_EQ(EFA_AH_EFADV_DEPTH, efa_ah_efadv_families() & EFA_AH_EFADV_DEPTH);
    int32_t sq = 0, rq = 0;
    CHECK_EQ(-EINVAL, efa_ah_efadv_max_depths(0, &sq, &rq));
    CHECK_EQ(0, efa_ah_efadv_max_depths(context, &sq, &rq));
    CHECK_EQ(absent ? -EOPNOTSUPP : smaller ? 1024 : 4096, sq);
    CHECK_EQ(absent ? -EOPNOTSUPP : smaller ? 2048 : 8192, rq);
    int send_limit = smaller ? 1024 : 4096;
    int recv_limit = smaller ? 2048 : 8192;
    uint64_t pd, cq, qp;
    uint32_t qpn;
    CHECK_EQ(0, efa_ah_alloc_pd(context, &pd));
    CHECK_EQ(0, efa_ah_efadv_create_cq(context, 16, &cq));
    CHECK_EQ(0, efa_ah_efadv_create_srd_qp(pd, cq, cq, send_limit, recv_limit, &qp, &qpn));
    CHECK_EQ(0, efa_ah_destroy_qp(qp));
    CHECK_EQ(-EINVAL, efa_ah_efadv_create_srd_qp(pd, cq, cq, send_limit + 1, 1, &qp, &qpn));
    if ((uint32_t)recv_limit < EFA_AH_MAX_QP_WR) {
        CHECK_EQ(-EINVAL, efa_ah_efadv_create_srd_qp(pd, cq, cq, 1, recv_limit + 1, &qp, &qpn));
    }
    CHECK_EQ(0, efa_ah_destroy_cq(cq));
    CHECK_EQ(0, efa_ah_dealloc_pd(pd));
}

int main(int argc, char **argv)
{
    int removed = argc > 1 && strcmp(argv[1], "removed") == 0;
    int old = argc > 1 && strcmp(argv[1], "old-libibverbs") == 0;
    char path[] = "/tmp/efa-ah-dev-path-XXXXXX";
    if (removed) {
        int fd = mkstemp(path);
        CHECK_EQ(1, fd >= 0);
        close(fd);
        setenv("EFA_DOUBLE_DEV_PATH", path, 1);
    }
    open_first_device();
    ud_layout_and_source();
    srd_layout_and_rnr();
    async_reader(removed, path);
    gid_type(old);
    max_depths();
    CHECK_EQ(0, efa_ah_close_device(context));
    if (failures != 0) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("all checks passed over the EFA double\n");
    return 0;
}
