/**
 * @file perf_memory.h
 * Memory kinds: how ucx_perftest allocates the buffers it moves (-m).
 *
 * Each kind is an allocator with a small ops table: alloc, free, and
 * copies to and from host memory (through which fill and check work for
 * memory the CPU cannot touch). "host" is built in. The CUDA kinds of
 * issue 9 (cuda = cudaMalloc, cuda-managed, cuda-async = cudaMallocAsync,
 * cuda-pool, cuda-vmm, ...) are always listed by name; perf_mem_cuda.c,
 * built where configure found the CUDA headers, registers their ops with
 * perf_mem_kind_register(). It loads the CUDA libraries with dlopen, so a
 * machine without CUDA gets "not available: <reason>" for those kinds.
 */
#ifndef PERF_MEMORY_H_
#define PERF_MEMORY_H_

#include "perftest.h"

#include <ucs/memory/memory_type.h>

struct perf_mem_kind;

/** A buffer of some memory kind. Owned by whoever called perf_mem_alloc(). */
typedef struct perf_mem_buf {
    void                       *ptr;    /**< address the transport sees */
    size_t                     length;
    const struct perf_mem_kind *kind;
    void                       *priv;   /**< allocator's own handle (pool, VMM handle) */
    int                        device;  /**< GPU index for device kinds (-a) */
} perf_mem_buf_t;

/** An allocator. Static data; kinds are never unregistered. */
typedef struct perf_mem_kind {
    const char        *name;        /**< what -m accepts */
    const char        *description; /**< one line for -h */
    ucs_memory_type_t mem_type;     /**< what a transport should detect it as */
    int               cpu_access;   /**< the CPU may load/store it directly */

    /**
     * Why this kind cannot be used here (no CUDA in this build, no GPU,
     * driver too old), or NULL when it can. May be NULL itself: available.
     */
    const char *(*unavailable)(void);

    /** Allocate @a length bytes into @a buf (ptr, priv). NULL: unavailable. */
    ucs_status_t (*alloc)(size_t length, perf_mem_buf_t *buf);

    /** Free what alloc gave. */
    void (*free)(perf_mem_buf_t *buf);

    /** Copy @a length bytes from host memory @a src to buf at @a offset. */
    ucs_status_t (*write)(perf_mem_buf_t *buf, size_t offset, const void *src,
                          size_t length);

    /** Copy @a length bytes of buf at @a offset to host memory @a dst. */
    ucs_status_t (*read)(const perf_mem_buf_t *buf, size_t offset, void *dst,
                         size_t length);
} perf_mem_kind_t;

/** Find a kind by name; NULL if no such kind exists at all. */
const perf_mem_kind_t *perf_mem_kind_find(const char *name);

/**
 * Why @a kind cannot be used, or NULL when it can. A kind without
 * alloc is "not available" (a build without the CUDA headers).
 */
const char *perf_mem_kind_unavailable(const perf_mem_kind_t *kind);

/**
 * Replace the entry of the same name (or add one) with @a kind: how
 * allocator code (perf_mem_cuda.c) plugs in. @a kind
 * must stay valid for the life of the process. Not thread safe: call from
 * a constructor or before any test runs.
 */
ucs_status_t perf_mem_kind_register(const perf_mem_kind_t *kind);

/** Print one line per kind (name, description, availability) for -h. */
void perf_mem_print_list(FILE *stream);

/**
 * Allocate @a length bytes of @a kind on GPU @a device (ignored by host
 * kinds); at least one byte is allocated, so that a zero-length test
 * still has an address to register.
 */
ucs_status_t perf_mem_alloc(const perf_mem_kind_t *kind, size_t length, int device,
                            perf_mem_buf_t *buf);

/** Whether @a kind is memory of a GPU (a row that gets a raw-copy reference). */
int perf_mem_kind_is_device(const perf_mem_kind_t *kind);

/**
 * Why GPU @a device cannot hold @a kind (it does not exist here), or NULL.
 * Host kinds ignore the device. The reason is in a static buffer.
 */
const char *perf_mem_device_unavailable(const perf_mem_kind_t *kind, unsigned device);

/**
 * Make @a device this process's current GPU when @a kind is GPU memory,
 * before any library is set up: transports bind to the device that is
 * current, as they do in an application that works on that device.
 */
ucs_status_t perf_mem_select_device(const perf_mem_kind_t *kind, unsigned device,
                                    char *error, size_t max);

/**
 * write and read of every kind the CPU can load and store (host, and CUDA
 * managed memory): plain memcpy.
 */
ucs_status_t perf_mem_host_write(perf_mem_buf_t *buf, size_t offset, const void *src,
                                 size_t length);
ucs_status_t perf_mem_host_read(const perf_mem_buf_t *buf, size_t offset, void *dst,
                                size_t length);

/** Register the CUDA kinds (perf_mem_cuda.c; only in builds with CUDA headers). */
void perf_mem_cuda_register(void);

/** Free a buffer from perf_mem_alloc(); a zeroed buf is ignored. */
void perf_mem_free(perf_mem_buf_t *buf);

/**
 * Byte @a offset of the test pattern for @a seed. Data sent by tests is
 * this pattern, so that the receiver can check any byte on its own.
 */
static inline uint8_t perf_mem_pattern_byte(size_t offset, unsigned seed)
{
    /* Not periodic over a power of two, so a misplaced block is caught. */
    return (uint8_t)((offset * 251u) ^ (offset >> 8) ^ (offset >> 16) ^ seed);
}

/** Write the pattern of @a seed into @a buf[offset, offset+length). */
ucs_status_t perf_mem_fill(perf_mem_buf_t *buf, size_t offset, size_t length,
                           unsigned seed);

/**
 * Check that host memory @a data holds the pattern of @a seed for message
 * offsets [offset, offset+length).
 *
 * @return the number of wrong bytes (0: good); *bad_offset_p gets the first.
 */
size_t perf_mem_check_host(const void *data, size_t offset, size_t length,
                           unsigned seed, size_t *bad_offset_p);

/** Same for a buffer of any kind (read through the kind's ops). */
size_t perf_mem_check(const perf_mem_buf_t *buf, size_t offset, size_t length,
                      unsigned seed, size_t *bad_offset_p);

#endif
