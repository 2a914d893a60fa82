/*
 * Tests of efa_ah_native that need no RDMA device: argument checks, the NULL device list,
 * errno mapping and attribute conversion. A tiny harness so the build needs nothing new.
 */
#include "efa_ah_native_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "check.h"

/* A context handle that must never be dereferenced: every call below fails its checks first. */
#define NEVER_USED_HANDLE 0

static void null_device_list_means_no_devices(void)
{
    char names[2 * EFA_AH_NAME_MAX];
    uint32_t count = 99;
    /* What libibverbs gives with no RDMA in the kernel: NULL, errno ENOSYS. */
    CHECK_EQ(0, efa_ah_names_from_list(NULL, 0, ENOSYS, names, 2, &count));
    CHECK_EQ(0, count);
    count = 99;
    CHECK_EQ(0, efa_ah_names_from_list(NULL, 0, 0, NULL, 0, &count));
    CHECK_EQ(0, count);
    CHECK_EQ(-ENOMEM, efa_ah_names_from_list(NULL, 0, ENOMEM, names, 2, &count));
    CHECK_EQ(-EINVAL, efa_ah_names_from_list(NULL, 0, 0, names, 2, NULL));
    CHECK_EQ(-EINVAL, efa_ah_names_from_list(NULL, 0, 0, NULL, 1, &count));
}

static void real_device_list_never_fails(void)
{
    /* Whatever this machine has (often nothing), listing succeeds and agrees with itself. */
    char names[8 * EFA_AH_NAME_MAX];
    uint32_t count = 99, count_only = 99;
    CHECK_EQ(0, efa_ah_device_list(names, 8, &count));
    CHECK_EQ(0, efa_ah_device_list(NULL, 0, &count_only));
    CHECK_EQ(count, count_only);
    for (uint32_t i = 0; i < count && i < 8; i++) {
        const char *name = names + (size_t)i * EFA_AH_NAME_MAX;
        CHECK_EQ(1, memchr(name, '\0', EFA_AH_NAME_MAX) != NULL);
        CHECK_EQ(1, strlen(name) > 0);
    }
    CHECK_EQ(-EINVAL, efa_ah_device_list(NULL, 1, &count));
    CHECK_EQ(-EINVAL, efa_ah_device_list(names, 8, NULL));
    uint64_t context = 1234;
    CHECK_EQ(-ENODEV, efa_ah_open_device("efa-ah-no-such-device", &context));
    CHECK_EQ(0, context);
}

static void zero_handles_and_null_pointers_are_einval(void)
{
    struct efa_ah_device_attr device;
    struct efa_ah_port_attr port;
    struct efa_ah_ah_attr ah_attr;
    uint8_t gid[EFA_AH_GID_LEN];
    uint64_t handle = 0;
    int32_t ahn = 0;
    memset(&ah_attr, 0, sizeof(ah_attr));
    ah_attr.port_num = 1;

    CHECK_EQ(-EINVAL, efa_ah_open_device(NULL, &handle));
    CHECK_EQ(-EINVAL, efa_ah_open_device("x", NULL));
    CHECK_EQ(-EINVAL, efa_ah_close_device(NEVER_USED_HANDLE));
    CHECK_EQ(-EINVAL, efa_ah_query_device(NEVER_USED_HANDLE, &device));
    CHECK_EQ(-EINVAL, efa_ah_query_device(1, NULL));
    CHECK_EQ(-EINVAL, efa_ah_query_port(NEVER_USED_HANDLE, 1, &port));
    CHECK_EQ(-EINVAL, efa_ah_query_port(1, 1, NULL));
    CHECK_EQ(-EINVAL, efa_ah_query_port(1, 0, &port));
    CHECK_EQ(-EINVAL, efa_ah_query_port(1, 256, &port));
    CHECK_EQ(-EINVAL, efa_ah_query_gid(NEVER_USED_HANDLE, 1, 0, gid));
    CHECK_EQ(-EINVAL, efa_ah_query_gid(1, 1, 0, NULL));
    CHECK_EQ(-EINVAL, efa_ah_query_gid(1, 1, 0x80000000u, gid));
    CHECK_EQ(-EINVAL, efa_ah_alloc_pd(NEVER_USED_HANDLE, &handle));
    CHECK_EQ(-EINVAL, efa_ah_alloc_pd(1, NULL));
    CHECK_EQ(-EINVAL, efa_ah_dealloc_pd(NEVER_USED_HANDLE));
    CHECK_EQ(-EINVAL, efa_ah_create_ah(NEVER_USED_HANDLE, &ah_attr, &handle, &ahn));
    CHECK_EQ(-EINVAL, efa_ah_create_ah(1, NULL, &handle, &ahn));
    CHECK_EQ(-EINVAL, efa_ah_create_ah(1, &ah_attr, NULL, &ahn));
    CHECK_EQ(-EINVAL, efa_ah_create_ah(1, &ah_attr, &handle, NULL));
    CHECK_EQ(-EINVAL, efa_ah_destroy_ah(NEVER_USED_HANDLE));
}

/*
 * The datagram calls refuse 0 handles, NULL pointers and out-of-range numbers before they touch
 * any verbs object: handle 1 stands for "some live object" and is never dereferenced.
 */
