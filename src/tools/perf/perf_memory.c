#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "perf_memory.h"
#include "perf_cuda.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PERF_MEM_MAX_KINDS  16
#define PERF_MEM_ALIGN      4096 /* page aligned: what zcopy and registration like best */
#define PERF_MEM_CHUNK      65536 /* staging size for kinds the CPU cannot touch */

static ucs_status_t perf_mem_host_alloc(size_t length, perf_mem_buf_t *buf)
{
    void *ptr;

    if (posix_memalign(&ptr, PERF_MEM_ALIGN, length) != 0) {
        return UCS_ERR_NO_MEMORY;
    }
    /* Touch every page now, so that page faults are not timed. */
    memset(ptr, 0, length);
    buf->ptr = ptr;
    return UCS_OK;
}

static void perf_mem_host_free(perf_mem_buf_t *buf)
{
    free(buf->ptr);
}

ucs_status_t perf_mem_host_write(perf_mem_buf_t *buf, size_t offset, const void *src,
                                 size_t length)
{
    memcpy((char*)buf->ptr + offset, src, length);
    return UCS_OK;
}

ucs_status_t perf_mem_host_read(const perf_mem_buf_t *buf, size_t offset, void *dst,
                                size_t length)
{
    memcpy(dst, (const char*)buf->ptr + offset, length);
    return UCS_OK;
}

static const perf_mem_kind_t perf_mem_host = {
    .name        = "host",
    .description = "System memory (posix_memalign)",
    .mem_type    = UCS_MEMORY_TYPE_HOST,
    .cpu_access  = 1,
    .unavailable = NULL,
    .alloc       = perf_mem_host_alloc,
    .free        = perf_mem_host_free,
    .write       = perf_mem_host_write,
    .read        = perf_mem_host_read
};

/*
 * The CUDA allocators, by name only: a build without the CUDA headers
 * still lists them (and refuses them with the reason); perf_mem_cuda.c
 * replaces these entries with the real ones.
 */
#define PERF_MEM_CUDA_PLACEHOLDER(_name, _desc, _type) \
    { .name = (_name), .description = (_desc), .mem_type = (_type), \
      .cpu_access = ((_type) == UCS_MEMORY_TYPE_CUDA_MANAGED) }

static const perf_mem_kind_t perf_mem_cuda_placeholders[] = {
    PERF_MEM_CUDA_PLACEHOLDER("cuda", "NVIDIA device memory (cudaMalloc)",
                              UCS_MEMORY_TYPE_CUDA),
    PERF_MEM_CUDA_PLACEHOLDER("cuda-managed", "NVIDIA managed memory (cudaMallocManaged)",
                              UCS_MEMORY_TYPE_CUDA_MANAGED),
    PERF_MEM_CUDA_PLACEHOLDER("cuda-async", "cudaMallocAsync on the default pool",
                              UCS_MEMORY_TYPE_CUDA),
    PERF_MEM_CUDA_PLACEHOLDER("cuda-pool", "explicit pool with POSIX-fd handles",
                              UCS_MEMORY_TYPE_CUDA),
    PERF_MEM_CUDA_PLACEHOLDER("cuda-pool-noipc", "explicit pool without handle types",
                              UCS_MEMORY_TYPE_CUDA),
    PERF_MEM_CUDA_PLACEHOLDER("cuda-vmm", "cuMemCreate with a POSIX-fd handle",
                              UCS_MEMORY_TYPE_CUDA),
    PERF_MEM_CUDA_PLACEHOLDER("cuda-vmm-noipc", "cuMemCreate without a shareable handle",
                              UCS_MEMORY_TYPE_CUDA),
    PERF_MEM_CUDA_PLACEHOLDER("cuda-vmm-chunked", "one VA range over several cuMemCreate chunks",
                              UCS_MEMORY_TYPE_CUDA),
};

static const perf_mem_kind_t *perf_mem_kinds[PERF_MEM_MAX_KINDS];
static unsigned perf_mem_num_kinds;

/* The table is filled on first use rather than by a constructor, so that
 * registration order does not depend on link order. */
static void perf_mem_init_table(void)
{
    size_t i;

    if (perf_mem_num_kinds > 0) {
        return;
    }
    perf_mem_kinds[perf_mem_num_kinds++] = &perf_mem_host;
    for (i = 0; i < sizeof(perf_mem_cuda_placeholders) /
                    sizeof(perf_mem_cuda_placeholders[0]); ++i) {
        perf_mem_kinds[perf_mem_num_kinds++] = &perf_mem_cuda_placeholders[i];
    }
#ifdef PERF_HAVE_CUDA
    perf_mem_cuda_register();
#endif
}

const perf_mem_kind_t *perf_mem_kind_find(const char *name)
{
    unsigned i;

    perf_mem_init_table();
    for (i = 0; i < perf_mem_num_kinds; ++i) {
        if (!strcmp(perf_mem_kinds[i]->name, name)) {
            return perf_mem_kinds[i];
        }
    }
    return NULL;
}

const char *perf_mem_kind_unavailable(const perf_mem_kind_t *kind)
{
    if (kind->alloc == NULL) {
        return "this ucx_perftest was built without the CUDA headers "
               "(configure --with-cuda)";
    }
    return (kind->unavailable != NULL) ? kind->unavailable() : NULL;
}

