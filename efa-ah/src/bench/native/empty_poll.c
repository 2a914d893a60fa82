/*
 * What one poll of an empty CQ costs through the stub (bench-only, never shipped): the step a
 * spinning wait repeats, and the constant of every send-CQ poll. Over the EFA double, one thread,
 * a CQ of 256 that stays empty; 20 million calls each of efa_ah_poll_cq_records (ibv_poll_cq: the
 * send CQs, UD's receive CQ), efa_ah_efadv_poll_cq_records (ibv_start_poll: the receive CQ that
 * reports the sender's GID) and ibv_poll_cq itself (the double's share), 64 asked for, five rounds.
 *
 *   mvn -B -ntp -q -pl efa-ah package -DskipTests   # target/native/libefa_ah_native.a and the double
 *   gcc -O2 -Wall -Wextra -Werror -Iefa-ah/src/main/native -o /tmp/empty_poll efa-ah/src/bench/native/empty_poll.c \
 *       efa-ah/target/native/libefa_ah_native.a -libverbs -ldl
 *   LD_LIBRARY_PATH=efa-ah/target/native/efa-double/lib /tmp/empty_poll
 */
#define _GNU_SOURCE
#include "efa_ah_native_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { CALLS = 20000000, ROUNDS = 5 };

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(void)
{
    char names[4 * EFA_AH_NAME_MAX];
    uint32_t count = 0;
    uint64_t context, cq;
    if (efa_ah_device_list(names, 4, &count) != 0 || count == 0 || efa_ah_open_device(names, &context) != 0
        || efa_ah_efadv_create_cq(context, 256, &cq) != 0) {
        fprintf(stderr, "empty_poll: no EFA device (LD_LIBRARY_PATH=efa-ah/target/native/efa-double/lib?)\n");
        return 1;
    }
    static uint64_t records[64 * EFA_AH_CQE_WORDS];
    static uint8_t sgids[64 * EFA_AH_GID_LEN];
    struct ibv_wc wc[16];
    long found = 0;
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = now_ns();
        for (long i = 0; i < CALLS; i++) {
            found += efa_ah_poll_cq_records(cq, records, 64);
        }
        double t1 = now_ns();
        for (long i = 0; i < CALLS; i++) {
            found += efa_ah_efadv_poll_cq_records(cq, records, 64, sgids);
        }
        double t2 = now_ns();
        for (long i = 0; i < CALLS; i++) {
            found += ibv_poll_cq((struct ibv_cq *)(uintptr_t)cq, 16, wc);
        }
        double t3 = now_ns();
        printf("round %d: ns per empty poll: efa_ah_poll_cq_records %.1f, efa_ah_efadv_poll_cq_records %.1f, "
               "ibv_poll_cq %.1f\n", r, (t1 - t0) / CALLS, (t2 - t1) / CALLS, (t3 - t2) / CALLS);
    }
    return found == 0 ? 0 : 1;
}