static void datagram_calls_check_their_arguments(void)
{
    uint64_t handle = 99;
    uint32_t qpn = 99, count = 99;
    struct efa_ah_wc wc[2];
    struct efa_ah_ah_attr ah_attr;
    memset(wc, 0, sizeof(wc));

    CHECK_EQ(-EINVAL, efa_ah_create_cq(NEVER_USED_HANDLE, 16, &handle));
    CHECK_EQ(-EINVAL, efa_ah_create_cq(1, 16, NULL));
    CHECK_EQ(-EINVAL, efa_ah_create_cq(1, 0, &handle));
    CHECK_EQ(-EINVAL, efa_ah_create_cq(1, EFA_AH_MAX_CQE + 1, &handle));
    CHECK_EQ(-EINVAL, efa_ah_destroy_cq(NEVER_USED_HANDLE));

    char memory[64];
    CHECK_EQ(-EINVAL, efa_ah_reg_mr(NEVER_USED_HANDLE, (uint64_t)(uintptr_t)memory, sizeof(memory), &handle));
    CHECK_EQ(-EINVAL, efa_ah_reg_mr(1, 0, sizeof(memory), &handle));
    CHECK_EQ(-EINVAL, efa_ah_reg_mr(1, (uint64_t)(uintptr_t)memory, 0, &handle));
    CHECK_EQ(-EINVAL, efa_ah_reg_mr(1, (uint64_t)(uintptr_t)memory, sizeof(memory), NULL));
    /* A range that would wrap the address space. */
    CHECK_EQ(-EINVAL, efa_ah_reg_mr(1, UINT64_MAX - 8, 64, &handle));
    CHECK_EQ(-EINVAL, efa_ah_dereg_mr(NEVER_USED_HANDLE));

    CHECK_EQ(-EINVAL, efa_ah_create_ud_qp(NEVER_USED_HANDLE, 1, 1, 1, 1, &handle, &qpn));
    CHECK_EQ(-EINVAL, efa_ah_create_ud_qp(1, NEVER_USED_HANDLE, 1, 1, 1, &handle, &qpn));
    CHECK_EQ(-EINVAL, efa_ah_create_ud_qp(1, 1, NEVER_USED_HANDLE, 1, 1, &handle, &qpn));
    CHECK_EQ(-EINVAL, efa_ah_create_ud_qp(1, 1, 1, 0, 1, &handle, &qpn));
    CHECK_EQ(-EINVAL, efa_ah_create_ud_qp(1, 1, 1, 1, 0, &handle, &qpn));
    CHECK_EQ(-EINVAL, efa_ah_create_ud_qp(1, 1, 1, EFA_AH_MAX_QP_WR + 1, 1, &handle, &qpn));
    CHECK_EQ(-EINVAL, efa_ah_create_ud_qp(1, 1, 1, 1, EFA_AH_MAX_QP_WR + 1, &handle, &qpn));
    CHECK_EQ(-EINVAL, efa_ah_create_ud_qp(1, 1, 1, 1, 1, NULL, &qpn));
    CHECK_EQ(-EINVAL, efa_ah_create_ud_qp(1, 1, 1, 1, 1, &handle, NULL));

    CHECK_EQ(-EINVAL, efa_ah_activate_ud_qp(NEVER_USED_HANDLE, 1, 0, 0x11111111u));
    CHECK_EQ(-EINVAL, efa_ah_activate_ud_qp(1, 0, 0, 0x11111111u));
    CHECK_EQ(-EINVAL, efa_ah_activate_ud_qp(1, 256, 0, 0x11111111u));
    CHECK_EQ(-EINVAL, efa_ah_activate_ud_qp(1, 1, 0x10000, 0x11111111u));
    CHECK_EQ(-EINVAL, efa_ah_reset_qp(NEVER_USED_HANDLE));
    CHECK_EQ(-EINVAL, efa_ah_error_qp(NEVER_USED_HANDLE));
    CHECK_EQ(-EINVAL, efa_ah_destroy_qp(NEVER_USED_HANDLE));

    /* SRD: the same port check, and rnr_retry 0..7 or the default (-1); nothing else reaches the QP. */
    CHECK_EQ(-EINVAL, efa_ah_activate_srd_qp(NEVER_USED_HANDLE, 1, 0x11111111u, EFA_AH_RNR_RETRY_DEFAULT));
    CHECK_EQ(-EINVAL, efa_ah_activate_srd_qp(1, 0, 0x11111111u, 3));
    CHECK_EQ(-EINVAL, efa_ah_activate_srd_qp(1, 256, 0x11111111u, 3));
    CHECK_EQ(-EINVAL, efa_ah_activate_srd_qp(1, 1, 0x11111111u, 8));
    CHECK_EQ(-EINVAL, efa_ah_activate_srd_qp(1, 1, 0x11111111u, -2));
    CHECK_EQ(-EINVAL, efa_ah_activate_srd_qp(1, 1, 0x11111111u, INT32_MIN));

    CHECK_EQ(-EINVAL, efa_ah_post_send(NEVER_USED_HANDLE, 1, 1, 0, 1, 0, 1, 0));
    CHECK_EQ(-EINVAL, efa_ah_post_send(1, NEVER_USED_HANDLE, 1, 0, 1, 0, 1, 0));
    CHECK_EQ(-EINVAL, efa_ah_post_send(1, 1, 1, 0, NEVER_USED_HANDLE, 0, 1, 0));
    CHECK_EQ(-EINVAL, efa_ah_post_send(1, 1, EFA_AH_MAX_QPN + 1, 0, 1, 0, 1, 0));
    CHECK_EQ(-EINVAL, efa_ah_post_recv(NEVER_USED_HANDLE, 1, 0, 1, 0));
    CHECK_EQ(-EINVAL, efa_ah_post_recv(1, NEVER_USED_HANDLE, 0, 1, 0));

    CHECK_EQ(-EINVAL, efa_ah_poll_cq(NEVER_USED_HANDLE, wc, 2, &count));
    CHECK_EQ(-EINVAL, efa_ah_poll_cq(1, NULL, 2, &count));
    CHECK_EQ(-EINVAL, efa_ah_poll_cq(1, wc, 2, NULL));

    CHECK_EQ(-EINVAL, efa_ah_init_ah_from_wc(NEVER_USED_HANDLE, 1, wc, 1, 0, &ah_attr));
    CHECK_EQ(-EINVAL, efa_ah_init_ah_from_wc(1, 1, NULL, 1, 0, &ah_attr));
    CHECK_EQ(-EINVAL, efa_ah_init_ah_from_wc(1, 1, wc, NEVER_USED_HANDLE, 0, &ah_attr));
    CHECK_EQ(-EINVAL, efa_ah_init_ah_from_wc(1, 1, wc, 1, 0, NULL));
    CHECK_EQ(-EINVAL, efa_ah_init_ah_from_wc(1, 0, wc, 1, 0, &ah_attr));
    CHECK_EQ(-EINVAL, efa_ah_init_ah_from_wc(1, 256, wc, 1, 0, &ah_attr));
}

