/*
 * The receive path alone, in C (bench-only, never shipped): efa-ah/src/bench/java/org/efaah/bench/ReceivePath.java's twin. The sender fills
 * the receiver's CQ with 960 datagrams of 64 B (sent and flushed), then the receiver drains them 64 per
 * call with stream_reference.c's own receive steps (take_all, the ring, repost in batches) and a handler
 * that reads each payload's length and first byte; the thread's CPU per datagram is taken per drain, and
 * per empty poll after it. No waiting, no second thread: what is left is the path's own work and the
 * double's, without the spin and the sleeps that dominate a stream's receiver thread.
 *
 *   gcc -O2 -Wall -Wextra -Werror -o receive_drain efa-ah/src/bench/native/receive_drain.c -libverbs -lefa -lpthread
 *   LD_LIBRARY_PATH=efa-ah/target/native/efa-double/lib ./receive_drain srd|ud [ROUNDS]
 */
#define main stream_reference_main
#include "stream_reference.c"
#undef main

enum { FILL = 960, LIMIT = 64 };

static uint64_t seen;

/* stream_reference's lend_step with the drain's handler (no clock read per datagram). */
static uint32_t drain_step(struct endpoint *e)
{
    if (e->ring_count == 0) {
        take_all(e);
    }
    uint32_t n = 0;
    while (e->ring_count > 0 && n < LIMIT) {
        uint32_t slot = (uint32_t)e->ring_wr[e->ring_head];
        uint32_t len = e->ring_len[e->ring_head];
        e->ring_head = (e->ring_head + 1) % e->recv_depth;
        e->ring_count--;
        seen += len + e->recv_mem[(size_t)slot * e->slot_size + e->prefix];
        repost(e, slot);
        n++;
    }
    return n;
}

static int by_value(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "srd") != 0 && strcmp(argv[1], "ud") != 0)) {
        fprintf(stderr, "usage: receive_drain srd|ud [ROUNDS]\n");
        return 2;
    }
    srd = strcmp(argv[1], "srd") == 0;
    int rounds = argc > 2 ? atoi(argv[2]) : 2000;
    if (rounds < 10) {
        rounds = 10;
    }
    int num;
    struct ibv_device **list = ibv_get_device_list(&num);
    if (list == NULL || num < 1 || (ctx = ibv_open_device(list[0])) == NULL) {
        die("no device");
    }
    struct ibv_port_attr port;
    if (ibv_query_port(ctx, 1, &port) != 0 || ibv_query_gid(ctx, 1, 0, &gid) != 0 || (pd = ibv_alloc_pd(ctx)) == NULL) {
        die("ibv_query_port");
    }
    static struct endpoint receiver, sender;
    open_endpoint(&receiver, 1, 1024, port.max_msg_sz, 50000);
    open_endpoint(&sender, 64, 16, port.max_msg_sz, 50000);
    struct ibv_ah_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.is_global = 1;
    attr.grh.dgid = gid;
    attr.grh.hop_limit = 1;
    attr.port_num = 1;
    if ((ah = ibv_create_ah(pd, &attr)) == NULL) {
        die("ibv_create_ah");
    }
    remote_qpn = receiver.qp->qp_num;
    uint8_t payload[64];
    memset(payload, 0x7b, sizeof(payload));
    uint64_t *drain = calloc((size_t)rounds, sizeof(uint64_t));
    uint64_t *empty = calloc((size_t)rounds, sizeof(uint64_t));
    int warm = rounds / 4;
    for (int r = 0; r < rounds + warm; r++) {
        for (int s = 0; s < FILL; s += 64) {
            send_batch(&sender, payload, sizeof(payload), 64);
        }
        if (!await(&sender, &sender.send_wait, flush_step, NULL, send_may_idle, now_ns() + 10000000000u)) {
            die("flush");
        }
        uint64_t t0 = thread_cpu_ns();
        uint32_t got = 0;
        while (got < FILL) {
            got += drain_step(&receiver);
        }
        uint64_t t1 = thread_cpu_ns();
        for (int i = 0; i < LIMIT; i++) {
            drain_step(&receiver);
        }
        uint64_t t2 = thread_cpu_ns();
        if (r >= warm) {
            drain[r - warm] = (t1 - t0) * 1000 / FILL;
            empty[r - warm] = (t2 - t1) * 1000 / LIMIT;
        }
    }
    qsort(drain, (size_t)rounds, sizeof(uint64_t), by_value);
    qsort(empty, (size_t)rounds, sizeof(uint64_t), by_value);
    printf("receive_drain %s: CPU ns per datagram p10 %.1f p25 %.1f median %.1f p75 %.1f; per empty poll median %.1f"
           " (checksum %llu)\n", argv[1], drain[rounds / 10] / 1000.0, drain[rounds / 4] / 1000.0,
           drain[rounds / 2] / 1000.0, drain[rounds * 3 / 4] / 1000.0, empty[rounds / 2] / 1000.0,
           (unsigned long long)seen);
    return 0;
}
