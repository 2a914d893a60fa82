/*
 * Pieces of efa_ah_native.c exposed only to its C tests, so that paths a test machine cannot
 * reach through a real device (a NULL device list, for one) are still exercised.
 */
#ifndef EFA_AH_NATIVE_INTERNAL_H
#define EFA_AH_NATIVE_INTERNAL_H

#include <infiniband/verbs.h>
#include "efa_ah_native.h"

/*
 * The body of efa_ah_device_list once ibv_get_device_list has returned list (maybe NULL) with
 * num entries and list_errno read right after it. Does not free list.
 */
int efa_ah_names_from_list(struct ibv_device **list, int num, int list_errno, char *names,
                           uint32_t capacity, uint32_t *count);

/* Fills *out from a verbs struct ibv_ah_attr. */
void efa_ah_attr_from_verbs(const struct ibv_ah_attr *in, struct efa_ah_ah_attr *out);

/* Checks *in and fills *out; -EINVAL if a field does not fit its verbs field. */
int efa_ah_attr_to_verbs(const struct efa_ah_ah_attr *in, struct ibv_ah_attr *out);

/*
 * *addr = mr->addr + offset when [offset, offset + length) lies inside the MR, else -EINVAL.
 * Reads only the struct ibv_mr, so a test can pass one of its own.
 */
int efa_ah_mr_range(uint64_t mr, uint64_t offset, uint64_t length, uint64_t *addr);

/* Fills *out from a verbs struct ibv_wc. */
void efa_ah_wc_from_verbs(const struct ibv_wc *in, struct efa_ah_wc *out);

/* Checks *in and fills *out; -EINVAL if a field does not fit its ibv_wc field. */
int efa_ah_wc_to_verbs(const struct efa_ah_wc *in, struct ibv_wc *out);

#endif /* EFA_AH_NATIVE_INTERNAL_H */