/*
 * Ranges inside an MR are checked against the struct ibv_mr itself, before the QP or context
 * is touched: a struct of the test's own stands in for a registered MR.
 */
static void ranges_outside_the_mr_are_einval(void)
{
    char memory[100];
    struct ibv_mr fake;
    memset(&fake, 0, sizeof(fake));
    fake.addr = memory;
    fake.length = sizeof(memory);
    fake.lkey = 7;
    uint64_t mr = (uint64_t)(uintptr_t)&fake;
    uint64_t addr = 0;

    CHECK_EQ(0, efa_ah_mr_range(mr, 0, 100, &addr));
    CHECK_EQ((uint64_t)(uintptr_t)memory, addr);
    CHECK_EQ(0, efa_ah_mr_range(mr, 60, 40, &addr));
    CHECK_EQ((uint64_t)(uintptr_t)(memory + 60), addr);
    CHECK_EQ(0, efa_ah_mr_range(mr, 100, 0, &addr));
    CHECK_EQ(-EINVAL, efa_ah_mr_range(mr, 61, 40, &addr));
    CHECK_EQ(-EINVAL, efa_ah_mr_range(mr, 101, 0, &addr));
    CHECK_EQ(-EINVAL, efa_ah_mr_range(mr, 0, 101, &addr));
    /* Sums that would wrap a 64-bit offset. */
    CHECK_EQ(-EINVAL, efa_ah_mr_range(mr, UINT64_MAX, 2, &addr));
    CHECK_EQ(-EINVAL, efa_ah_mr_range(mr, 2, UINT64_MAX, &addr));
    CHECK_EQ(-EINVAL, efa_ah_mr_range(0, 0, 1, &addr));
    CHECK_EQ(-EINVAL, efa_ah_mr_range(mr, 0, 1, NULL));

    /* The same checks guard the calls that use an MR (handle 1: a QP/AH/context never reached). */
    CHECK_EQ(-EINVAL, efa_ah_post_send(1, 1, 1, 0, mr, 90, 11, 0));
    CHECK_EQ(-EINVAL, efa_ah_post_send(1, 1, 1, 0, mr, UINT64_MAX, 1, 0));
    CHECK_EQ(-EINVAL, efa_ah_post_recv(1, mr, 0, 101, 0));
    CHECK_EQ(-EINVAL, efa_ah_post_recv(1, mr, 101, 0, 0));
    /* A zero-length receive would take an EFA receive slot that never completes. */
    CHECK_EQ(-EINVAL, efa_ah_post_recv(1, mr, 0, 0, 0));
    CHECK_EQ(-EINVAL, efa_ah_post_recv(1, mr, 100, 0, 0));
    struct efa_ah_wc wc;
    struct efa_ah_ah_attr ah_attr;
    memset(&wc, 0, sizeof(wc));
    wc.wc_flags = EFA_AH_WC_GRH;
    /* A GRH of 40 bytes at 61 would end at 101, one past the MR. */
    CHECK_EQ(-EINVAL, efa_ah_init_ah_from_wc(1, 1, &wc, mr, 61, &ah_attr));
}

