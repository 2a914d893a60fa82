/*
 * Pieces of efa_ah_native.c exposed only to its C tests, so that paths a test machine cannot
 * reach through a real device (a NULL device list, for one) are still exercised.
 */
#ifndef EFA_AH_NATIVE_INTERNAL_H
#define EFA_AH_NATIVE_INTERNAL_H

#include <errno.h>
#include <stdint.h>
#include <unistd.h>

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

/*
 * RESET to INIT (port, P_Key index, Q_Key), RTR, and RTS (send PSN 0), setting rnr_retry (0..7)
 * at RTR to RTS unless it is EFA_AH_RNR_RETRY_DEFAULT. -EINVAL for a value out of range.
 */
int efa_ah_qp_to_rts(uint64_t qp, uint32_t port_num, uint32_t pkey_index, uint32_t qkey, int32_t rnr_retry);

/* Fills *out from a verbs struct ibv_wc; the receive-only fields are 0 unless the opcode is a receive. */
void efa_ah_wc_from_verbs(const struct ibv_wc *in, struct efa_ah_wc *out);

/* Checks *in and fills *out; -EINVAL if a field does not fit its ibv_wc field. */
int efa_ah_wc_to_verbs(const struct efa_ah_wc *in, struct ibv_wc *out);

/*
 * libefa is never linked: hosts without it must still load this library. These mirror the
 * parts of <infiniband/efadv.h> used here. efadv.h grows its structs from release to release, so
 * each mirror is a prefix of the header's struct in every rdma-core since 44 (same offsets, a
 * size at most the header's): it is passed with its own size as "inlen", which every libefa
 * accepts (newer ones treat the fields past it as zero). efa_ah_efadv.c asserts the offsets
 * against the header where one is at hand.
 */
struct efa_ah_efadv_device_attr {
    uint64_t comp_mask;
    uint32_t max_sq_wr;
    uint32_t max_rq_wr;
    uint16_t max_sq_sge;
    uint16_t max_rq_sge;
    uint16_t inline_buf_size;
    /* reserved (zeroed by libefa) before rdma-core 63. */
    uint16_t inline_buf_size_ex;
    uint32_t device_caps;
    uint32_t max_rdma_size;
};

struct efa_ah_efadv_ah_attr {
    uint64_t comp_mask;
    uint16_t ahn;
    uint8_t reserved[6];
};

typedef int (*efadv_query_device_fn)(struct ibv_context *, struct efa_ah_efadv_device_attr *, uint32_t);
typedef int (*efadv_query_ah_fn)(struct ibv_ah *, struct efa_ah_efadv_ah_attr *, uint32_t);

/*
 * The libefa entry points efa_ah_native.c uses, resolved once by efa_ah_efadv.c's dlopen() table
 * (NULL when libefa is absent); call efa_ah_efadv_available() first, which loads the table.
 */
extern efadv_query_device_fn efadv_query_device_ptr;
extern efadv_query_ah_fn efadv_query_ah_ptr;

/* libefa's entry points as resolved by efa_ah_efadv_resolve; NULL where a family is incomplete. */
struct efa_ah_efadv_symbols {
    void *query_device;
    void *query_ah;
    void *create_cq;
    void *cq_from_ex;
    void *create_qp_ex;
    void *get_max_sq_depth;
    void *get_max_rq_depth;
};

typedef void *(*efa_ah_symbol_lookup)(void *handle, const char *name);

/*
 * Looks libefa's entry points up in handle (NULL: no libefa) with lookup (dlsym, or a test's
 * stand-in for an older libefa) and returns the EFA_AH_EFADV_* families found complete.
 */
uint32_t efa_ah_efadv_resolve(void *handle, efa_ah_symbol_lookup lookup, struct efa_ah_efadv_symbols *out);
/*
 * For a CQ made elsewhere on a channel of efa_ah_channel.c (efadv_create_cq's ibv_cq_init_attr_ex):
 * efa_ah_channel_for_new_cq gives the attr's channel and cq_context (-EBUSY when the channel has
 * its CQ); once the CQ is made, efa_ah_channel_adopt_cq ties it to the channel, so that
 * efa_ah_destroy_cq acknowledges its events.
 */
int efa_ah_channel_for_new_cq(uint64_t channel, struct ibv_comp_channel **verbs_channel, void **cq_context);
void efa_ah_channel_adopt_cq(uint64_t channel, struct ibv_cq *cq);

/*
 * The one wait of every channel here (async events, rtnetlink, completion channels): a
 * non-blocking fd polled with a wake eventfd, and for channels that can be stopped a stop eventfd.
 * A wake is read back by the wait it ends, so that the next wait blocks again; a stop is never
 * read, so that it stays readable and every later wait sees it. stop_fd is -1 where there is none
 * (poll(2) ignores a negative fd).
 */
struct efa_ah_waker {
    int wake_fd;
    int stop_fd;
};

/* What efa_ah_waker_wait found, as bits; 0 after the timeout or a signal (EINTR). */
#define EFA_AH_WAIT_READY 1 /* the channel's fd is readable */
#define EFA_AH_WAIT_WOKEN 2 /* efa_ah_waker_wake was called (and is now consumed) */
#define EFA_AH_WAIT_STOPPED 4 /* efa_ah_waker_stop was called */

/*
 * A zeroed channel struct of size bytes whose first member is its struct efa_ah_waker, the
 * waker's eventfds made (a stop one when with_stop): how every channel here starts, so that a
 * channel handle also points at its waker (C11 6.7.2.1). NULL with *rc = -errno on failure.
 */
void *efa_ah_waker_channel_new(size_t size, int with_stop, int *rc);

/* Closes the waker of a struct from efa_ah_waker_channel_new and frees it; NULL does nothing. */
void efa_ah_waker_channel_free(void *channel);

/* Polls fd and the waker for up to timeout_ms (negative: no bound): EFA_AH_WAIT_* bits, or -errno. */
int efa_ah_waker_wait(const struct efa_ah_waker *w, int fd, int32_t timeout_ms);

/*
 * Ends the wait in progress, or the next one, on a channel handle (efa_ah_waker_channel_new).
 * 0, -EINVAL for 0, or -errno.
 */
int efa_ah_waker_wake_handle(uint64_t channel);

/*
 * Makes every wait on the channel handle, in progress or later, return EFA_AH_WAIT_STOPPED.
 * 0, -EINVAL for 0 or a channel without a stop signal, or -errno.
 */
int efa_ah_waker_stop_handle(uint64_t channel);

#endif /* EFA_AH_NATIVE_INTERNAL_H */