ucs_status_t perf_mem_kind_register(const perf_mem_kind_t *kind)
{
    unsigned i;

    perf_mem_init_table();
    for (i = 0; i < perf_mem_num_kinds; ++i) {
        if (!strcmp(perf_mem_kinds[i]->name, kind->name)) {
            perf_mem_kinds[i] = kind;
            return UCS_OK;
        }
    }
    if (perf_mem_num_kinds == PERF_MEM_MAX_KINDS) {
        return UCS_ERR_EXCEEDS_LIMIT;
    }
    perf_mem_kinds[perf_mem_num_kinds++] = kind;
    return UCS_OK;
}

void perf_mem_print_list(FILE *stream)
{
    const char *why, *said = NULL;
    unsigned i;

    perf_mem_init_table();
    for (i = 0; i < perf_mem_num_kinds; ++i) {
        why = perf_mem_kind_unavailable(perf_mem_kinds[i]);
        fprintf(stream, "    %16s - %s%s\n", perf_mem_kinds[i]->name,
                perf_mem_kinds[i]->description, (why != NULL) ? " [not available]" : "");
        /* The reason once per run of kinds that share it. */
        if ((why != NULL) && ((said == NULL) || strcmp(said, why))) {
            fprintf(stream, "                       not available: %s\n", why);
            said = why;
        }
    }
}

const char *perf_mem_device_unavailable(const perf_mem_kind_t *kind, unsigned device)
{
#ifdef PERF_HAVE_CUDA
    static char why[96];
    int count;

    if (kind->mem_type == UCS_MEMORY_TYPE_HOST) {
        return NULL;
    }
    count = perf_cuda_device_count();
    if ((int)device >= count) {
        snprintf(why, sizeof(why), "GPU %u does not exist (this machine has %d)", device,
                 count);
        return why;
    }
#endif
    (void)kind;
    (void)device;
    return NULL;
}

ucs_status_t perf_mem_select_device(const perf_mem_kind_t *kind, unsigned device,
                                    char *error, size_t max)
{
#ifdef PERF_HAVE_CUDA
    if (kind->mem_type != UCS_MEMORY_TYPE_HOST) {
        return perf_cuda_set_device((int)device, error, max);
    }
#endif
    (void)kind;
    (void)device;
    (void)error;
    (void)max;
    return UCS_OK;
}

int perf_mem_kind_is_device(const perf_mem_kind_t *kind)
{
    return (kind->mem_type != UCS_MEMORY_TYPE_HOST) && !kind->cpu_access;
}

ucs_status_t perf_mem_alloc(const perf_mem_kind_t *kind, size_t length, int device,
                            perf_mem_buf_t *buf)
{
    ucs_status_t status;

    memset(buf, 0, sizeof(*buf));
    if (kind->alloc == NULL) {
        return UCS_ERR_UNSUPPORTED;
    }
    if (length == 0) {
        length = 1;
    }
    buf->length = length;
    buf->kind   = kind;
    buf->device = device;
    status      = kind->alloc(length, buf);
    if (status != UCS_OK) {
        memset(buf, 0, sizeof(*buf));
    }
    return status;
}

void perf_mem_free(perf_mem_buf_t *buf)
{
    if ((buf->kind != NULL) && (buf->ptr != NULL)) {
        buf->kind->free(buf);
    }
    memset(buf, 0, sizeof(*buf));
}

ucs_status_t perf_mem_fill(perf_mem_buf_t *buf, size_t offset, size_t length,
                           unsigned seed)
{
    uint8_t stage[PERF_MEM_CHUNK];
    size_t done, chunk, i;
    ucs_status_t status;

    if (buf->kind->cpu_access) {
        for (i = 0; i < length; ++i) {
            ((uint8_t*)buf->ptr)[offset + i] = perf_mem_pattern_byte(offset + i, seed);
        }
        return UCS_OK;
    }

    for (done = 0; done < length; done += chunk) {
        chunk = length - done;
        if (chunk > sizeof(stage)) {
            chunk = sizeof(stage);
        }
        for (i = 0; i < chunk; ++i) {
            stage[i] = perf_mem_pattern_byte(offset + done + i, seed);
        }
        status = buf->kind->write(buf, offset + done, stage, chunk);
        if (status != UCS_OK) {
            return status;
        }
    }
    return UCS_OK;
}

size_t perf_mem_check_host(const void *data, size_t offset, size_t length,
                           unsigned seed, size_t *bad_offset_p)
{
    const uint8_t *p = data;
    size_t i, bad = 0;

    for (i = 0; i < length; ++i) {
        if (p[i] != perf_mem_pattern_byte(offset + i, seed)) {
            if (bad == 0) {
                *bad_offset_p = offset + i;
            }
            ++bad;
        }
    }
    return bad;
}

size_t perf_mem_check(const perf_mem_buf_t *buf, size_t offset, size_t length,
                      unsigned seed, size_t *bad_offset_p)
{
    uint8_t stage[PERF_MEM_CHUNK];
    size_t done, chunk, bad = 0, first = 0, nbad;

    if (buf->kind->cpu_access) {
        return perf_mem_check_host((const char*)buf->ptr + offset, offset, length,
                                   seed, bad_offset_p);
    }

    for (done = 0; done < length; done += chunk) {
        chunk = length - done;
        if (chunk > sizeof(stage)) {
            chunk = sizeof(stage);
        }
        if (buf->kind->read(buf, offset + done, stage, chunk) != UCS_OK) {
            *bad_offset_p = offset + done;
            return length - done;
        }
        nbad = perf_mem_check_host(stage, offset + done, chunk, seed, &first);
        if ((nbad > 0) && (bad == 0)) {
            *bad_offset_p = first;
        }
        bad += nbad;
    }
    return bad;
}