static void completions_convert_both_ways(void)
{
    struct ibv_wc verbs, back;
    struct efa_ah_wc flat, bad;
    memset(&verbs, 0, sizeof(verbs));
    verbs.wr_id = 0x0123456789ABCDEFull;
    verbs.status = IBV_WC_LOC_LEN_ERR;
    verbs.opcode = IBV_WC_RECV;
    verbs.vendor_err = 0x55;
    verbs.byte_len = 1064;
    verbs.qp_num = 0xABCDEF;
    verbs.src_qp = 0x123456;
    verbs.wc_flags = IBV_WC_GRH;
    verbs.pkey_index = 0xFFFF;
    verbs.slid = 0xBEEF;
    verbs.sl = 15;
    verbs.dlid_path_bits = 0x7F;
    efa_ah_wc_from_verbs(&verbs, &flat);
    CHECK_EQ(0x0123456789ABCDEFull, flat.wr_id);
    CHECK_EQ(IBV_WC_LOC_LEN_ERR, flat.status);
    CHECK_EQ(IBV_WC_RECV, flat.opcode);
    CHECK_EQ(1064, flat.byte_len);
    CHECK_EQ(0x123456, flat.src_qp);
    CHECK_EQ(0, flat.reserved);
    CHECK_EQ(0, efa_ah_wc_to_verbs(&flat, &back));
    CHECK_EQ(verbs.wr_id, back.wr_id);
    CHECK_EQ(verbs.status, back.status);
    CHECK_EQ(verbs.opcode, back.opcode);
    CHECK_EQ(verbs.vendor_err, back.vendor_err);
    CHECK_EQ(verbs.byte_len, back.byte_len);
    CHECK_EQ(verbs.qp_num, back.qp_num);
    CHECK_EQ(verbs.src_qp, back.src_qp);
    CHECK_EQ(verbs.wc_flags, back.wc_flags);
    CHECK_EQ(verbs.pkey_index, back.pkey_index);
    CHECK_EQ(verbs.slid, back.slid);
    CHECK_EQ(verbs.sl, back.sl);
    CHECK_EQ(verbs.dlid_path_bits, back.dlid_path_bits);

#define REJECTS(field, value)                                   \
    do {                                                        \
        bad = flat;                                             \
        bad.field = (value);                                    \
        CHECK_EQ(-EINVAL, efa_ah_wc_to_verbs(&bad, &back));     \
    } while (0)
    REJECTS(pkey_index, 0x10000u);
    REJECTS(slid, 0x10000u);
    REJECTS(sl, 16u);
    REJECTS(dlid_path_bits, 256u);
#undef REJECTS
    CHECK_EQ(-EINVAL, efa_ah_wc_to_verbs(NULL, &back));
    CHECK_EQ(-EINVAL, efa_ah_wc_to_verbs(&flat, NULL));
    /* The binding reads this struct as plain memory: its size is part of the ABI. */
    CHECK_EQ(56, sizeof(struct efa_ah_wc));
}

static void out_of_range_attributes_are_einval(void)
{
    struct efa_ah_ah_attr in;
    struct ibv_ah_attr out;
    memset(&in, 0, sizeof(in));
    in.port_num = 1;
    CHECK_EQ(0, efa_ah_attr_to_verbs(&in, &out));

    struct efa_ah_ah_attr bad;
#define REJECTS(field, value)                                   \
    do {                                                        \
        bad = in;                                               \
        bad.field = (value);                                    \
        CHECK_EQ(-EINVAL, efa_ah_attr_to_verbs(&bad, &out));    \
    } while (0)
    REJECTS(flow_label, 0x100000u);
    REJECTS(sgid_index, 256u);
    REJECTS(hop_limit, 256u);
    REJECTS(traffic_class, 256u);
    REJECTS(dlid, 0x10000u);
    REJECTS(sl, 16u);
    REJECTS(src_path_bits, 0x80u);
    REJECTS(static_rate, 256u);
    REJECTS(is_global, 2u);
    REJECTS(port_num, 0u);
    REJECTS(port_num, 256u);
#undef REJECTS
    CHECK_EQ(-EINVAL, efa_ah_attr_to_verbs(NULL, &out));
    CHECK_EQ(-EINVAL, efa_ah_attr_to_verbs(&in, NULL));
}

static void attributes_round_trip(void)
{
    struct efa_ah_ah_attr in, back;
    struct ibv_ah_attr verbs;
    memset(&in, 0, sizeof(in));
    for (int i = 0; i < EFA_AH_GID_LEN; i++) {
        in.dgid[i] = (uint8_t)(0xf0 + i);
    }
    in.flow_label = 0xFFFFF;
    in.sgid_index = 3;
    in.hop_limit = 255;
    in.traffic_class = 0x2e;
    in.dlid = 0xBEEF;
    in.sl = 15;
    in.src_path_bits = 0x7F;
    in.static_rate = 24;
    in.is_global = 1;
    in.port_num = 2;
    CHECK_EQ(0, efa_ah_attr_to_verbs(&in, &verbs));
    CHECK_EQ(0xf3, verbs.grh.dgid.raw[3]);
    CHECK_EQ(0xBEEF, verbs.dlid);
    efa_ah_attr_from_verbs(&verbs, &back);
    CHECK_EQ(0, memcmp(&in, &back, sizeof(in)));
}

static void errno_mapping(void)
{
    /* Positive errno returned directly (ibv_query_port, ibv_destroy_ah, ...). */
    CHECK_EQ(-EBUSY, efa_ah_error_from_rc(EBUSY, 0));
    CHECK_EQ(-EINVAL, efa_ah_error_from_rc(EINVAL, ENOMEM));
    /* -1 with errno (ibv_query_gid). */
    CHECK_EQ(-ENOMEM, efa_ah_error_from_rc(-1, ENOMEM));
    /* Negative errno returned directly. */
    CHECK_EQ(-ENODEV, efa_ah_error_from_rc(-ENODEV, EINVAL));
    /* NULL results: the errno, or EIO when the library left none. */
    CHECK_EQ(-ETIMEDOUT, efa_ah_error_from_rc(0, ETIMEDOUT));
    CHECK_EQ(-EIO, efa_ah_error_from_rc(0, 0));
    CHECK_EQ(-EIO, efa_ah_error_from_rc(-1, 0));
}

