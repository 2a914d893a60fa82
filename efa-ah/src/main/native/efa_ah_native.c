/*
 * efa_ah_native: see efa_ah_native.h for the contract.
 */
#define _GNU_SOURCE
#include "efa_ah_native_internal.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

_Static_assert(sizeof(struct ibv_grh) == EFA_AH_GRH_LEN, "GRH is 40 bytes on the wire");
_Static_assert(EFA_AH_WC_GRH == IBV_WC_GRH, "EFA_AH_WC_GRH must equal IBV_WC_GRH");
/* The Java binding reads struct efa_ah_wc as plain memory at these offsets: keep them fixed. */
_Static_assert(sizeof(struct efa_ah_wc) == 56, "efa_ah_wc is 56 bytes");
_Static_assert(offsetof(struct efa_ah_wc, status) == 8, "efa_ah_wc.status moved");
_Static_assert(offsetof(struct efa_ah_wc, dlid_path_bits) == 48, "efa_ah_wc.dlid_path_bits moved");

int efa_ah_error_from_rc(int rc, int saved_errno)
{
    if (rc > 0) {
        return -rc;
    }
    if (rc == -1 || rc == 0) {
        /* rc == 0 only reaches here for calls that signal failure by a NULL result. */
        return saved_errno > 0 ? -saved_errno : -EIO;
    }
    return rc;
}

/* The negative errno after a call that returned NULL; errno must be read before anything else. */
static int error_from_null(int saved_errno)
{
    return efa_ah_error_from_rc(0, saved_errno);
}

uint32_t efa_ah_mtu_bytes(uint32_t ibv_mtu)
{
    switch (ibv_mtu) {
    case IBV_MTU_256:
        return 256;
    case IBV_MTU_512:
        return 512;
    case IBV_MTU_1024:
        return 1024;
    case IBV_MTU_2048:
        return 2048;
    case IBV_MTU_4096:
        return 4096;
    default:
        return 0;
    }
}

static struct ibv_context *as_context(uint64_t handle)
{
    return (struct ibv_context *)(uintptr_t)handle;
}

static struct ibv_pd *as_pd(uint64_t handle)
{
    return (struct ibv_pd *)(uintptr_t)handle;
}

static struct ibv_ah *as_ah(uint64_t handle)
{
    return (struct ibv_ah *)(uintptr_t)handle;
}

static struct ibv_cq *as_cq(uint64_t handle)
{
    return (struct ibv_cq *)(uintptr_t)handle;
}

static struct ibv_mr *as_mr(uint64_t handle)
{
    return (struct ibv_mr *)(uintptr_t)handle;
}

static struct ibv_qp *as_qp(uint64_t handle)
{
    return (struct ibv_qp *)(uintptr_t)handle;
}

static void copy_name(char *dst, const char *src)
{
    /* strncpy would not terminate an over-long name; sysfs names fit, but never trust that. */
    size_t n = src == NULL ? 0 : strnlen(src, EFA_AH_NAME_MAX - 1);
    if (n > 0) {
        memcpy(dst, src, n);
    }
    dst[n] = '\0';
}

int efa_ah_names_from_list(struct ibv_device **list, int num, int list_errno, char *names,
                           uint32_t capacity, uint32_t *count)
{
    if (count == NULL || (names == NULL && capacity > 0)) {
        return -EINVAL;
    }
    *count = 0;
    if (list == NULL) {
        /*
         * With no RDMA in the kernel (no /sys/class/infiniband) libibverbs returns NULL rather
         * than an empty list: that is "no devices". Only running out of memory is an error.
         */
        return list_errno == ENOMEM ? -ENOMEM : 0;
    }
    uint32_t present = num > 0 ? (uint32_t)num : 0;
    for (uint32_t i = 0; i < present && i < capacity; i++) {
        copy_name(names + (size_t)i * EFA_AH_NAME_MAX, ibv_get_device_name(list[i]));
    }
    *count = present;
    return 0;
}

int efa_ah_device_list(char *names, uint32_t capacity, uint32_t *count)
{
    if (count == NULL || (names == NULL && capacity > 0)) {
        return -EINVAL;
    }
    int num = 0;
    errno = 0;
    struct ibv_device **list = ibv_get_device_list(&num);
    int saved = errno;
    int rc = efa_ah_names_from_list(list, num, saved, names, capacity, count);
    if (list != NULL) {
        ibv_free_device_list(list);
    }
    return rc;
}

