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
