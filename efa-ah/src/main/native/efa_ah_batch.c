/*
 * Work requests posted several to a call: one crossing from Java for a batch of receives instead
 * of one each. ibv_post_recv takes a linked list and stops at the first it refuses (*bad_wr):
 * those before it are posted, it and those after are not.
 */
#include <errno.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "efa_ah_native.h"
#include "efa_ah_native_internal.h"

/*
 * A post's result as the callers see it: the count posted from the first (done, from *bad_wr), and
 * an error only when none went; a refused one after some that went is the next call's first.
 */
static int batch_outcome(int rc, int err_no, uint64_t done, uint32_t count, uint32_t *posted)
{
    if (rc == 0) {
        *posted = count;
        return 0;
    }
    *posted = done <= count ? (uint32_t)done : 0;
    return *posted > 0 ? 0 : efa_ah_error_from_rc(rc, err_no);
}

int efa_ah_post_recv_batch(uint64_t qp, uint64_t mr, const uint32_t *offsets, uint32_t length,
                           const uint64_t *wr_ids, uint32_t count)
{
    if (qp == 0 || mr == 0 || offsets == NULL || wr_ids == NULL || count == 0 || count > EFA_AH_MAX_BATCH) {
        return -EINVAL;
    }
    struct ibv_sge sges[EFA_AH_MAX_BATCH];
    struct ibv_recv_wr wrs[EFA_AH_MAX_BATCH];
    struct ibv_mr *region = (struct ibv_mr *)(uintptr_t)mr;
    for (uint32_t i = 0; i < count; i++) {
        uint64_t addr = 0;
        int rc = efa_ah_mr_range(mr, offsets[i], length, &addr);
        if (rc != 0) {
            if (i == 0) {
                return rc;
            }
            count = i; /* post those before it; the caller learns of this one on its own */
            break;
        }
        sges[i].addr = addr;
        sges[i].length = length;
        sges[i].lkey = region->lkey;
        memset(&wrs[i], 0, sizeof(wrs[i]));
        wrs[i].wr_id = wr_ids[i];
        wrs[i].sg_list = &sges[i];
        wrs[i].num_sge = length == 0 ? 0 : 1;
        wrs[i].next = i + 1 < count ? &wrs[i + 1] : NULL;
    }
    wrs[count - 1].next = NULL;
    struct ibv_recv_wr *bad = NULL;
    errno = 0;
    int rc = ibv_post_recv((struct ibv_qp *)(uintptr_t)qp, wrs, &bad);
    uint32_t posted = 0;
    rc = batch_outcome(rc, errno, bad == NULL ? 0 : (uint64_t)(bad - wrs), count, &posted);
    return rc != 0 ? rc : (int)posted;
}

int efa_ah_post_sends(uint64_t qp, uint64_t ah, uint32_t remote_qpn, uint32_t remote_qkey, uint64_t mr,
                      const struct efa_ah_send_req *reqs, uint32_t count)
{
    if (qp == 0 || ah == 0 || mr == 0 || remote_qpn > EFA_AH_MAX_QPN || reqs == NULL || count == 0
        || count > EFA_AH_MAX_BATCH) {
        return -EINVAL;
    }
    struct ibv_sge sges[EFA_AH_MAX_BATCH];
    struct ibv_send_wr wrs[EFA_AH_MAX_BATCH];
    struct ibv_mr *region = (struct ibv_mr *)(uintptr_t)mr;
    struct ibv_ah *dest = (struct ibv_ah *)(uintptr_t)ah;
    for (uint32_t i = 0; i < count; i++) {
        uint64_t addr = 0;
        int rc = efa_ah_mr_range(mr, reqs[i].offset, reqs[i].length, &addr);
        if (rc != 0) {
            if (i == 0) {
                return rc;
            }
            count = i; /* post those before it; the caller learns of this one on its own */
            break;
        }
        sges[i].addr = addr;
        sges[i].length = reqs[i].length;
        sges[i].lkey = region->lkey;
        /*
         * Only the fields a provider reads for a signaled UD/SRD IBV_WR_SEND, not a memset of the
         * whole 128-byte request: efa_post_send and efa_post_send_validate_wr read wr_id, next,
         * sg_list, num_sge, opcode, send_flags and wr.ud (imm_data only WITH_IMM); rxe's
         * convert_send_wr copies imm_data whatever the opcode, so it is set too. The rest of the
         * wr union (rdma, atomic), qp_type and the bind_mw/tso union belong to other opcodes and
         * QP types and are read by no provider for this one.
         */
        struct ibv_send_wr *wr = &wrs[i];
        wr->wr_id = reqs[i].wr_id;
        wr->next = i + 1 < count ? &wrs[i + 1] : NULL;
        wr->sg_list = &sges[i];
        wr->num_sge = reqs[i].length == 0 ? 0 : 1;
        wr->opcode = IBV_WR_SEND;
        wr->send_flags = IBV_SEND_SIGNALED;
        wr->imm_data = 0;
        wr->wr.ud.ah = dest;
        wr->wr.ud.remote_qpn = remote_qpn;
        wr->wr.ud.remote_qkey = remote_qkey;
    }
    wrs[count - 1].next = NULL;
    struct ibv_send_wr *bad = NULL;
    errno = 0;
    /* Returns a positive errno (not -1) and points *bad at the first not posted. */
    int rc = ibv_post_send((struct ibv_qp *)(uintptr_t)qp, wrs, &bad);
    uint32_t posted = 0;
    rc = batch_outcome(rc, errno, bad == NULL ? 0 : (uint64_t)(bad - wrs), count, &posted);
    return rc != 0 ? rc : (int)posted;
}