static void mtu_bytes(void)
{
    CHECK_EQ(256, efa_ah_mtu_bytes(IBV_MTU_256));
    CHECK_EQ(512, efa_ah_mtu_bytes(IBV_MTU_512));
    CHECK_EQ(1024, efa_ah_mtu_bytes(IBV_MTU_1024));
    CHECK_EQ(2048, efa_ah_mtu_bytes(IBV_MTU_2048));
    CHECK_EQ(4096, efa_ah_mtu_bytes(IBV_MTU_4096));
    CHECK_EQ(0, efa_ah_mtu_bytes(0));
    CHECK_EQ(0, efa_ah_mtu_bytes(6));
}

/*
 * A send completion carries no receive fields: whatever the provider left in them (EFA writes
 * none for a send) reads as 0.
 */
static void send_completions_have_no_receive_fields(void)
{
    struct ibv_wc verbs;
    struct efa_ah_wc flat;
    memset(&verbs, 0xA5, sizeof(verbs));
    verbs.wr_id = 42;
    verbs.status = IBV_WC_SUCCESS;
    verbs.opcode = IBV_WC_SEND;
    verbs.vendor_err = 0;
    verbs.qp_num = 0x77;
    verbs.wc_flags = 0;
    efa_ah_wc_from_verbs(&verbs, &flat);
    CHECK_EQ(42, flat.wr_id);
    CHECK_EQ(IBV_WC_SEND, flat.opcode);
    CHECK_EQ(0x77, flat.qp_num);
    CHECK_EQ(0, flat.byte_len);
    CHECK_EQ(0, flat.src_qp);
    CHECK_EQ(0, flat.pkey_index);
    CHECK_EQ(0, flat.slid);
    CHECK_EQ(0, flat.sl);
    CHECK_EQ(0, flat.dlid_path_bits);
    CHECK_EQ(0, flat.reserved);

    verbs.opcode = IBV_WC_RECV;
    verbs.byte_len = 64;
    verbs.src_qp = 0x1234;
    verbs.slid = 0xFFFF;
    efa_ah_wc_from_verbs(&verbs, &flat);
    CHECK_EQ(64, flat.byte_len);
    CHECK_EQ(0x1234, flat.src_qp);
    CHECK_EQ(0xFFFF, flat.slid);
}

/*
 * A provider behind ibv_poll_cq (libibverbs calls cq->context->ops.poll_cq) that counts every entry
 * it is given that is not all 0, then plays one step of its script as a provider may: completions
 * with every byte written; error completions with only the four fields ibv_poll_cq(3) defines for
 * one (wr_id, status, qp_num, vendor_err); or a failure after scribbling on the first entry.
 */
enum fake_kind { FAKE_FULL, FAKE_SPARSE_ERRORS, FAKE_FAIL, FAKE_FULL_SEND };
static struct fake_step {
    int count;
    enum fake_kind kind;
} fake_script[4];
static int fake_calls, fake_dirty_entries;

static int fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
    (void)cq;
    for (int i = 0; i < n; i++) {
        const unsigned char *b = (const unsigned char *)&wc[i];
        for (size_t k = 0; k < sizeof(wc[i]); k++) {
            if (b[k] != 0) {
                fake_dirty_entries++;
                break;
            }
        }
    }
    struct fake_step step = fake_script[fake_calls++];
    if (step.kind == FAKE_FAIL) {
        memset(&wc[0], 0x5A, sizeof(wc[0]));
        return -EINVAL;
    }
    int got = step.count < n ? step.count : n;
    for (int i = 0; i < got; i++) {
        if (step.kind == FAKE_SPARSE_ERRORS) {
            wc[i].wr_id = 100 + (uint64_t)i;
            wc[i].status = IBV_WC_WR_FLUSH_ERR;
            wc[i].qp_num = 0x77;
            wc[i].vendor_err = 5;
        } else {
            memset(&wc[i], 0xA5, sizeof(wc[i]));
            wc[i].wr_id = 200 + (uint64_t)i;
            wc[i].status = IBV_WC_SUCCESS;
            wc[i].opcode = step.kind == FAKE_FULL_SEND ? IBV_WC_SEND : IBV_WC_RECV;
        }
    }
    return got;
}

static int fake_poll(struct ibv_cq *cq, struct efa_ah_wc *wc, uint32_t capacity, uint32_t *count,
                     struct fake_step s0, struct fake_step s1, struct fake_step s2)
{
    fake_script[0] = s0, fake_script[1] = s1, fake_script[2] = s2;
    fake_calls = 0;
    return efa_ah_poll_cq((uint64_t)(uintptr_t)cq, wc, capacity, count);
}

/* A CQ whose context's poll_cq is fake_poll_cq, as libibverbs's ibv_poll_cq finds it. */
static void fake_cq(struct ibv_context *ctx, struct ibv_cq *cq)
{
    memset(ctx, 0, sizeof(*ctx));
    memset(cq, 0, sizeof(*cq));
    ctx->ops.poll_cq = fake_poll_cq;
    cq->context = ctx;
}

