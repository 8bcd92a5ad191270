#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * Executable memory for trampolines and pads.
 *
 * Generated code has to lie near the code it belongs to: x86_64 relative
 * jumps and RIP-relative operands reach +-2 GiB, and the OPCODE strategy
 * needs a pad at one exact address. So memory comes in page-sized chunks
 * mapped at chosen addresses (found from the gaps in /proc/self/maps), and
 * a byte-granular bitmap per chunk records what is used, which lets an
 * exact-address claim share a page with other code.
 *
 * Pages stay read+execute except while bistro writes into them. Nothing is
 * ever unmapped: another thread may still be executing a trampoline of a
 * removed patch.
 */

#include <ucm/bistro/bistro_int.h>

#include <ucs/debug/log.h>
#include <ucs/sys/sys.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifndef MAP_FIXED_NOREPLACE
#  define MAP_FIXED_NOREPLACE 0x100000
#endif

/* The lowest address worth trying; the kernel refuses below
 * vm.mmap_min_addr, which is 64 KiB on common systems. */
#define UCM_BISTRO_CODE_MIN_ADDR  0x10000ul

/* Above this, x86_64 and aarch64 user space needs an explicit opt-in
 * (5-level page tables, 52-bit VA); generated code never goes there. */
#define UCM_BISTRO_CODE_MAX_ADDR  (1ul << 47)

/* Gaps in the address space we remember when looking for a free page. */
#define UCM_BISTRO_CODE_MAX_GAPS  4096

typedef struct ucm_bistro_code_chunk {
    ucs_list_link_t list;
    uintptr_t       base;     /* page aligned */
    size_t          size;     /* one page */
    uint64_t        used[];   /* one bit per byte */
} ucm_bistro_code_chunk_t;

typedef struct {
    uintptr_t start;
    uintptr_t end;
} ucm_bistro_code_range_t;

static UCS_LIST_HEAD(ucm_bistro_code_chunks);

static inline uintptr_t ucm_bistro_code_max(uintptr_t a, uintptr_t b)
{
    return (a > b) ? a : b;
}

static inline uintptr_t ucm_bistro_code_min(uintptr_t a, uintptr_t b)
{
    return (a < b) ? a : b;
}

static inline uintptr_t ucm_bistro_code_dist(uintptr_t a, uintptr_t b)
{
    return (a > b) ? (a - b) : (b - a);
}

static size_t ucm_bistro_code_page_size(void)
{
    return ucs_get_page_size();
}

static int ucm_bistro_code_is_used(const ucm_bistro_code_chunk_t *chunk,
                                   size_t offset)
{
    return (chunk->used[offset / 64] >> (offset % 64)) & 1;
}

static void ucm_bistro_code_mark_used(ucm_bistro_code_chunk_t *chunk,
                                      size_t offset, size_t size)
{
    size_t i;

    for (i = offset; i < offset + size; ++i) {
        chunk->used[i / 64] |= UCS_BIT(i % 64);
    }
}

static int ucm_bistro_code_range_free(const ucm_bistro_code_chunk_t *chunk,
                                      size_t offset, size_t size)
{
    size_t i;

    for (i = offset; i < offset + size; ++i) {
        if (ucm_bistro_code_is_used(chunk, i)) {
            return 0;
        }
    }
    return 1;
}

static ucm_bistro_code_chunk_t *ucm_bistro_code_find_chunk(uintptr_t addr)
{
    ucm_bistro_code_chunk_t *chunk;

    ucs_list_for_each(chunk, &ucm_bistro_code_chunks, list) {
        if ((addr >= chunk->base) && (addr < chunk->base + chunk->size)) {
            return chunk;
        }
    }
    return NULL;
}