int efa_ah_open_device(const char *name, uint64_t *context)
{
    if (name == NULL || context == NULL) {
        return -EINVAL;
    }
    *context = 0;
    int num = 0;
    errno = 0;
    struct ibv_device **list = ibv_get_device_list(&num);
    if (list == NULL) {
        return errno == ENOMEM ? -ENOMEM : -ENODEV;
    }
    int rc = -ENODEV;
    for (int i = 0; i < num; i++) {
        const char *candidate = ibv_get_device_name(list[i]);
        if (candidate != NULL && strcmp(candidate, name) == 0) {
            errno = 0;
            struct ibv_context *ctx = ibv_open_device(list[i]);
            if (ctx == NULL) {
                rc = error_from_null(errno);
            } else {
                /* An open context holds its own reference on the device; the list can go. */
                *context = (uint64_t)(uintptr_t)ctx;
                rc = 0;
            }
            break;
        }
    }
    ibv_free_device_list(list);
    return rc;
}

int efa_ah_close_device(uint64_t context)
{
    if (context == 0) {
        return -EINVAL;
    }
    errno = 0;
    int rc = ibv_close_device(as_context(context));
    return rc == 0 ? 0 : efa_ah_error_from_rc(rc, errno);
}

int efa_ah_query_device(uint64_t context, struct efa_ah_device_attr *attr)
{
    if (context == 0 || attr == NULL) {
        return -EINVAL;
    }
    memset(attr, 0, sizeof(*attr));
    struct ibv_context *ctx = as_context(context);
    struct ibv_device_attr verbs_attr;
    memset(&verbs_attr, 0, sizeof(verbs_attr));
    errno = 0;
    int rc = ibv_query_device(ctx, &verbs_attr);
    if (rc != 0) {
        return efa_ah_error_from_rc(rc, errno);
    }
    copy_name(attr->name, ibv_get_device_name(ctx->device));
    attr->vendor_id = verbs_attr.vendor_id;
    attr->vendor_part_id = verbs_attr.vendor_part_id;
    attr->max_ah = verbs_attr.max_ah;
    attr->max_pd = verbs_attr.max_pd;
    attr->phys_port_cnt = verbs_attr.phys_port_cnt;
    attr->transport_type = ctx->device->transport_type;
    copy_name(attr->fw_ver, verbs_attr.fw_ver);
    attr->node_guid = be64toh(verbs_attr.node_guid);
    attr->sys_image_guid = be64toh(verbs_attr.sys_image_guid);
    attr->max_mr_size = verbs_attr.max_mr_size;
    attr->page_size_cap = verbs_attr.page_size_cap;
    attr->hw_ver = verbs_attr.hw_ver;
    attr->max_qp = verbs_attr.max_qp;
    attr->max_qp_wr = verbs_attr.max_qp_wr;
    attr->device_cap_flags = verbs_attr.device_cap_flags;
    attr->max_sge = verbs_attr.max_sge;
    attr->max_sge_rd = verbs_attr.max_sge_rd;
    attr->max_cq = verbs_attr.max_cq;
    attr->max_cqe = verbs_attr.max_cqe;
    attr->max_mr = verbs_attr.max_mr;
    attr->max_qp_rd_atom = verbs_attr.max_qp_rd_atom;
    attr->max_ee_rd_atom = verbs_attr.max_ee_rd_atom;
    attr->max_res_rd_atom = verbs_attr.max_res_rd_atom;
    attr->max_qp_init_rd_atom = verbs_attr.max_qp_init_rd_atom;
    attr->max_ee_init_rd_atom = verbs_attr.max_ee_init_rd_atom;
    attr->atomic_cap = (uint32_t)verbs_attr.atomic_cap;
    attr->max_ee = verbs_attr.max_ee;
    attr->max_rdd = verbs_attr.max_rdd;
    attr->max_mw = verbs_attr.max_mw;
    attr->max_raw_ipv6_qp = verbs_attr.max_raw_ipv6_qp;
    attr->max_raw_ethy_qp = verbs_attr.max_raw_ethy_qp;
    attr->max_mcast_grp = verbs_attr.max_mcast_grp;
    attr->max_mcast_qp_attach = verbs_attr.max_mcast_qp_attach;
    attr->max_total_mcast_qp_attach = verbs_attr.max_total_mcast_qp_attach;
    attr->max_fmr = verbs_attr.max_fmr;
    attr->max_map_per_fmr = verbs_attr.max_map_per_fmr;
    attr->max_srq = verbs_attr.max_srq;
    attr->max_srq_wr = verbs_attr.max_srq_wr;
    attr->max_srq_sge = verbs_attr.max_srq_sge;
    attr->max_pkeys = verbs_attr.max_pkeys;
    attr->local_ca_ack_delay = verbs_attr.local_ca_ack_delay;

    if (efa_ah_efadv_available()) {
        struct efa_ah_efadv_device_attr efa;
        memset(&efa, 0, sizeof(efa));
        /* Any failure (EOPNOTSUPP from a non-EFA context above all) just means "not EFA". */
        if (efadv_query_device_ptr(ctx, &efa, (uint32_t)sizeof(efa)) == 0) {
            attr->is_efa = 1;
            attr->efa_max_sq_wr = efa.max_sq_wr;
            attr->efa_max_rq_wr = efa.max_rq_wr;
            attr->efa_max_sq_sge = efa.max_sq_sge;
            attr->efa_max_rq_sge = efa.max_rq_sge;
            attr->efa_inline_buf_size = efa.inline_buf_size;
            attr->efa_inline_buf_size_ex = efa.inline_buf_size_ex;
            attr->efa_device_caps = efa.device_caps;
            attr->efa_max_rdma_size = efa.max_rdma_size;
        }
    }
    return 0;
}

