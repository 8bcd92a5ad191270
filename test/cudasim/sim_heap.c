#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

/*
 * Memory backing: every piece of device memory lives in a memfd, so that
 * another real process can map it once it holds the file descriptor
 * (through SCM_RIGHTS, pidfd_getfd or /proc/<pid>/fd), and so that nothing
 * is left behind when a process dies. Each memfd starts with a header page
 * (sim_shm_header_t) that tells an importer what it was handed.
 *
 * A heap is one such memfd, sparse and as large as a device, with a
 * first-fit allocator on top: a device's cuMemAlloc arena or a memory pool.
 */
#include "cudasim.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static const char sim_shm_magic[8] = "CUDASIM";

int sim_user_prot(int cpu_visible)
{
    /* Real device memory faults when the CPU touches it; so does the
     * model's, unless the memory is host memory or CUDASIM_CPU_ACCESS=1. */
    return (cpu_visible || sim.cfg.cpu_access) ? (PROT_READ | PROT_WRITE) :
                                                 PROT_NONE;
}

int sim_shm_create(const char *name, sim_shm_header_t *hdr, size_t payload)
{
    int fd = memfd_create(name, MFD_CLOEXEC);

    if (fd < 0) {
        sim_warn("memfd_create(%s) failed: %s", name, strerror(errno));
        return -1;
    }
    memcpy(hdr->magic, sim_shm_magic, sizeof(hdr->magic));
    hdr->size      = payload;
    hdr->owner_pid = getpid();
    if ((ftruncate(fd, (off_t)(SIM_SHM_HEADER_SIZE + payload)) != 0) ||
        (pwrite(fd, hdr, sizeof(*hdr), 0) != (ssize_t)sizeof(*hdr))) {
        sim_warn("cannot size memfd %s to %zu bytes: %s", name, payload,
                 strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

int sim_shm_read_header(int fd, sim_shm_header_t *hdr)
{
    struct stat st;

    if ((pread(fd, hdr, sizeof(*hdr), 0) != (ssize_t)sizeof(*hdr)) ||
        (memcmp(hdr->magic, sim_shm_magic, sizeof(hdr->magic)) != 0) ||
        (fstat(fd, &st) != 0) ||
        ((uint64_t)st.st_size < SIM_SHM_HEADER_SIZE + hdr->size)) {
        return -1;
    }
    return 0;
}

uint64_t sim_fd_ino(int fd)
{
    struct stat st;

    return (fstat(fd, &st) == 0) ? (uint64_t)st.st_ino : 0;
}

void *sim_map(int fd, size_t off, size_t len, int prot, size_t align)
{
    size_t span = len + align;
    char *area, *start;

    /* Reserve more than needed, map at an aligned address inside, give the
     * rest back: device allocations of 2 MiB and more are 2 MiB aligned. */
    area = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
                MAP_NORESERVE, -1, 0);
    if (area == MAP_FAILED) {
        return NULL;
    }
    start = (char *)SIM_ALIGN_UP((uintptr_t)area, align);
    if (mmap(start, len, prot, MAP_SHARED | MAP_FIXED, fd,
             (off_t)(SIM_SHM_HEADER_SIZE + off)) == MAP_FAILED) {
        munmap(area, span);
        return NULL;
    }
    if (start > area) {
        munmap(area, (size_t)(start - area));
    }
    if (area + span > start + len) {
        munmap(start + len, (size_t)(area + span - (start + len)));
    }
    return start;
}

/* Map the user view and, for device memory, a separate shadow view. */
static int sim_heap_map(sim_heap_t *heap)
{
    /* Aligned like the driver's pool chunks, so MAPPING_BASE_ADDR agrees. */
    heap->user = sim_map(heap->fd, 0, heap->capacity,
                         sim_user_prot(heap->cpu_visible), SIM_POOL_CHUNK);
    if (heap->user == NULL) {
        return -1;
    }
    if (heap->cpu_visible) {
        heap->shadow = heap->user;
        return 0;
    }
    heap->shadow = sim_map(heap->fd, 0, heap->capacity,
                           PROT_READ | PROT_WRITE, 4096);
    if (heap->shadow == NULL) {
        munmap(heap->user, heap->capacity);
        return -1;
    }
    return 0;
}

sim_heap_t *sim_heap_create(const char *name, sim_shm_header_t *hdr,
                            size_t capacity, int cpu_visible)
{
    sim_heap_t *heap = calloc(1, sizeof(*heap));

    if (heap == NULL) {
        return NULL;
    }
    heap->capacity    = capacity;
    heap->cpu_visible = cpu_visible;
    heap->free_cap    = 16;
    heap->free_list   = calloc(heap->free_cap, sizeof(*heap->free_list));
    heap->fd          = sim_shm_create(name, hdr, capacity);
    if ((heap->free_list == NULL) || (heap->fd < 0)) {
        goto err;
    }
    heap->hdr                 = *hdr;
    heap->ino                 = sim_fd_ino(heap->fd);
    heap->free_list[0].off    = 0;
    heap->free_list[0].len    = capacity;
    heap->free_count          = 1;
    if (sim_heap_map(heap) != 0) {
        goto err;
    }
    return heap;

err:
    if (heap->fd >= 0) {
        close(heap->fd);
    }
    free(heap->free_list);
    free(heap);
    return NULL;
}

sim_heap_t *sim_heap_open(int fd, int cpu_visible)
{
    sim_heap_t *heap = calloc(1, sizeof(*heap));

    if (heap == NULL) {
        return NULL;
    }
    heap->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if ((heap->fd < 0) || (sim_shm_read_header(heap->fd, &heap->hdr) != 0)) {
        goto err;
    }
    heap->capacity    = heap->hdr.size;
    heap->cpu_visible = cpu_visible;
    heap->ino         = sim_fd_ino(heap->fd);
    if (sim_heap_map(heap) != 0) {
        goto err;
    }
    return heap;

err:
    if (heap->fd >= 0) {
        close(heap->fd);
    }
    free(heap);
    return NULL;
}

void sim_heap_destroy(sim_heap_t *heap)
{
    if (heap->shadow != heap->user) {
        munmap(heap->shadow, heap->capacity);
    }
    munmap(heap->user, heap->capacity);
    close(heap->fd);
    free(heap->free_list);
    free(heap);
}

int sim_heap_contains(const sim_heap_t *heap, uintptr_t addr)
{
    return (addr >= (uintptr_t)heap->user) &&
           (addr - (uintptr_t)heap->user < heap->capacity);
}

static int sim_heap_free_reserve(sim_heap_t *heap, size_t extra)
{
    size_t cap;
    void *list;

    if (heap->free_count + extra <= heap->free_cap) {
        return 0;
    }
    cap  = heap->free_cap * 2 + extra;
    list = realloc(heap->free_list, cap * sizeof(*heap->free_list));
    if (list == NULL) {
        return -1;
    }
    heap->free_list = list;
    heap->free_cap  = cap;
    return 0;
}

int sim_heap_alloc(sim_heap_t *heap, size_t size, size_t align, size_t *off_p)
{
    size_t i, start, end, aoff;

    if ((heap->free_list == NULL) || (sim_heap_free_reserve(heap, 1) != 0)) {
        return -1;
    }
    for (i = 0; i < heap->free_count; ++i) {
        start = heap->free_list[i].off;
        end   = start + heap->free_list[i].len;
        aoff  = SIM_ALIGN_UP(start, align);
        if ((aoff > end) || (end - aoff < size)) {
            continue;
        }
        /* Carve [aoff, aoff+size): keep the head and the tail pieces. */
        if (aoff > start) {
            heap->free_list[i].len = aoff - start;
            if (aoff + size < end) {
                memmove(&heap->free_list[i + 2], &heap->free_list[i + 1],
                        (heap->free_count - i - 1) * sizeof(*heap->free_list));
                heap->free_list[i + 1].off = aoff + size;
                heap->free_list[i + 1].len = end - (aoff + size);
                ++heap->free_count;
            }
        } else if (aoff + size < end) {
            heap->free_list[i].off = aoff + size;
            heap->free_list[i].len = end - (aoff + size);
        } else {
            memmove(&heap->free_list[i], &heap->free_list[i + 1],
                    (heap->free_count - i - 1) * sizeof(*heap->free_list));
            --heap->free_count;
        }
        heap->used += size;
        *off_p      = aoff;
        return 0;
    }
    return -1;
}

void sim_heap_free(sim_heap_t *heap, size_t off, size_t len)
{
    size_t i, start, end, page = 4096;

    if ((heap->free_list == NULL) || (sim_heap_free_reserve(heap, 1) != 0)) {
        return; /* leak rather than corrupt */
    }
    for (i = 0; (i < heap->free_count) && (heap->free_list[i].off < off); ++i) {
    }
    memmove(&heap->free_list[i + 1], &heap->free_list[i],
            (heap->free_count - i) * sizeof(*heap->free_list));
    heap->free_list[i].off = off;
    heap->free_list[i].len = len;
    ++heap->free_count;
    heap->used -= len;

    /* Give whole pages back to the kernel, so that tests which allocate and
     * free a lot do not grow; stale data reads as zeros afterwards. */
    start = SIM_ALIGN_UP(off, page);
    end   = ((off + len) / page) * page;
    if (end > start) {
        fallocate(heap->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                  (off_t)(SIM_SHM_HEADER_SIZE + start), (off_t)(end - start));
    }

    /* Coalesce with the next, then with the previous block. */
    if ((i + 1 < heap->free_count) &&
        (heap->free_list[i].off + heap->free_list[i].len ==
         heap->free_list[i + 1].off)) {
        heap->free_list[i].len += heap->free_list[i + 1].len;
        memmove(&heap->free_list[i + 1], &heap->free_list[i + 2],
                (heap->free_count - i - 2) * sizeof(*heap->free_list));
        --heap->free_count;
    }
    if ((i > 0) && (heap->free_list[i - 1].off + heap->free_list[i - 1].len ==
                    heap->free_list[i].off)) {
        heap->free_list[i - 1].len += heap->free_list[i].len;
        memmove(&heap->free_list[i], &heap->free_list[i + 1],
                (heap->free_count - i - 1) * sizeof(*heap->free_list));
        --heap->free_count;
    }
}
