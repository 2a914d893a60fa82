/*
 * libefa.so.1 of the EFA double (see efa_double.h): the efadv entry points the JNI library
 * dlopen()s, with libefa's argument checks (providers/efa/verbs.c); the objects are
 * libibverbs' double's. Errors: efadv_query_device and efadv_query_ah return a positive errno;
 * the creates return NULL with errno set.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "efa_double.h"

/* vext_field_avail: inlen reaches the end of the field. */
#define FIELD_END(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

static int cleared(const void *p, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        if (((const unsigned char *)p)[i] != 0) {
            return 0;
        }
    }
    return 1;
}

/* efadv_query_device: EOPNOTSUPP off EFA; EINVAL when inlen stops before inline_buf_size_ex (16). */
int efadv_query_device(struct ibv_context *ctx, struct efadv_device_attr *attr, uint32_t inlen)
{
    if (!efa_double_is_efa(ctx)) {
        return EOPNOTSUPP;
    }
    if (inlen < FIELD_END(struct efadv_device_attr, inline_buf_size) + 2) {
        return EINVAL;
    }
    struct efadv_device_attr full;
    memset(&full, 0, sizeof(full));
    efa_double_device_attr(ctx, &full);
    if (inlen < FIELD_END(struct efadv_device_attr, device_caps)) {
        full.device_caps = 0;
    }
    memset(attr, 0, inlen);
    memcpy(attr, &full, inlen < sizeof(full) ? inlen : sizeof(full));
    return 0;
}

/* efadv_query_ah: the AHN (16 bits); EINVAL when inlen stops before it. */
int efadv_query_ah(struct ibv_ah *ah, struct efadv_ah_attr *attr, uint32_t inlen)
{
    if (!efa_double_is_efa(ah->context)) {
        return EOPNOTSUPP;
    }
    if (inlen < FIELD_END(struct efadv_ah_attr, ahn)) {
        return EINVAL;
    }
    memset(attr, 0, inlen);
    attr->ahn = efa_double_ahn(ah);
    return 0;
}

/*
 * efadv_create_qp_ex: IBV_QPT_DRIVER with driver_qp_type SRD (efa_check_qp_attr: EOPNOTSUPP for
 * another type), comp_mask 0, the bytes past the known struct zero, the PD through
 * IBV_QP_INIT_ATTR_PD (EINVAL without it).
 */
struct ibv_qp *efadv_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr,
                                  struct efadv_qp_init_attr *efa, uint32_t inlen)
{
    if (!efa_double_is_efa(ctx)) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    if (attr->qp_type != IBV_QPT_DRIVER || inlen < FIELD_END(struct efadv_qp_init_attr, driver_qp_type)
        || efa->comp_mask != 0 || !cleared(efa, FIELD_END(struct efadv_qp_init_attr, driver_qp_type), inlen)) {
        errno = EINVAL;
        return NULL;
    }
    if (efa->driver_qp_type != EFADV_QP_DRIVER_TYPE_SRD
        || (attr->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)) != 0) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || attr->pd == NULL) {
        errno = EINVAL;
        return NULL;
    }
    return efa_double_create_qp(attr->pd, attr, 1);
}

/*
 * efadv_create_cq: comp_mask 0, wc_flags within what the device supports (SGID with the
 * CQ_WITH_SGID capability), the standard ibv wc_flags only; a channel needs CQ notifications.
 */
struct ibv_cq_ex *efadv_create_cq(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *attr,
                                  struct efadv_cq_init_attr *efa, uint32_t inlen)
{
    if (!efa_double_is_efa(ctx)) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    if (inlen < FIELD_END(struct efadv_cq_init_attr, wc_flags) || efa->comp_mask != 0
        || !cleared(efa, FIELD_END(struct efadv_cq_init_attr, wc_flags), inlen)) {
        errno = EINVAL;
        return NULL;
    }
    if ((efa->wc_flags & ~(uint64_t)EFADV_WC_EX_WITH_SGID) != 0 || (attr->wc_flags & ~(uint64_t)IBV_WC_STANDARD_FLAGS) != 0
        || attr->comp_mask != 0) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    return efa_double_create_cq(ctx, attr, (efa->wc_flags & EFADV_WC_EX_WITH_SGID) != 0);
}

struct efadv_cq *efadv_cq_from_ibv_cq_ex(struct ibv_cq_ex *cq)
{
    return efa_double_efadv_cq(cq);
}

/*
 * efadv_sq_depth_attr and efadv_rq_depth_attr (rdma-core 63): the header's where it has them,
 * else the same layout here (an older efadv.h declares neither the structs nor the functions).
 */
#ifdef EFA_DOUBLE_HAVE_EFADV_MAX_DEPTH
#define double_sq_depth_attr efadv_sq_depth_attr
#define double_rq_depth_attr efadv_rq_depth_attr
#else
struct double_sq_depth_attr {
    uint64_t comp_mask;
    uint32_t flags;
    uint32_t max_send_sge;
    uint32_t max_rdma_sge;
    uint32_t max_inline_data;
};

struct double_rq_depth_attr {
    uint64_t comp_mask;
    uint32_t max_recv_sge;
};

int efadv_get_max_sq_depth(struct ibv_context *ctx, struct double_sq_depth_attr *attr, uint32_t inlen);
int efadv_get_max_rq_depth(struct ibv_context *ctx, struct double_rq_depth_attr *attr, uint32_t inlen);
#endif

#define DOUBLE_SQ_DEPTH_ATTR_INLINE_WRITE 1u

/*
 * efadv_get_max_sq_depth: -EOPNOTSUPP off EFA; -EINVAL when inlen stops before max_inline_data, a
 * comp_mask, or an SGE count or inline size beyond the device's; else the depth (negative errno
 * convention, unlike efadv_query_device).
 */
int efadv_get_max_sq_depth(struct ibv_context *ctx, struct double_sq_depth_attr *attr, uint32_t inlen)
{
    if (!efa_double_is_efa(ctx)) {
        return -EOPNOTSUPP;
    }
    if (inlen < FIELD_END(struct double_sq_depth_attr, max_inline_data) || attr->comp_mask != 0) {
        return -EINVAL;
    }
    return efa_double_max_sq_depth(ctx, attr->max_send_sge, attr->max_rdma_sge, attr->max_inline_data,
                                   (attr->flags & DOUBLE_SQ_DEPTH_ATTR_INLINE_WRITE) != 0);
}

/* efadv_get_max_rq_depth: as efadv_get_max_sq_depth, for max_recv_sge. */
int efadv_get_max_rq_depth(struct ibv_context *ctx, struct double_rq_depth_attr *attr, uint32_t inlen)
{
    if (!efa_double_is_efa(ctx)) {
        return -EOPNOTSUPP;
    }
    if (inlen < FIELD_END(struct double_rq_depth_attr, max_recv_sge) || attr->comp_mask != 0) {
        return -EINVAL;
    }
    return efa_double_max_rq_depth(ctx, attr->max_recv_sge);
}