int efa_ah_query_port(uint64_t context, uint32_t port_num, struct efa_ah_port_attr *attr)
{
    if (context == 0 || attr == NULL || port_num < 1 || port_num > UINT8_MAX) {
        return -EINVAL;
    }
    memset(attr, 0, sizeof(*attr));
    struct ibv_port_attr verbs_attr;
    memset(&verbs_attr, 0, sizeof(verbs_attr));
    errno = 0;
    int rc = ibv_query_port(as_context(context), (uint8_t)port_num, &verbs_attr);
    if (rc != 0) {
        return efa_ah_error_from_rc(rc, errno);
    }
    attr->state = (uint32_t)verbs_attr.state;
    attr->link_layer = verbs_attr.link_layer;
    attr->gid_tbl_len = verbs_attr.gid_tbl_len;
    attr->active_mtu = efa_ah_mtu_bytes((uint32_t)verbs_attr.active_mtu);
    attr->max_mtu = efa_ah_mtu_bytes((uint32_t)verbs_attr.max_mtu);
    attr->lid = verbs_attr.lid;
    attr->port_cap_flags = verbs_attr.port_cap_flags;
    attr->max_msg_sz = verbs_attr.max_msg_sz;
    attr->port_cap_flags2 = verbs_attr.port_cap_flags2;
    attr->bad_pkey_cntr = verbs_attr.bad_pkey_cntr;
    attr->qkey_viol_cntr = verbs_attr.qkey_viol_cntr;
    attr->pkey_tbl_len = verbs_attr.pkey_tbl_len;
    attr->sm_lid = verbs_attr.sm_lid;
    attr->lmc = verbs_attr.lmc;
    attr->max_vl_num = verbs_attr.max_vl_num;
    attr->sm_sl = verbs_attr.sm_sl;
    attr->subnet_timeout = verbs_attr.subnet_timeout;
    attr->init_type_reply = verbs_attr.init_type_reply;
    attr->active_width = verbs_attr.active_width;
    attr->active_speed = verbs_attr.active_speed;
#ifdef EFA_AH_HAVE_ACTIVE_SPEED_EX
    /* As ibv_devinfo: the extended speed where the kernel set it (XDR and beyond need it). */
    if (verbs_attr.active_speed_ex != 0) {
        attr->active_speed = verbs_attr.active_speed_ex;
    }
#endif
    attr->phys_state = verbs_attr.phys_state;
    return 0;
}

int efa_ah_query_gid(uint64_t context, uint32_t port_num, uint32_t index, uint8_t *gid)
{
    if (context == 0 || gid == NULL || port_num < 1 || port_num > UINT8_MAX || index > INT32_MAX) {
        return -EINVAL;
    }
    union ibv_gid verbs_gid;
    memset(&verbs_gid, 0, sizeof(verbs_gid));
    errno = 0;
    int rc = ibv_query_gid(as_context(context), (uint8_t)port_num, (int)index, &verbs_gid);
    if (rc != 0) {
        return efa_ah_error_from_rc(rc, errno);
    }
    memcpy(gid, verbs_gid.raw, EFA_AH_GID_LEN);
    return 0;
}

