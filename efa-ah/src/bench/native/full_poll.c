/*
 * What a poll that takes completions costs through the stub, per completion (bench-only, never
 * shipped): the other half of empty_poll.c. Over the EFA double, one thread, an SRD QP pair in one
 * PD: each round posts 960 receives and 960 sends of 64 B (the double delivers at post), then
 * takes the 960 send completions with efa_ah_poll_cq_records (ibv_poll_cq: a send CQ's reap) and
 * the 960 receives with efa_ah_efadv_poll_cq_records (ibv_start_poll, the sender's GID asked for
 * each), 64 asked for per call as the endpoint asks; only the polls are timed, and ibv_poll_cq on
 * the sends alone (the double's share) in rounds of their own. Medians over ROUNDS.
 *
 *   mvn -B -ntp -q -pl efa-ah package -DskipTests   # target/native/libefa_ah_native.a and the double
 *   gcc -O2 -Wall -Wextra -Werror -Iefa-ah/src/main/native -o /tmp/full_poll efa-ah/src/bench/native/full_poll.c \
 *       efa-ah/target/native/libefa_ah_native.a -libverbs -ldl
 *   LD_LIBRARY_PATH=efa-ah/target/native/efa-double/lib /tmp/full_poll [ROUNDS]
 */
#define _GNU_SOURCE
#include "efa_ah_native_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { FILL = 960, BATCH = 64, SLOT = 128, QKEY = 0x11111111 };

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void check(int rc, const char *what)
{
    if (rc != 0) {
        fprintf(stderr, "full_poll: %s: %d (LD_LIBRARY_PATH=efa-ah/target/native/efa-double/lib?)\n", what, rc);
        exit(1);
    }
}

static uint64_t records[BATCH * EFA_AH_CQE_WORDS];
static uint8_t sgids[BATCH * EFA_AH_GID_LEN];
static uint8_t memory[2 * FILL * SLOT];

/* The receives and the sends of one round, untimed: FILL completions on each CQ. */
static void fill(uint64_t rx_qp, uint64_t tx_qp, uint64_t ah, uint32_t rx_qpn, uint64_t mr)
{
    uint32_t offsets[BATCH];
    uint64_t ids[BATCH];
    struct efa_ah_send_req reqs[BATCH];
    for (uint32_t s = 0; s < FILL; s += BATCH) {
        for (uint32_t i = 0; i < BATCH; i++) {
            offsets[i] = (s + i) * SLOT;
            ids[i] = s + i;
        }
        uint32_t posted = 0;
        check(efa_ah_post_recv_batch(rx_qp, mr, offsets, SLOT, ids, BATCH, &posted), "efa_ah_post_recv_batch");
        if (posted != BATCH) {
            check(-1, "receives posted");
        }
    }
    for (uint32_t s = 0; s < FILL; s += BATCH) {
        for (uint32_t i = 0; i < BATCH; i++) {
            reqs[i].wr_id = s + i;
            reqs[i].offset = (FILL + s + i) * SLOT;
            reqs[i].length = 64;
        }
        if (efa_ah_post_sends(tx_qp, ah, rx_qpn, QKEY, mr, reqs, BATCH) != BATCH) {
            check(-1, "efa_ah_post_sends");
        }
    }
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 2000;
    char names[4 * EFA_AH_NAME_MAX];
    uint32_t count = 0, rx_qpn = 0, tx_qpn = 0;
    uint64_t context, pd, tx_cq, rx_cq, spare_cq, rx_qp, tx_qp, mr, ah;
    int32_t ahn;
    check(efa_ah_device_list(names, 4, &count) != 0 || count == 0, "no EFA device");
    check(efa_ah_open_device(names, &context), "efa_ah_open_device");
    check(efa_ah_alloc_pd(context, &pd), "efa_ah_alloc_pd");
    check(efa_ah_create_cq(context, 2 * FILL, &tx_cq), "efa_ah_create_cq");
    check(efa_ah_create_cq(context, 2 * FILL, &spare_cq), "efa_ah_create_cq");
    check(efa_ah_efadv_create_cq(context, 2 * FILL, &rx_cq), "efa_ah_efadv_create_cq");
    check(efa_ah_efadv_create_srd_qp(pd, spare_cq, rx_cq, 16, FILL, &rx_qp, &rx_qpn), "receiver's QP");
    check(efa_ah_efadv_create_srd_qp(pd, tx_cq, spare_cq, FILL, 16, &tx_qp, &tx_qpn), "sender's QP");
    check(efa_ah_activate_srd_qp(rx_qp, 1, QKEY, 3), "activate");
    check(efa_ah_activate_srd_qp(tx_qp, 1, QKEY, 3), "activate");
    check(efa_ah_reg_mr(pd, (uint64_t)(uintptr_t)memory, sizeof(memory), &mr), "efa_ah_reg_mr");
    struct efa_ah_ah_attr attr;
    memset(&attr, 0, sizeof(attr));
    check(efa_ah_query_gid(context, 1, 0, attr.dgid), "efa_ah_query_gid");
    attr.is_global = 1;
    attr.port_num = 1;
    check(efa_ah_create_ah(pd, &attr, &ah, &ahn), "efa_ah_create_ah");
    double *sends = calloc((size_t)rounds, sizeof(double));
    double *receives = calloc((size_t)rounds, sizeof(double));
    double *verbs = calloc((size_t)rounds, sizeof(double));
    struct ibv_wc wc[16];
    for (int r = 0; r < rounds; r++) {
        fill(rx_qp, tx_qp, ah, rx_qpn, mr);
        int got = 0;
        double t0 = now_ns();
        while (got < FILL) {
            int n = efa_ah_poll_cq_records(tx_cq, records, BATCH);
            check(n <= 0, "efa_ah_poll_cq_records");
            got += n;
        }
        double t1 = now_ns();
        for (got = 0; got < FILL;) {
            int n = efa_ah_efadv_poll_cq_records(rx_cq, records, BATCH, sgids);
            check(n <= 0, "efa_ah_efadv_poll_cq_records");
            got += n;
        }
        double t2 = now_ns();
        sends[r] = (t1 - t0) / FILL;
        receives[r] = (t2 - t1) / FILL;
        /* the double's own poll, in a round of its own: the sends again, drained by ibv_poll_cq */
        fill(rx_qp, tx_qp, ah, rx_qpn, mr);
        double t3 = now_ns();
        for (got = 0; got < FILL;) {
            int n = ibv_poll_cq((struct ibv_cq *)(uintptr_t)tx_cq, 16, wc);
            check(n <= 0, "ibv_poll_cq");
            got += n;
        }
        verbs[r] = (now_ns() - t3) / FILL;
        for (got = 0; got < FILL;) {
            int n = efa_ah_efadv_poll_cq_records(rx_cq, records, BATCH, sgids);
            check(n <= 0, "efa_ah_efadv_poll_cq_records");
            got += n;
        }
    }
    qsort(sends, (size_t)rounds, sizeof(double), by_value);
    qsort(receives, (size_t)rounds, sizeof(double), by_value);
    qsort(verbs, (size_t)rounds, sizeof(double), by_value);
    printf("full_poll: ns per completion, median (p10) of %d rounds: efa_ah_poll_cq_records %.1f (%.1f), "
           "efa_ah_efadv_poll_cq_records %.1f (%.1f), ibv_poll_cq %.1f (%.1f)\n", rounds, sends[rounds / 2],
           sends[rounds / 10], receives[rounds / 2], receives[rounds / 10], verbs[rounds / 2], verbs[rounds / 10]);
    return 0;
}