/* efa_ah_poll_cq gives every ibv_poll_cq an all-0 array, whatever earlier polls left in it. */
static void every_poll_is_given_zeroed_completions(void)
{
    struct ibv_context ctx;
    struct ibv_cq cq;
    fake_cq(&ctx, &cq);
    struct efa_ah_wc wc[40];
    uint32_t count = 0;
    const struct fake_step none = {0, FAKE_FULL};
    /* 40 asked for: chunks of 16, 16 and 8, each filled by completions with every byte written. */
    CHECK_EQ(0, fake_poll(&cq, wc, 40, &count, (struct fake_step){16, FAKE_FULL}, (struct fake_step){16, FAKE_FULL},
                          (struct fake_step){8, FAKE_FULL}));
    CHECK_EQ(40, count);
    CHECK_EQ(3, fake_calls);
    /* Error completions with four fields written where every byte was written before. */
    CHECK_EQ(0, fake_poll(&cq, wc, 40, &count, (struct fake_step){3, FAKE_SPARSE_ERRORS}, none, none));
    CHECK_EQ(3, count);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(100 + i, wc[i].wr_id);
        CHECK_EQ(IBV_WC_WR_FLUSH_ERR, wc[i].status);
        CHECK_EQ(0, wc[i].opcode);
        CHECK_EQ(0, wc[i].byte_len);
        CHECK_EQ(0, wc[i].src_qp);
        CHECK_EQ(0, wc[i].wc_flags);
        CHECK_EQ(0, wc[i].pkey_index);
        CHECK_EQ(0, wc[i].dlid_path_bits);
    }
    /* A poll that fails after writing to its first entry, then one more error completion. */
    CHECK_EQ(-EINVAL, fake_poll(&cq, wc, 40, &count, (struct fake_step){0, FAKE_FAIL}, none, none));
    CHECK_EQ(0, fake_poll(&cq, wc, 40, &count, (struct fake_step){1, FAKE_SPARSE_ERRORS}, none, none));
    CHECK_EQ(1, count);
    CHECK_EQ(0, wc[0].opcode);
    CHECK_EQ(0, wc[0].byte_len);
    CHECK_EQ(0, fake_poll(&cq, wc, 40, &count, none, none, none));
    CHECK_EQ(0, count);
    CHECK_EQ(0, fake_dirty_entries);
}

/*
 * efa_ah_poll_cq_records packs each completion straight from the ibv_wc (pack_from_verbs):
 * record for record what efa_ah_cqe_pack makes of efa_ah_poll_cq's efa_ah_wc, for receives and
 * sends with every byte written (a send's receive fields stay 0), sparse error completions, and
 * a poll that fails once completions were taken; every poll is still given an all-0 array.
 */
static void records_are_the_packed_completions(void)
{
    struct ibv_context ctx;
    struct ibv_cq cq;
    fake_cq(&ctx, &cq);
    const struct fake_step none = {0, FAKE_FULL};
    const struct fake_step scripts[][3] = {
        {{16, FAKE_FULL}, {16, FAKE_FULL_SEND}, {5, FAKE_FULL}},
        {{3, FAKE_SPARSE_ERRORS}, none, none},
        {{16, FAKE_FULL_SEND}, {0, FAKE_FAIL}, none},
        {none, none, none},
    };
    fake_dirty_entries = 0;
    for (size_t k = 0; k < sizeof(scripts) / sizeof(scripts[0]); k++) {
        struct efa_ah_wc wc[40];
        uint64_t expected[40 * EFA_AH_CQE_WORDS], records[40 * EFA_AH_CQE_WORDS];
        uint32_t count = 0;
        CHECK_EQ(0, fake_poll(&cq, wc, 40, &count, scripts[k][0], scripts[k][1], scripts[k][2]));
        for (uint32_t i = 0; i < count; i++) {
            efa_ah_cqe_pack(&wc[i], 0, expected + (size_t)i * EFA_AH_CQE_WORDS);
        }
        memset(records, 0xEE, sizeof(records));
        fake_script[0] = scripts[k][0], fake_script[1] = scripts[k][1], fake_script[2] = scripts[k][2];
        fake_calls = 0;
        CHECK_EQ((int)count, efa_ah_poll_cq_records((uint64_t)(uintptr_t)&cq, records, 40));
        CHECK_EQ(0, memcmp(expected, records, (size_t)count * EFA_AH_CQE_WORDS * sizeof(uint64_t)));
    }
    /* the first script: a send's receive fields read 0, a receive's its bytes */
    uint64_t records[40 * EFA_AH_CQE_WORDS];
    fake_script[0] = (struct fake_step){1, FAKE_FULL_SEND}, fake_script[1] = none;
    fake_calls = 0;
    CHECK_EQ(1, efa_ah_poll_cq_records((uint64_t)(uintptr_t)&cq, records, 40));
    CHECK_EQ(200, records[0]);
    CHECK_EQ(0, records[1] & 0xFFFFFFFFu);          /* byte_len */
    CHECK_EQ(0, records[2] >> 24);                  /* src_qp, slid */
    CHECK_EQ(0, records[3] >> 32);                  /* pkey_index, dlid_path_bits, sl */
    fake_script[0] = (struct fake_step){1, FAKE_FULL};
    fake_calls = 0;
    CHECK_EQ(1, efa_ah_poll_cq_records((uint64_t)(uintptr_t)&cq, records, 40));
    CHECK_EQ(0xA5A5A5A5u, records[1] & 0xFFFFFFFFu);
    CHECK_EQ(0xA5u & 0xFu, records[3] >> 56);
    CHECK_EQ(0, fake_dirty_entries);
}

/* A stand-in for dlsym over an older libefa: it knows only the names in the NULL-ended list. */
static const char *const *known_symbols;

static void *fake_lookup(void *handle, const char *name)
{
    (void)handle;
    for (const char *const *s = known_symbols; *s != NULL; s++) {
        if (strcmp(*s, name) == 0) {
            return (void *)s;
        }
    }
    return NULL;
}