int efa_ah_alloc_pd(uint64_t context, uint64_t *pd)
{
    if (context == 0 || pd == NULL) {
        return -EINVAL;
    }
    *pd = 0;
    errno = 0;
    struct ibv_pd *created = ibv_alloc_pd(as_context(context));
    if (created == NULL) {
        return error_from_null(errno);
    }
    *pd = (uint64_t)(uintptr_t)created;
    return 0;
}

int efa_ah_dealloc_pd(uint64_t pd)
{
    if (pd == 0) {
        return -EINVAL;
    }
    errno = 0;
    int rc = ibv_dealloc_pd(as_pd(pd));
    return rc == 0 ? 0 : efa_ah_error_from_rc(rc, errno);
}

int efa_ah_attr_to_verbs(const struct efa_ah_ah_attr *in, struct ibv_ah_attr *out)
{
    if (in == NULL || out == NULL) {
        return -EINVAL;
    }
    if (in->flow_label > 0xFFFFFu || in->sgid_index > UINT8_MAX || in->hop_limit > UINT8_MAX
        || in->traffic_class > UINT8_MAX || in->dlid > UINT16_MAX || in->sl > 15u
        || in->src_path_bits > 0x7Fu || in->static_rate > UINT8_MAX || in->is_global > 1u
        || in->port_num < 1u || in->port_num > UINT8_MAX) {
        return -EINVAL;
    }
    memset(out, 0, sizeof(*out));
    memcpy(out->grh.dgid.raw, in->dgid, EFA_AH_GID_LEN);
    out->grh.flow_label = in->flow_label;
    out->grh.sgid_index = (uint8_t)in->sgid_index;
    out->grh.hop_limit = (uint8_t)in->hop_limit;
    out->grh.traffic_class = (uint8_t)in->traffic_class;
    out->dlid = (uint16_t)in->dlid;
    out->sl = (uint8_t)in->sl;
    out->src_path_bits = (uint8_t)in->src_path_bits;
    out->static_rate = (uint8_t)in->static_rate;
    out->is_global = (uint8_t)in->is_global;
    out->port_num = (uint8_t)in->port_num;
    return 0;
}

void efa_ah_attr_from_verbs(const struct ibv_ah_attr *in, struct efa_ah_ah_attr *out)
{
    memset(out, 0, sizeof(*out));
    memcpy(out->dgid, in->grh.dgid.raw, EFA_AH_GID_LEN);
    out->flow_label = in->grh.flow_label;
    out->sgid_index = in->grh.sgid_index;
    out->hop_limit = in->grh.hop_limit;
    out->traffic_class = in->grh.traffic_class;
    out->dlid = in->dlid;
    out->sl = in->sl;
    out->src_path_bits = in->src_path_bits;
    out->static_rate = in->static_rate;
    out->is_global = in->is_global;
    out->port_num = in->port_num;
}

int efa_ah_create_ah(uint64_t pd, const struct efa_ah_ah_attr *attr, uint64_t *ah, int32_t *ahn)
{
    if (pd == 0 || attr == NULL || ah == NULL || ahn == NULL) {
        return -EINVAL;
    }
    *ah = 0;
    *ahn = EFA_AH_NO_AHN;
    struct ibv_ah_attr verbs_attr;
    int rc = efa_ah_attr_to_verbs(attr, &verbs_attr);
    if (rc != 0) {
        return rc;
    }
    errno = 0;
    struct ibv_ah *created = ibv_create_ah(as_pd(pd), &verbs_attr);
    if (created == NULL) {
        return error_from_null(errno);
    }
    if (efa_ah_efadv_available()) {
        struct efa_ah_efadv_ah_attr efa;
        memset(&efa, 0, sizeof(efa));
        rc = efadv_query_ah_ptr(created, &efa, (uint32_t)sizeof(efa));
        if (rc == 0) {
            *ahn = efa.ahn;
        } else if (rc != EOPNOTSUPP && rc != -EOPNOTSUPP) {
            /* An EFA device that cannot name its AH: give the AH back rather than hand out half. */
            int query_errno = errno;
            (void)ibv_destroy_ah(created);
            return efa_ah_error_from_rc(rc, query_errno);
        }
    }
    *ah = (uint64_t)(uintptr_t)created;
    return 0;
}

