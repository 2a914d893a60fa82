/*
 * efa_ah_qp: QP state, read, reset and moved to ERR (see efa_ah_native.h).
 */
#include "efa_ah_native_internal.h"

#include <errno.h>
#include <string.h>

int efa_ah_query_qp_state(uint64_t qp, uint32_t *state)
{
    if (qp == 0 || state == NULL) {
        return -EINVAL;
    }
    struct ibv_qp_attr attr;
    struct ibv_qp_init_attr init;
    memset(&attr, 0, sizeof(attr));
    memset(&init, 0, sizeof(init));
    errno = 0;
    int rc = ibv_query_qp((struct ibv_qp *)(uintptr_t)qp, &attr, IBV_QP_STATE, &init);
    if (rc != 0) {
        return efa_ah_error_from_rc(rc, errno);
    }
    *state = (uint32_t)attr.qp_state;
    return 0;
}

/* RESET and ERR are reachable from every state with the state alone in the mask. */
static int move_qp_to(uint64_t qp, enum ibv_qp_state state)
{
    if (qp == 0) {
        return -EINVAL;
    }
    struct ibv_qp_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.qp_state = state;
    errno = 0;
    int rc = ibv_modify_qp((struct ibv_qp *)(uintptr_t)qp, &attr, IBV_QP_STATE);
    return rc == 0 ? 0 : efa_ah_error_from_rc(rc, errno);
}

int efa_ah_reset_qp(uint64_t qp)
{
    return move_qp_to(qp, IBV_QPS_RESET);
}

int efa_ah_error_qp(uint64_t qp)
{
    return move_qp_to(qp, IBV_QPS_ERR);
}

int efa_ah_qp_to_rts(uint64_t qp, uint32_t port_num, uint32_t pkey_index, uint32_t qkey, int32_t rnr_retry)
{
    if (qp == 0 || port_num < 1 || port_num > UINT8_MAX || pkey_index > UINT16_MAX
        || (rnr_retry != EFA_AH_RNR_RETRY_DEFAULT && (rnr_retry < 0 || rnr_retry > 7))) {
        return -EINVAL;
    }
    struct ibv_qp *q = (struct ibv_qp *)(uintptr_t)qp;
    struct ibv_qp_attr attr;

    /* A datagram QP has no remote side to name: INIT takes the local addressing, RTR only the state. */
    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_INIT;
    attr.pkey_index = (uint16_t)pkey_index;
    attr.port_num = (uint8_t)port_num;
    attr.qkey = qkey;
    errno = 0;
    int rc = ibv_modify_qp(q, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
    if (rc != 0) {
        return efa_ah_error_from_rc(rc, errno);
    }

    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_RTR;
    errno = 0;
    rc = ibv_modify_qp(q, &attr, IBV_QP_STATE);
    if (rc != 0) {
        return efa_ah_error_from_rc(rc, errno);
    }

    /* EFA takes rnr_retry only here, at RTR to RTS, and only where the device has the capability. */
    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_RTS;
    attr.sq_psn = 0;
    int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
    if (rnr_retry != EFA_AH_RNR_RETRY_DEFAULT) {
        attr.rnr_retry = (uint8_t)rnr_retry;
        mask |= IBV_QP_RNR_RETRY;
    }
    errno = 0;
    rc = ibv_modify_qp(q, &attr, mask);
    return rc == 0 ? 0 : efa_ah_error_from_rc(rc, errno);
}

int efa_ah_activate_srd_qp(uint64_t qp, uint32_t port_num, uint32_t qkey, int32_t rnr_retry)
{
    /* efa_modify_qp passes everything to the kernel, which wants pkey_index 0 (EFA has one P_Key). */
    return efa_ah_qp_to_rts(qp, port_num, 0, qkey, rnr_retry);
}
