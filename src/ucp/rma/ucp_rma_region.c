#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * The regions of this process that remote RMA requests may touch: every
 * ucp_mem_map() region, named by a random 64-bit identity that its packed
 * rkeys carry. The target looks each request up here and touches only
 * memory a region covers, under one process-wide lock that ucp_mem_unmap()
 * also takes: a region is never accessed after it was unmapped.
 *
 * Device regions are read and written with cuda_copy (ucp_memtype.c); atomics on them are read-modify-write under the lock
 * (atomic with respect to other remote requests, not to device kernels).
 */

#include <ucp/rma/ucp_rma.h>
#include <ucs/datastruct/hmap.h>
#include <ucs/sys/sys.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct ucp_rma_region {
    ucs_list_link_t   link;
    uint64_t          id;
    ucp_context_h     context;
    uintptr_t         address;
    size_t            length;
    ucs_memory_type_t mem_type;
} ucp_rma_region_t;

static pthread_mutex_t ucp_rma_regions_lock = PTHREAD_MUTEX_INITIALIZER;
static UCS_LIST_HEAD(ucp_rma_regions);
static uint64_t ucp_rma_region_seed;
static uint64_t ucp_rma_region_count;

ucs_status_t ucp_rma_region_add(ucp_context_h context, void *address,
                                size_t length, ucs_memory_type_t mem_type,
                                uint64_t *id_p)
{
    ucp_rma_region_t *region;

    region = malloc(sizeof(*region));
    if (region == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    region->context  = context;
    region->address  = (uintptr_t)address;
    region->length   = length;
    region->mem_type = mem_type;
    pthread_mutex_lock(&ucp_rma_regions_lock);
    if (ucp_rma_region_seed == 0) {
        /* Identities are not guessable from another process, so a stale or
         * corrupt key does not name a live region by accident. */
        ucp_rma_region_seed = ucs_get_time_ns() ^ ((uint64_t)getpid() << 32) ^
                              (uintptr_t)region;
    }
    do {
        region->id = ucs_hash_u64(ucp_rma_region_seed + ++ucp_rma_region_count);
    } while (region->id == 0);
    ucs_list_add_tail(&ucp_rma_regions, &region->link);
    pthread_mutex_unlock(&ucp_rma_regions_lock);
    *id_p = region->id;
    ucs_debug("ucp: rma region 0x%llx: %p..+%zu (%s)",
              (unsigned long long)region->id, address, length,
              ucs_memory_type_names[mem_type]);
    return UCS_OK;
}

void ucp_rma_region_remove(uint64_t id)
{
    ucp_rma_region_t *region;

    if (id == 0) {
        return;
    }
    pthread_mutex_lock(&ucp_rma_regions_lock);
    ucs_list_for_each(region, &ucp_rma_regions, link) {
        if (region->id == id) {
            ucs_list_del(&region->link);
            free(region);
            break;
        }
    }
    pthread_mutex_unlock(&ucp_rma_regions_lock);
}

/* Called with the lock held. */
static ucs_status_t ucp_rma_region_find(ucp_worker_h worker, uint64_t id,
                                        uint64_t address, size_t length,
                                        const ucp_rma_region_t **region_p)
{
    ucp_rma_region_t *region;

    ucs_list_for_each(region, &ucp_rma_regions, link) {
        if ((region->id != id) || (region->context != worker->context)) {
            continue;
        }
        if ((address < region->address) || (address + length < address) ||
            (address + length > region->address + region->length)) {
            ucs_debug("ucp: rma request %#llx..+%zu outside region 0x%llx "
                      "(%#lx..+%zu) refused", (unsigned long long)address,
                      length, (unsigned long long)id, region->address,
                      region->length);
            return UCS_ERR_OUT_OF_RANGE;
        }
        *region_p = region;
        return UCS_OK;
    }
    ucs_debug("ucp: rma request for unknown region 0x%llx refused",
              (unsigned long long)id);
    return UCS_ERR_INVALID_PARAM;
}

static ucs_status_t ucp_rma_region_copy(ucp_worker_h worker,
                                        const ucp_rma_region_t *region,
                                        uint64_t address, void *data,
                                        size_t length, int write)
{
    void *mem = (void*)(uintptr_t)address;

    if (region->mem_type != UCS_MEMORY_TYPE_HOST) {
        /* a synchronous cuda_copy (ucp_memtype.c) */
        return write ? ucp_memtype_copy(worker, mem, data, length) :
                       ucp_memtype_copy(worker, data, mem, length);
    }
    if (write) {
        memcpy(mem, data, length);
    } else {
        memcpy(data, mem, length);
    }
    return UCS_OK;
}

ucs_status_t ucp_rma_region_access(ucp_worker_h worker, uint64_t rma_id,
                                   uint64_t address, size_t length, void *data,
                                   int write)
{
    const ucp_rma_region_t *region;
    ucs_status_t status;

    pthread_mutex_lock(&ucp_rma_regions_lock);
    status = ucp_rma_region_find(worker, rma_id, address, length, &region);
    if ((status == UCS_OK) && (length > 0)) {
        status = ucp_rma_region_copy(worker, region, address, data, length,
                                     write);
    }
    pthread_mutex_unlock(&ucp_rma_regions_lock);
    return status;
}

/* The new value of an atomic operation on @a old. */
static uint64_t ucp_rma_amo_apply(const ucp_rma_amo_args_t *args, uint64_t old)
{
    switch (args->opcode) {
    case UCP_ATOMIC_OP_ADD:
        return old + args->value;
    case UCP_ATOMIC_OP_SWAP:
        return args->value;
    case UCP_ATOMIC_OP_CSWAP:
        return (old == args->value) ? args->swap : old;
    case UCP_ATOMIC_OP_AND:
        return old & args->value;
    case UCP_ATOMIC_OP_OR:
        return old | args->value;
    default: /* XOR: the opcode was checked */
        return old ^ args->value;
    }
}

/* Host memory: a compare-and-swap loop with the CPU's atomics, so that the
 * operation is atomic also against the target process's own atomics. */
static uint64_t ucp_rma_amo_host(void *mem, size_t size,
                                 const ucp_rma_amo_args_t *args)
{
    uint64_t old64, new64;
    uint32_t old32, new32;

    if (size == sizeof(uint32_t)) {
        old32 = __atomic_load_n((uint32_t*)mem, __ATOMIC_ACQUIRE);
        do {
            new32 = (uint32_t)ucp_rma_amo_apply(args, old32);
        } while (!__atomic_compare_exchange_n((uint32_t*)mem, &old32, new32, 0,
                                              __ATOMIC_ACQ_REL,
                                              __ATOMIC_ACQUIRE));
        return old32;
    }
    old64 = __atomic_load_n((uint64_t*)mem, __ATOMIC_ACQUIRE);
    do {
        new64 = ucp_rma_amo_apply(args, old64);
    } while (!__atomic_compare_exchange_n((uint64_t*)mem, &old64, new64, 0,
                                          __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
    return old64;
}

ucs_status_t ucp_rma_region_atomic(ucp_worker_h worker, uint64_t rma_id,
                                   uint64_t address,
                                   const ucp_rma_amo_args_t *args,
                                   size_t size, uint64_t *old_p)
{
    const ucp_rma_region_t *region;
    ucp_rma_amo_args_t narrow;
    ucs_status_t status;
    uint64_t old = 0, new_value;

    if (((size != sizeof(uint32_t)) && (size != sizeof(uint64_t))) ||
        (address % size) || (args->opcode >= UCP_ATOMIC_OP_LAST)) {
        ucs_debug("ucp: atomic of size %zu, opcode %u at %#llx refused", size,
                  args->opcode, (unsigned long long)address);
        return UCS_ERR_INVALID_PARAM;
    }
    narrow = *args;
    if (size == sizeof(uint32_t)) {
        narrow.value = (uint32_t)args->value;
        narrow.swap  = (uint32_t)args->swap;
    }
    pthread_mutex_lock(&ucp_rma_regions_lock);
    status = ucp_rma_region_find(worker, rma_id, address, size, &region);
    if (status != UCS_OK) {
        goto out;
    }
    if (region->mem_type == UCS_MEMORY_TYPE_HOST) {
        *old_p = ucp_rma_amo_host((void*)(uintptr_t)address, size, &narrow);
        goto out;
    }
    status = ucp_rma_region_copy(worker, region, address, &old, size, 0);
    if (status != UCS_OK) {
        goto out;
    }
    new_value = ucp_rma_amo_apply(&narrow, old);
    status    = ucp_rma_region_copy(worker, region, address, &new_value, size, 1);
    *old_p    = old; /* little endian: the low bytes hold a 32-bit value */
out:
    pthread_mutex_unlock(&ucp_rma_regions_lock);
    return status;
}