int efa_ah_destroy_ah(uint64_t ah)
{
    if (ah == 0) {
        return -EINVAL;
    }
    errno = 0;
    int rc = ibv_destroy_ah(as_ah(ah));
    return rc == 0 ? 0 : efa_ah_error_from_rc(rc, errno);
}

int efa_ah_create_cq(uint64_t context, uint32_t cqe, uint64_t *cq)
{
    if (context == 0 || cq == NULL || cqe < 1 || cqe > EFA_AH_MAX_CQE) {
        return -EINVAL;
    }
    *cq = 0;
    errno = 0;
    /* Polled, never waited on: no completion channel is needed. */
    struct ibv_cq *created = ibv_create_cq(as_context(context), (int)cqe, NULL, NULL, 0);
    if (created == NULL) {
        return error_from_null(errno);
    }
    *cq = (uint64_t)(uintptr_t)created;
    return 0;
}

int efa_ah_destroy_cq(uint64_t cq)
{
    if (cq == 0) {
        return -EINVAL;
    }
    uint64_t channel = efa_ah_channel_release_cq(cq);
    errno = 0;
    int rc = ibv_destroy_cq(as_cq(cq));
    if (rc != 0) {
        return efa_ah_error_from_rc(rc, errno);
    }
    efa_ah_channel_after_destroy_cq(channel);
    return 0;
}

int efa_ah_reg_mr(uint64_t pd, uint64_t addr, uint64_t length, uint64_t *mr)
{
    if (pd == 0 || addr == 0 || mr == NULL || length == 0 || length > SIZE_MAX || addr > UINTPTR_MAX - length) {
        return -EINVAL;
    }
    *mr = 0;
    errno = 0;
    struct ibv_mr *created = ibv_reg_mr(as_pd(pd), (void *)(uintptr_t)addr, (size_t)length, IBV_ACCESS_LOCAL_WRITE);
    if (created == NULL) {
        return error_from_null(errno);
    }
    *mr = (uint64_t)(uintptr_t)created;
    return 0;
}

int efa_ah_dereg_mr(uint64_t mr)
{
    if (mr == 0) {
        return -EINVAL;
    }
    errno = 0;
    int rc = ibv_dereg_mr(as_mr(mr));
    return rc == 0 ? 0 : efa_ah_error_from_rc(rc, errno);
}

int efa_ah_create_ud_qp(uint64_t pd, uint64_t send_cq, uint64_t recv_cq, uint32_t max_send_wr,
                        uint32_t max_recv_wr, uint64_t *qp, uint32_t *qpn)
{
    if (pd == 0 || send_cq == 0 || recv_cq == 0 || qp == NULL || qpn == NULL || max_send_wr < 1
        || max_send_wr > EFA_AH_MAX_QP_WR || max_recv_wr < 1 || max_recv_wr > EFA_AH_MAX_QP_WR) {
        return -EINVAL;
    }
    *qp = 0;
    *qpn = 0;
    struct ibv_qp_init_attr init;
    memset(&init, 0, sizeof(init));
    init.send_cq = as_cq(send_cq);
    init.recv_cq = as_cq(recv_cq);
    init.cap.max_send_wr = max_send_wr;
    init.cap.max_recv_wr = max_recv_wr;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    init.qp_type = IBV_QPT_UD;
    /* sq_sig_all stays 0: each send asks for its completion, so the rule lives in one place. */
    errno = 0;
    struct ibv_qp *created = ibv_create_qp(as_pd(pd), &init);
    if (created == NULL) {
        return error_from_null(errno);
    }
    *qp = (uint64_t)(uintptr_t)created;
    *qpn = created->qp_num;
    return 0;
}

int efa_ah_activate_ud_qp(uint64_t qp, uint32_t port_num, uint32_t pkey_index, uint32_t qkey)
{
    return efa_ah_qp_to_rts(qp, port_num, pkey_index, qkey, EFA_AH_RNR_RETRY_DEFAULT);
}