static void older_libefa_offers_what_it_has(void)
{
    struct efa_ah_efadv_symbols found;
    int handle;
    static const char *const before_cq[] = {"efadv_query_device", "efadv_query_ah", "efadv_create_qp_ex", NULL};
    known_symbols = before_cq;
    CHECK_EQ(EFA_AH_EFADV_LOADED | EFA_AH_EFADV_QUERY | EFA_AH_EFADV_SRD,
             efa_ah_efadv_resolve(&handle, fake_lookup, &found));
    CHECK_EQ(1, found.query_device != NULL && found.create_qp_ex != NULL);
    CHECK_EQ(1, found.create_cq == NULL && found.cq_from_ex == NULL);

    /* Half a family is none of it. */
    static const char *const half[] = {"efadv_query_device", "efadv_create_cq", NULL};
    known_symbols = half;
    CHECK_EQ(EFA_AH_EFADV_LOADED, efa_ah_efadv_resolve(&handle, fake_lookup, &found));
    CHECK_EQ(1, found.query_device == NULL && found.create_cq == NULL);

    /* Before rdma-core 63 (EFA_1.5): no depths, the rest whole. */
    static const char *const before_depth[] = {"efadv_query_device", "efadv_query_ah", "efadv_create_qp_ex",
                                               "efadv_create_cq", "efadv_cq_from_ibv_cq_ex", NULL};
    known_symbols = before_depth;
    CHECK_EQ(EFA_AH_EFADV_LOADED | EFA_AH_EFADV_QUERY | EFA_AH_EFADV_SRD | EFA_AH_EFADV_CQ,
             efa_ah_efadv_resolve(&handle, fake_lookup, &found));
    CHECK_EQ(1, found.get_max_sq_depth == NULL && found.get_max_rq_depth == NULL);

    static const char *const half_depth[] = {"efadv_query_device", "efadv_query_ah", "efadv_get_max_sq_depth", NULL};
    known_symbols = half_depth;
    CHECK_EQ(EFA_AH_EFADV_LOADED | EFA_AH_EFADV_QUERY, efa_ah_efadv_resolve(&handle, fake_lookup, &found));
    CHECK_EQ(1, found.get_max_sq_depth == NULL);

    static const char *const all[] = {"efadv_query_device", "efadv_query_ah", "efadv_create_qp_ex",
                                      "efadv_create_cq", "efadv_cq_from_ibv_cq_ex", "efadv_get_max_sq_depth",
                                      "efadv_get_max_rq_depth", NULL};
    known_symbols = all;
    CHECK_EQ(EFA_AH_EFADV_LOADED | EFA_AH_EFADV_QUERY | EFA_AH_EFADV_SRD | EFA_AH_EFADV_CQ | EFA_AH_EFADV_DEPTH,
             efa_ah_efadv_resolve(&handle, fake_lookup, &found));
    CHECK_EQ(1, found.get_max_sq_depth != NULL && found.get_max_rq_depth != NULL);
    CHECK_EQ(0, efa_ah_efadv_resolve(NULL, fake_lookup, &found));

    /* This host's answer is one of those, and stable. */
    uint32_t families = efa_ah_efadv_families();
    CHECK_EQ(families, efa_ah_efadv_families());
    CHECK_EQ(efa_ah_efadv_available(), (families & EFA_AH_EFADV_QUERY) != 0);
}

/*
 * The async fd belongs to the context: a channel makes it non-blocking and gives it back as
 * found, at close and when opening fails. A pipe stands in for the context's fd.
 */
static void async_channel_restores_the_fd_flags(void)
{
    int fds[2];
    CHECK_EQ(0, pipe(fds));
    /* The open reads the device's dev_path (empty here: a device whose node was never seen). */
    struct ibv_device fake_device;
    memset(&fake_device, 0, sizeof(fake_device));
    struct ibv_context fake;
    memset(&fake, 0, sizeof(fake));
    fake.device = &fake_device;
    fake.async_fd = fds[0];
    uint64_t context = (uint64_t)(uintptr_t)&fake;
    int before = fcntl(fds[0], F_GETFL);
    CHECK_EQ(0, before & O_NONBLOCK);

    uint64_t channel = 0;
    CHECK_EQ(0, efa_ah_async_open(context, &channel));
    CHECK_EQ(O_NONBLOCK, fcntl(fds[0], F_GETFL) & O_NONBLOCK);
    CHECK_EQ(0, efa_ah_async_close(channel));
    CHECK_EQ(before, fcntl(fds[0], F_GETFL));

    /* No fd left for the eventfd: the open fails with EMFILE and the flags stay as they were. */
    struct rlimit saved;
    CHECK_EQ(0, getrlimit(RLIMIT_NOFILE, &saved));
    struct rlimit tight = saved;
    tight.rlim_cur = (rlim_t)(fds[1] + 1);
    int spare = -1;
    CHECK_EQ(0, setrlimit(RLIMIT_NOFILE, &tight));
    /* Fill every free fd below the limit so that eventfd finds none. */
    int filled[64];
    int n = 0;
    while (n < 64 && (spare = dup(fds[0])) >= 0) {
        filled[n++] = spare;
    }
    channel = 1;
    CHECK_EQ(-EMFILE, efa_ah_async_open(context, &channel));
    CHECK_EQ(0, channel);
    CHECK_EQ(before, fcntl(fds[0], F_GETFL));
    while (n > 0) {
        close(filled[--n]);
    }
    CHECK_EQ(0, setrlimit(RLIMIT_NOFILE, &saved));
    close(fds[0]);
    close(fds[1]);
}