/* Map one page at exactly @a page, never replacing an existing mapping. */
static ucm_bistro_code_chunk_t *ucm_bistro_code_map_chunk(uintptr_t page)
{
    size_t page_size = ucm_bistro_code_page_size();
    ucm_bistro_code_chunk_t *chunk;
    void *ptr;

    chunk = calloc(1, sizeof(*chunk) + (page_size / 64) * sizeof(uint64_t));
    if (chunk == NULL) {
        return NULL;
    }

    ptr = mmap((void*)page, page_size, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (ptr == MAP_FAILED) {
        free(chunk);
        return NULL;
    }

    if ((uintptr_t)ptr != page) {
        /* A kernel older than 4.17 took the flag as a mere hint. */
        munmap(ptr, page_size);
        free(chunk);
        return NULL;
    }

    /* Unused bytes trap if anything ever jumps to them. */
    memset(ptr, 0xcc, page_size);
    if (mprotect(ptr, page_size, PROT_READ | PROT_EXEC) != 0) {
        ucs_debug("bistro: cannot make code page %p executable: %m", ptr);
        munmap(ptr, page_size);
        free(chunk);
        return NULL;
    }

    chunk->base = page;
    chunk->size = page_size;
    ucs_list_add_tail(&ucm_bistro_code_chunks, &chunk->list);
    ucs_debug("bistro: mapped code page at 0x%" PRIxPTR, page);
    return chunk;
}

/* Reads the start and end of every mapping, sorted as the kernel prints
 * them. Returns the number of ranges, or -1. */
static int ucm_bistro_code_read_maps(ucm_bistro_code_range_t *ranges,
                                     int max)
{
    char line[1024];
    unsigned long start, end;
    FILE *file;
    int count = 0;

    file = fopen("/proc/self/maps", "r");
    if (file == NULL) {
        return -1;
    }

    while ((count < max) && (fgets(line, sizeof(line), file) != NULL)) {
        if (sscanf(line, "%lx-%lx", &start, &end) == 2) {
            ranges[count].start = start;
            ranges[count].end   = end;
            ++count;
        }
        /* A line longer than the buffer continues on the next read, which
         * will not parse as a range and is skipped. */
    }

    fclose(file);
    return count;
}

int ucm_bistro_mapping_prot(const void *addr)
{
    unsigned long start, end;
    char line[1024], perms[8];
    int prot = -1;
    FILE *file;

    file = fopen("/proc/self/maps", "r");
    if (file == NULL) {
        return -1;
    }

    while (fgets(line, sizeof(line), file) != NULL) {
        if ((sscanf(line, "%lx-%lx %7s", &start, &end, perms) != 3) ||
            ((uintptr_t)addr < start) || ((uintptr_t)addr >= end)) {
            continue;
        }

        prot = ((perms[0] == 'r') ? PROT_READ : 0) |
               ((perms[1] == 'w') ? PROT_WRITE : 0) |
               ((perms[2] == 'x') ? PROT_EXEC : 0);
        break;
    }

    fclose(file);
    return prot;
}

/* Among the unmapped pages whose every byte lies in [lo, hi), map the one
 * closest to @a near. */
static ucm_bistro_code_chunk_t *
ucm_bistro_code_map_near(uintptr_t near, uintptr_t lo, uintptr_t hi)
{
    size_t page_size = ucm_bistro_code_page_size();
    ucm_bistro_code_range_t *maps;
    ucm_bistro_code_chunk_t *chunk = NULL;
    uintptr_t gap_start, gap_end, page, candidate;
    int count, i, attempt;

    maps = malloc(UCM_BISTRO_CODE_MAX_GAPS * sizeof(*maps));
    if (maps == NULL) {
        return NULL;
    }

    /* Another thread may map the chosen page first: try a few times. */
    for (attempt = 0; (attempt < 8) && (chunk == NULL); ++attempt) {
        count = ucm_bistro_code_read_maps(maps, UCM_BISTRO_CODE_MAX_GAPS);
        if (count < 0) {
            break;
        }

        page = 0;
        for (i = 0; i <= count; ++i) {
            gap_start = (i == 0) ? UCM_BISTRO_CODE_MIN_ADDR : maps[i - 1].end;
            gap_end   = (i == count) ? UCM_BISTRO_CODE_MAX_ADDR :
                        maps[i].start;
            gap_start = ucm_bistro_code_max(gap_start, lo);
            gap_end   = ucm_bistro_code_min(gap_end, hi);
            gap_start = (gap_start + page_size - 1) & ~(page_size - 1);
            if ((gap_end < gap_start) || (gap_end - gap_start < page_size)) {
                continue;
            }

            /* The page of this gap nearest to @a near. */
            if (near <= gap_start) {
                candidate = gap_start;
            } else if (near >= gap_end - page_size) {
                candidate = (gap_end - page_size) & ~(page_size - 1);
            } else {
                candidate = near & ~(page_size - 1);
            }

            if ((page == 0) || (ucm_bistro_code_dist(candidate, near) <
                                ucm_bistro_code_dist(page, near))) {
                page = candidate;
            }
        }

        if (page == 0) {
            break;
        }

        chunk = ucm_bistro_code_map_chunk(page);
    }

    free(maps);
    return chunk;
}

/* First free run of @a size bytes aligned to @a align within the chunk and
 * within [lo, hi). Returns the offset or SIZE_MAX. */
static size_t ucm_bistro_code_find_free(const ucm_bistro_code_chunk_t *chunk,
                                        uintptr_t lo, uintptr_t hi,
                                        size_t size, size_t align)
{
    size_t offset;
    uintptr_t addr;

    for (offset = 0; offset + size <= chunk->size; offset += align) {
        addr = chunk->base + offset;
        if ((addr >= lo) && (addr + size <= hi) &&
            ucm_bistro_code_range_free(chunk, offset, size)) {
            return offset;
        }
    }
    return SIZE_MAX;
}

void *ucm_bistro_code_alloc(const void *near, size_t distance, size_t size,
                            size_t align)
{
    uintptr_t addr = (uintptr_t)near;
    uintptr_t lo   = (addr > distance) ? (addr - distance) : 0;
    uintptr_t hi   = (UINTPTR_MAX - addr > distance) ? (addr + distance) :
                     UINTPTR_MAX;
    ucm_bistro_code_chunk_t *chunk;
    size_t offset;

    ucs_list_for_each(chunk, &ucm_bistro_code_chunks, list) {
        offset = ucm_bistro_code_find_free(chunk, lo, hi, size, align);
        if (offset != SIZE_MAX) {
            goto found;
        }
    }

    chunk = ucm_bistro_code_map_near(addr, lo, hi);
    if (chunk == NULL) {
        ucs_debug("bistro: no free page within %zu bytes of %p", distance,
                  near);
        return NULL;
    }

    offset = ucm_bistro_code_find_free(chunk, lo, hi, size, align);
    if (offset == SIZE_MAX) {
        return NULL;
    }

found:
    ucm_bistro_code_mark_used(chunk, offset, size);
    return (void*)(chunk->base + offset);
}

ucs_status_t ucm_bistro_code_alloc_at(void *addr, size_t size)
{
    size_t page_size = ucm_bistro_code_page_size();
    uintptr_t start  = (uintptr_t)addr;
    uintptr_t first  = start & ~(page_size - 1);
    uintptr_t last   = (start + size - 1) & ~(page_size - 1);
    ucm_bistro_code_chunk_t *chunks[2], *mapped[2] = {NULL, NULL};
    uintptr_t page, piece_start, piece_end;
    unsigned i, count;

    if ((start < UCM_BISTRO_CODE_MIN_ADDR) || (start + size < start) ||
        (last - first > page_size)) {
        return UCS_ERR_INVALID_ADDR;
    }

    count = (last == first) ? 1 : 2;
    for (i = 0; i < count; ++i) {
        page      = first + (i * page_size);
        chunks[i] = ucm_bistro_code_find_chunk(page);
        if (chunks[i] == NULL) {
            chunks[i] = mapped[i] = ucm_bistro_code_map_chunk(page);
            if (chunks[i] == NULL) {
                goto err_busy;
            }
        }

        piece_start = ucm_bistro_code_max(start, page) - page;
        piece_end   = ucm_bistro_code_min(start + size, page + page_size) - page;
        if (!ucm_bistro_code_range_free(chunks[i], piece_start,
                                        piece_end - piece_start)) {
            goto err_busy;
        }
    }

    for (i = 0; i < count; ++i) {
        page        = first + (i * page_size);
        piece_start = ucm_bistro_code_max(start, page) - page;
        piece_end   = ucm_bistro_code_min(start + size, page + page_size) - page;
        ucm_bistro_code_mark_used(chunks[i], piece_start,
                                  piece_end - piece_start);
    }
    return UCS_OK;

err_busy:
    /* Give back only the pages this call mapped; they hold nothing. */
    for (i = 0; i < count; ++i) {
        if (mapped[i] != NULL) {
            ucs_list_del(&mapped[i]->list);
            munmap((void*)mapped[i]->base, mapped[i]->size);
            free(mapped[i]);
        }
    }
    return UCS_ERR_ALREADY_EXISTS;
}

/* Make the code pages of [dst, dst + size) writable, run the copy, and
 * make them read+execute again. They stay executable throughout, because
 * other threads may be running code on them. */
static ucs_status_t ucm_bistro_code_unprotect(void *dst, size_t size,
                                              int writable)
{
    size_t page_size = ucm_bistro_code_page_size();
    uintptr_t first  = (uintptr_t)dst & ~(page_size - 1);
    uintptr_t end    = ((uintptr_t)dst + size + page_size - 1) &
                       ~(page_size - 1);
    int prot         = PROT_READ | PROT_EXEC | (writable ? PROT_WRITE : 0);

    if (mprotect((void*)first, end - first, prot) != 0) {
        ucs_debug("bistro: mprotect(%p, %zu, 0x%x) failed: %m",
                  (void*)first, (size_t)(end - first), prot);
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

ucs_status_t ucm_bistro_code_write(void *dst, const void *src, size_t size)
{
    ucs_status_t status;

    status = ucm_bistro_code_unprotect(dst, size, 1);
    if (status != UCS_OK) {
        return status;
    }

    memcpy(dst, src, size);
    __builtin___clear_cache((char*)dst, (char*)dst + size);
    return ucm_bistro_code_unprotect(dst, size, 0);
}

ucs_status_t ucm_bistro_code_write_ptr(void **dst, void *value)
{
    ucs_status_t status;

    status = ucm_bistro_code_unprotect(dst, sizeof(*dst), 1);
    if (status != UCS_OK) {
        return status;
    }

    __atomic_store_n(dst, value, __ATOMIC_RELEASE);
    return ucm_bistro_code_unprotect(dst, sizeof(*dst), 0);
}