int efa_ah_destroy_qp(uint64_t qp)
{
    if (qp == 0) {
        return -EINVAL;
    }
    errno = 0;
    int rc = ibv_destroy_qp(as_qp(qp));
    return rc == 0 ? 0 : efa_ah_error_from_rc(rc, errno);
}

int efa_ah_mr_range(uint64_t mr, uint64_t offset, uint64_t length, uint64_t *addr)
{
    if (mr == 0 || addr == NULL) {
        return -EINVAL;
    }
    const struct ibv_mr *m = as_mr(mr);
    /* Written so that no sum can wrap: offset alone first, then what is left after it. */
    if (offset > m->length || length > m->length - offset) {
        return -EINVAL;
    }
    *addr = (uint64_t)(uintptr_t)m->addr + offset;
    return 0;
}

/*
 * One SGE for length bytes, or none for an empty message: some devices read an SGE length of 0
 * as 2 GiB (the InfiniBand encoding), so a zero-length SGE is never handed to them.
 */
static int one_sge(uint64_t mr, uint64_t offset, uint32_t length, struct ibv_sge *sge, int *num_sge)
{
    uint64_t addr = 0;
    int rc = efa_ah_mr_range(mr, offset, length, &addr);
    if (rc != 0) {
        return rc;
    }
    memset(sge, 0, sizeof(*sge));
    sge->addr = addr;
    sge->length = length;
    sge->lkey = as_mr(mr)->lkey;
    *num_sge = length == 0 ? 0 : 1;
    return 0;
}

int efa_ah_post_send(uint64_t qp, uint64_t ah, uint32_t remote_qpn, uint32_t remote_qkey, uint64_t mr,
                     uint64_t offset, uint32_t length, uint64_t wr_id)
{
    if (qp == 0 || ah == 0 || remote_qpn > EFA_AH_MAX_QPN) {
        return -EINVAL;
    }
    struct ibv_sge sge;
    int num_sge = 0;
    int rc = one_sge(mr, offset, length, &sge, &num_sge);
    if (rc != 0) {
        return rc;
    }
    struct ibv_send_wr wr;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = num_sge;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.ud.ah = as_ah(ah);
    wr.wr.ud.remote_qpn = remote_qpn;
    wr.wr.ud.remote_qkey = remote_qkey;
    struct ibv_send_wr *bad = NULL;
    errno = 0;
    /* Returns a positive errno (not -1): efa_ah_error_from_rc takes both. */
    rc = ibv_post_send(as_qp(qp), &wr, &bad);
    return rc == 0 ? 0 : efa_ah_error_from_rc(rc, errno);
}

int efa_ah_post_recv(uint64_t qp, uint64_t mr, uint64_t offset, uint32_t length, uint64_t wr_id)
{
    /* EFA takes a slot for a receive with no SGE but never completes it (efa_post_recv writes no descriptor). */
    if (qp == 0 || length == 0) {
        return -EINVAL;
    }
    struct ibv_sge sge;
    int num_sge = 0;
    int rc = one_sge(mr, offset, length, &sge, &num_sge);
    if (rc != 0) {
        return rc;
    }
    struct ibv_recv_wr wr;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = num_sge;
    struct ibv_recv_wr *bad = NULL;
    errno = 0;
    rc = ibv_post_recv(as_qp(qp), &wr, &bad);
    return rc == 0 ? 0 : efa_ah_error_from_rc(rc, errno);
}

void efa_ah_wc_from_verbs(const struct ibv_wc *in, struct efa_ah_wc *out)
{
    memset(out, 0, sizeof(*out));
    out->wr_id = in->wr_id;
    out->status = (uint32_t)in->status;
    out->opcode = (uint32_t)in->opcode;
    out->vendor_err = in->vendor_err;
    out->qp_num = in->qp_num;
    out->wc_flags = in->wc_flags;
    /*
     * The rest describes a received message: providers leave it unwritten for sends (EFA's
     * efa_process_cqe sets none of it for a send queue completion), so it stays 0 there.
     */
    if ((in->opcode & IBV_WC_RECV) != 0) {
        out->byte_len = in->byte_len;
        out->src_qp = in->src_qp;
        out->pkey_index = in->pkey_index;
        out->slid = in->slid;
        out->sl = in->sl;
        out->dlid_path_bits = in->dlid_path_bits;
    }
}