static void efadv_probe_is_stable(void)
{
    int first = efa_ah_efadv_available();
    CHECK_EQ(1, first == 0 || first == 1);
    CHECK_EQ(first, efa_ah_efadv_available());
}

static void gid_type_and_async_calls_check_their_arguments(void)
{
    uint32_t type = 9, count = 9, types[2], ports[2];
    uint64_t channel = 1;
    CHECK_EQ(-EINVAL, efa_ah_query_gid_type(0, 1, 0, &type));
    CHECK_EQ(-EINVAL, efa_ah_query_gid_type(1, 0, 0, &type));
    CHECK_EQ(-EINVAL, efa_ah_query_gid_type(1, 1, 0, NULL));
    CHECK_EQ(-EINVAL, efa_ah_async_open(0, &channel));
    CHECK_EQ(-EINVAL, efa_ah_async_open(1, NULL));
    CHECK_EQ(-EINVAL, efa_ah_async_wait(0, 0, types, ports, 2, &count));
    CHECK_EQ(-EINVAL, efa_ah_async_wait(1, 0, types, ports, 0, &count));
    CHECK_EQ(-EINVAL, efa_ah_async_wait(1, 0, NULL, ports, 2, &count));
    CHECK_EQ(-EINVAL, efa_ah_async_wait(1, 0, types, ports, 2, NULL));
    CHECK_EQ(-EINVAL, efa_ah_async_wake(0));
    CHECK_EQ(-EINVAL, efa_ah_async_close(0));
}

/* Every field reaches its place in the record at its extremes, and none spills into its neighbour. */
static void completion_records_hold_every_field(void)
{
    struct efa_ah_wc wc;
    memset(&wc, 0, sizeof(wc));
    wc.wr_id = UINT64_MAX - 1;
    wc.status = IBV_WC_GENERAL_ERR;
    wc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
    wc.vendor_err = UINT32_MAX;
    wc.byte_len = UINT32_MAX;
    wc.qp_num = EFA_AH_MAX_QPN;
    wc.src_qp = EFA_AH_MAX_QPN - 1;
    wc.wc_flags = IBV_WC_GRH | IBV_WC_WITH_IMM;
    wc.pkey_index = 0xFFFF;
    wc.slid = 0xFFFE;
    wc.sl = 15;
    wc.dlid_path_bits = 0xFF;
    uint64_t r[EFA_AH_CQE_WORDS];
    efa_ah_cqe_pack(&wc, 1, r);
    CHECK_EQ(1, r[0] == UINT64_MAX - 1);
    CHECK_EQ(UINT32_MAX, (uint32_t)r[1]);
    CHECK_EQ(IBV_WC_GENERAL_ERR, (int)(r[1] >> 32 & 0xFF));
    CHECK_EQ(IBV_WC_RECV_RDMA_WITH_IMM, (int)(r[1] >> 40 & 0xFF));
    CHECK_EQ(IBV_WC_GRH | IBV_WC_WITH_IMM, (int)(r[1] >> 48));
    CHECK_EQ(EFA_AH_MAX_QPN, (uint32_t)(r[2] & 0xFFFFFF));
    CHECK_EQ(EFA_AH_MAX_QPN - 1, (uint32_t)(r[2] >> 24 & 0xFFFFFF));
    CHECK_EQ(0xFFFE, (int)(r[2] >> 48));
    CHECK_EQ(UINT32_MAX, (uint32_t)r[3]);
    CHECK_EQ(0xFFFF, (int)(r[3] >> 32 & 0xFFFF));
    CHECK_EQ(0xFF, (int)(r[3] >> 48 & 0xFF));
    CHECK_EQ(15, (int)(r[3] >> 56 & 0xF));
    CHECK_EQ(1, (r[3] & EFA_AH_CQE_SGID_VALID) != 0);
    CHECK_EQ(0, (int)(r[3] >> 60 & 0x7));

    /* Zeros stay zeros: nothing set leaks into a field. */
    memset(&wc, 0, sizeof(wc));
    efa_ah_cqe_pack(&wc, 0, r);
    CHECK_EQ(1, r[0] == 0 && r[1] == 0 && r[2] == 0 && r[3] == 0);

    /* Out of range: capacity above 64, or no records. */
    CHECK_EQ(-EINVAL, efa_ah_poll_cq_records(1, r, 65));
    CHECK_EQ(-EINVAL, efa_ah_poll_cq_records(1, NULL, 1));
    CHECK_EQ(-EINVAL, efa_ah_poll_cq_records(0, r, 1));
}

int main(void)
{
    null_device_list_means_no_devices();
    real_device_list_never_fails();
    zero_handles_and_null_pointers_are_einval();
    datagram_calls_check_their_arguments();
    ranges_outside_the_mr_are_einval();
    completions_convert_both_ways();
    out_of_range_attributes_are_einval();
    attributes_round_trip();
    errno_mapping();
    mtu_bytes();
    efadv_probe_is_stable();
    send_completions_have_no_receive_fields();
    every_poll_is_given_zeroed_completions();
    records_are_the_packed_completions();
    older_libefa_offers_what_it_has();
    async_channel_restores_the_fd_flags();
    gid_type_and_async_calls_check_their_arguments();
    completion_records_hold_every_field();
    if (failures != 0) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("all checks passed\n");
    return 0;
}
