/*
 * GID table entries with their type (ibv_query_gid_ex), for picking a RoCE v2 source GID.
 * _ibv_query_gid_ex is looked up at run time, so that the JNI library still loads on an
 * rdma-core older than the one it was built with; there the call answers -EOPNOTSUPP.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "efa_ah_native.h"

typedef int (*query_gid_ex_fn)(struct ibv_context *, uint32_t, uint32_t, struct ibv_gid_entry *, uint32_t, size_t);

static query_gid_ex_fn query_gid_ex_ptr;
static pthread_once_t query_gid_ex_once = PTHREAD_ONCE_INIT;

static void query_gid_ex_load(void)
{
    query_gid_ex_ptr = (query_gid_ex_fn)dlsym(RTLD_DEFAULT, "_ibv_query_gid_ex");
}

static int query_gid_entry(uint64_t context, uint32_t port_num, uint32_t index, struct ibv_gid_entry *entry)
{
    pthread_once(&query_gid_ex_once, query_gid_ex_load);
    if (query_gid_ex_ptr == NULL) {
        return -EOPNOTSUPP;
    }
    memset(entry, 0, sizeof(*entry));
    errno = 0;
    int rc = query_gid_ex_ptr((struct ibv_context *)(uintptr_t)context, port_num, index, entry, 0, sizeof(*entry));
    return rc != 0 ? efa_ah_error_from_rc(rc, errno) : 0;
}

int efa_ah_query_gid_type(uint64_t context, uint32_t port_num, uint32_t index, uint32_t *type)
{
    if (context == 0 || type == NULL || port_num < 1 || port_num > UINT8_MAX) {
        return -EINVAL;
    }
    *type = 0;
    struct ibv_gid_entry entry;
    int rc = query_gid_entry(context, port_num, index, &entry);
    if (rc == 0) {
        *type = entry.gid_type;
    }
    return rc;
}

int efa_ah_query_gid_ndev(uint64_t context, uint32_t port_num, uint32_t index, uint32_t *ifindex)
{
    if (context == 0 || ifindex == NULL || port_num < 1 || port_num > UINT8_MAX) {
        return -EINVAL;
    }
    *ifindex = 0;
    struct ibv_gid_entry entry;
    int rc = query_gid_entry(context, port_num, index, &entry);
    if (rc == 0) {
        *ifindex = entry.ndev_ifindex;
    }
    return rc;
}