int efa_ah_wc_to_verbs(const struct efa_ah_wc *in, struct ibv_wc *out)
{
    if (in == NULL || out == NULL) {
        return -EINVAL;
    }
    if (in->pkey_index > UINT16_MAX || in->slid > UINT16_MAX || in->sl > 15u || in->dlid_path_bits > UINT8_MAX) {
        return -EINVAL;
    }
    memset(out, 0, sizeof(*out));
    out->wr_id = in->wr_id;
    out->status = (enum ibv_wc_status)in->status;
    out->opcode = (enum ibv_wc_opcode)in->opcode;
    out->vendor_err = in->vendor_err;
    out->byte_len = in->byte_len;
    out->qp_num = in->qp_num;
    out->src_qp = in->src_qp;
    out->wc_flags = in->wc_flags;
    out->pkey_index = (uint16_t)in->pkey_index;
    out->slid = (uint16_t)in->slid;
    out->sl = (uint8_t)in->sl;
    out->dlid_path_bits = (uint8_t)in->dlid_path_bits;
    return 0;
}

/* Completions taken from the device per ibv_poll_cq call. */
#define POLL_CHUNK 16

/*
 * What a provider leaves unwritten in a completion it returns must read as 0, not as what an
 * earlier poll left: EFA's efa_process_cqe sets neither pkey_index nor dlid_path_bits of a
 * receive, nor any receive field of a send, and an error completion's opcode is not defined. So
 * every ibv_poll_cq here is given an array that is all 0. The array is the thread's own and kept
 * so: zeroed once (.tbss), then after each poll the entries it could have written are zeroed
 * again, the n it returned and the one after them (a provider reads the CQ before it writes an
 * entry: efa_poll_sub_cq returns ENOENT or EINVAL before), and after a failed poll all it was
 * given. An empty poll, a spinning wait's usual step, so clears one entry, not POLL_CHUNK: 13.4-14 ns
 * a poll over the EFA double, 28-34 ns with the memset (efa-ah/src/bench/native/empty_poll.c). The
 * call never yields, so the virtual threads of one carrier cannot share the array at once.
 */
static __thread struct ibv_wc poll_scratch[POLL_CHUNK];

/*
 * efa_ah_cqe_pack(efa_ah_wc_from_verbs(in), no GID) in one step, for the records the Java side
 * reads: a send CQ's reap took three passes over each completion (the verbs array, an efa_ah_wc
 * array, the records), 7.8-8.2 ns a completion through the stub, 6.0-6.1 in one, against 3.5 for
 * the double's ibv_poll_cq alone (efa-ah/src/bench/native/full_poll.c). The receive fields are read
 * only for a receive, as efa_ah_wc_from_verbs reads them; records_are_the_packed_completions
 * (test_efa_ah_native.c) holds the two to the same records.
 */
static void pack_from_verbs(const struct ibv_wc *in, uint64_t *record)
{
    uint64_t byte_len = 0, src_qp = 0, slid = 0, pkey_index = 0, dlid_path_bits = 0, sl = 0;
    if ((in->opcode & IBV_WC_RECV) != 0) {
        byte_len = in->byte_len;
        src_qp = in->src_qp & EFA_AH_MAX_QPN;
        slid = in->slid & 0xFFFFu;
        pkey_index = in->pkey_index & 0xFFFFu;
        dlid_path_bits = in->dlid_path_bits & 0xFFu;
        sl = in->sl & 0xFu;
    }
    record[0] = in->wr_id;
    record[1] = byte_len | (uint64_t)((uint32_t)in->status & 0xFFu) << 32
                | (uint64_t)((uint32_t)in->opcode & 0xFFu) << 40 | (uint64_t)(in->wc_flags & 0xFFFFu) << 48;
    record[2] = (uint64_t)(in->qp_num & EFA_AH_MAX_QPN) | src_qp << 24 | slid << 48;
    record[3] = (uint64_t)in->vendor_err | pkey_index << 32 | dlid_path_bits << 48 | sl << 56;
}

