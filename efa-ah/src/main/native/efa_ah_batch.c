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
                           const uint64_t *wr_ids, uint32_t count, uint32_t *posted)
{
    if (qp == 0 || mr == 0 || offsets == NULL || wr_ids == NULL || posted == NULL || count == 0
        || count > EFA_AH_MAX_BATCH) {
        return -EINVAL;
    }
    *posted = 0;
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
    return batch_outcome(rc, errno, bad == NULL ? 0 : (uint64_t)(bad - wrs), count, posted);
}

int efa_ah_post_send_batch(uint64_t qp, uint64_t ah, uint32_t remote_qpn, uint32_t remote_qkey, uint64_t mr,
                           const uint32_t *offsets, const uint32_t *lengths, const uint64_t *wr_ids,
                           uint32_t count, uint32_t *posted)
{
    if (qp == 0 || ah == 0 || mr == 0 || remote_qpn > EFA_AH_MAX_QPN || offsets == NULL || lengths == NULL
        || wr_ids == NULL || posted == NULL || count == 0 || count > EFA_AH_MAX_BATCH) {
        return -EINVAL;
    }
    *posted = 0;
    struct ibv_sge sges[EFA_AH_MAX_BATCH];
    struct ibv_send_wr wrs[EFA_AH_MAX_BATCH];
    struct ibv_mr *region = (struct ibv_mr *)(uintptr_t)mr;
    for (uint32_t i = 0; i < count; i++) {
        uint64_t addr = 0;
        int rc = efa_ah_mr_range(mr, offsets[i], lengths[i], &addr);
        if (rc != 0) {
            if (i == 0) {
                return rc;
            }
            count = i; /* post those before it; the caller learns of this one on its own */
            break;
        }
        sges[i].addr = addr;
        sges[i].length = lengths[i];
        sges[i].lkey = region->lkey;
        memset(&wrs[i], 0, sizeof(wrs[i]));
        wrs[i].wr_id = wr_ids[i];
        wrs[i].sg_list = &sges[i];
        wrs[i].num_sge = lengths[i] == 0 ? 0 : 1;
        wrs[i].opcode = IBV_WR_SEND;
        wrs[i].send_flags = IBV_SEND_SIGNALED;
        wrs[i].wr.ud.ah = (struct ibv_ah *)(uintptr_t)ah;
        wrs[i].wr.ud.remote_qpn = remote_qpn;
        wrs[i].wr.ud.remote_qkey = remote_qkey;
        wrs[i].next = i + 1 < count ? &wrs[i + 1] : NULL;
    }
    wrs[count - 1].next = NULL;
    struct ibv_send_wr *bad = NULL;
    errno = 0;
    /* Returns a positive errno (not -1) and points *bad at the first not posted. */
    int rc = ibv_post_send((struct ibv_qp *)(uintptr_t)qp, wrs, &bad);
    return batch_outcome(rc, errno, bad == NULL ? 0 : (uint64_t)(bad - wrs), count, posted);
}