/* ibv_poll_cq into wc or, when wc is NULL, straight into records (EFA_AH_CQE_WORDS each). */
static int poll_verbs(uint64_t cq, uint32_t capacity, struct efa_ah_wc *wc, uint64_t *records, uint32_t *count)
{
    *count = 0;
    struct ibv_wc *verbs = poll_scratch;
    uint32_t filled = 0;
    while (filled < capacity) {
        uint32_t want = capacity - filled < POLL_CHUNK ? capacity - filled : POLL_CHUNK;
        errno = 0;
        int n = ibv_poll_cq(as_cq(cq), (int)want, verbs);
        if (n < 0) {
            memset(verbs, 0, want * sizeof(verbs[0]));
            if (filled > 0) {
                /* Completions already taken off the CQ must reach the caller; the error recurs next poll. */
                break;
            }
            return efa_ah_error_from_rc(n, errno);
        }
        for (int i = 0; i < n; i++) {
            if (wc != NULL) {
                efa_ah_wc_from_verbs(&verbs[i], &wc[filled + (uint32_t)i]);
            } else {
                pack_from_verbs(&verbs[i], records + (size_t)(filled + (uint32_t)i) * EFA_AH_CQE_WORDS);
            }
        }
        uint32_t touched = (uint32_t)n < want ? (uint32_t)n + 1 : want;
        memset(verbs, 0, touched * sizeof(verbs[0]));
        filled += (uint32_t)n;
        if ((uint32_t)n < want) {
            break;
        }
    }
    *count = filled;
    return 0;
}

int efa_ah_poll_cq(uint64_t cq, struct efa_ah_wc *wc, uint32_t capacity, uint32_t *count)
{
    if (cq == 0 || count == NULL || (wc == NULL && capacity > 0)) {
        return -EINVAL;
    }
    return poll_verbs(cq, capacity, wc, NULL, count);
}

void efa_ah_cqe_pack(const struct efa_ah_wc *wc, int sgid_valid, uint64_t *record)
{
    record[0] = wc->wr_id;
    record[1] = (uint64_t)wc->byte_len | (uint64_t)(wc->status & 0xFFu) << 32
                | (uint64_t)(wc->opcode & 0xFFu) << 40 | (uint64_t)(wc->wc_flags & 0xFFFFu) << 48;
    record[2] = (uint64_t)(wc->qp_num & EFA_AH_MAX_QPN) | (uint64_t)(wc->src_qp & EFA_AH_MAX_QPN) << 24
                | (uint64_t)(wc->slid & 0xFFFFu) << 48;
    record[3] = (uint64_t)wc->vendor_err | (uint64_t)(wc->pkey_index & 0xFFFFu) << 32
                | (uint64_t)(wc->dlid_path_bits & 0xFFu) << 48 | (uint64_t)(wc->sl & 0xFu) << 56
                | (sgid_valid ? EFA_AH_CQE_SGID_VALID : 0);
}

int efa_ah_poll_cq_records(uint64_t cq, uint64_t *records, uint32_t capacity)
{
    if (cq == 0 || capacity > 64 || (records == NULL && capacity > 0)) {
        return -EINVAL;
    }
    uint32_t n = 0;
    int rc = poll_verbs(cq, capacity, NULL, records, &n);
    return rc != 0 ? rc : (int)n;
}

int efa_ah_init_ah_from_wc(uint64_t context, uint32_t port_num, const struct efa_ah_wc *wc, uint64_t mr,
                           uint64_t grh_offset, struct efa_ah_ah_attr *attr)
{
    if (context == 0 || wc == NULL || attr == NULL || port_num < 1 || port_num > UINT8_MAX) {
        return -EINVAL;
    }
    uint64_t grh_addr = 0;
    int rc = efa_ah_mr_range(mr, grh_offset, EFA_AH_GRH_LEN, &grh_addr);
    if (rc != 0) {
        return rc;
    }
    struct ibv_wc verbs_wc;
    rc = efa_ah_wc_to_verbs(wc, &verbs_wc);
    if (rc != 0) {
        return rc;
    }
    memset(attr, 0, sizeof(*attr));
    /* libibverbs only reads the GRH; the cast drops a const its prototype lacks. */
    struct ibv_grh *grh = (struct ibv_grh *)(uintptr_t)grh_addr;
    struct ibv_ah_attr verbs_attr;
    memset(&verbs_attr, 0, sizeof(verbs_attr));
    errno = 0;
    rc = ibv_init_ah_from_wc(as_context(context), (uint8_t)port_num, &verbs_wc, grh, &verbs_attr);
    if (rc != 0) {
        return efa_ah_error_from_rc(rc, errno);
    }
    efa_ah_attr_from_verbs(&verbs_attr, attr);
    return 0;
}
