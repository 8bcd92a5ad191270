/**
 * @file cudasim.h
 * Internal declarations of cudasim, the user-space model of the CUDA driver
 * API that GPU-less CI loads as libcuda.so.1 (see docs/cudasim.md).
 *
 * Shape of the model:
 * - one global lock (sim.lock) serialises every API call; API functions take
 *   it with sim_enter() and drop it with sim_leave(). Functions named *_locked
 *   expect the caller to hold it. Waits (stream synchronisation) use
 *   sim.progress, a condition variable on the same lock.
 * - device memory is host memory in a memfd, mapped twice: the "user" view at
 *   the address the application sees (PROT_NONE unless CUDASIM_CPU_ACCESS=1,
 *   because real device memory is not readable by the CPU) and a "shadow"
 *   read-write view that copies and memsets go through.
 * - every live allocation is a sim_range_t in an address-ordered registry
 *   (sim_range.c), which answers pointer attributes and translates device
 *   addresses to shadow addresses.
 *
 * This library must not use libucs: it stands in for a third-party driver.
 */
#ifndef CUDASIM_H_
#define CUDASIM_H_

#include <cuda.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SIM_MAX_DEVICES       16
#define SIM_DRIVER_VERSION    13000
/** VMM granularity (minimum and recommended), as on an H200. */
#define SIM_GRANULARITY       (2ul << 20)
/** Payload offset in every memfd: page aligned even with 64 KiB pages. */
#define SIM_SHM_HEADER_SIZE   (64ul << 10)
/** Pools get physical memory in chunks of this size (MAPPING_SIZE). */
#define SIM_POOL_CHUNK        (32ul << 20)
/** Alignment of small cuMemAlloc / pool allocations. */
#define SIM_SMALL_ALIGN       512ul

#define SIM_MAGIC_CTX         0x43545831u /* "CTX1" */
#define SIM_MAGIC_STREAM      0x53544d31u
#define SIM_MAGIC_EVENT       0x45564e31u
#define SIM_MAGIC_POOL        0x504f4c31u
#define SIM_MAGIC_VMM         0x564d4d31u

#define SIM_ARRAY_SIZE(_a)    (sizeof(_a) / sizeof((_a)[0]))
#define SIM_ALIGN_UP(_x, _a)  ((((_x) + (_a) - 1) / (_a)) * (_a))

struct sim_heap;
struct sim_vmm_handle;
struct sim_reservation;
struct sim_ipc_import;

/** Settings read from the environment at cuInit (docs/cudasim.md). */
typedef struct sim_config {
    int      num_devices;    /**< CUDASIM_DEVICES, default 2 */
    int      async;          /**< CUDASIM_ASYNC: stream work on worker threads */
    unsigned async_delay_us; /**< CUDASIM_ASYNC_DELAY_US, delay per operation */
    int      late_landing;   /**< CUDASIM_LATE_LANDING: synchronous calls the
                                  driver may return from early are held until
                                  their stream is synchronised with */
    int      fabric;         /**< CUDASIM_FABRIC: fabric handles permitted */
    int      cpu_access;     /**< CUDASIM_CPU_ACCESS: device memory CPU-visible */
    int      memops;         /**< CUDASIM_MEMOPS: stream memory operations work */
    int      kernels;        /**< CUDASIM_KERNELS: modules load */
    int      peer;           /**< CUDASIM_PEER: devices report peer access */
    long     launch_fail;    /**< CUDASIM_LAUNCH_FAIL: launches from this one
                                  (1-based) fail; 0: none */
    size_t   device_mem;     /**< CUDASIM_DEVICE_MEM_MB, per device */
} sim_config_t;

/** What kind of allocation a registry range is. */
typedef enum sim_mem_kind {
    SIM_MEM_LEGACY,          /**< cuMemAlloc, cuMemAllocPitch */
    SIM_MEM_MANAGED,         /**< cuMemAllocManaged */
    SIM_MEM_HOST,            /**< cuMemHostAlloc, cuMemAllocHost */
    SIM_MEM_HOST_REGISTERED, /**< cuMemHostRegister */
    SIM_MEM_POOL,            /**< stream-ordered allocation from a local pool */
    SIM_MEM_POOL_IMPORT,     /**< cuMemPoolImportPointer */
    SIM_MEM_VMM,             /**< one cuMemMap of a physical handle */
    SIM_MEM_LEGACY_IMPORT    /**< cuIpcOpenMemHandle */
} sim_mem_kind_t;

/** One live allocation (or mapping) in the address registry. */
typedef struct sim_range {
    uintptr_t               base;
    size_t                  size;
    sim_mem_kind_t          kind;
    int                     device;      /**< ordinal the memory belongs to */
    CUcontext               ctx;         /**< context current at allocation */
    unsigned long long      buffer_id;   /**< unique per allocation */
    char                    *shadow;     /**< where the model touches byte 0 */
    int                     cpu_visible; /**< memory type is HOST */
    int                     sync_memops;
    unsigned                host_flags;  /**< cuMemHostAlloc/Register flags */
    /* heap-backed kinds (LEGACY, POOL): the block in the heap */
    struct sim_heap         *heap;
    size_t                  heap_off;
    size_t                  heap_len;
    CUmemoryPool            pool;        /**< POOL, POOL_IMPORT */
    unsigned                import_refs; /**< POOL_IMPORT: imports of it */
    /* VMM */
    struct sim_vmm_handle   *handle;
    size_t                  handle_off;
    struct sim_reservation  *resv;
    unsigned long long      access_mask; /**< VMM: devices with RW access */
    /* LEGACY_IMPORT */
    struct sim_ipc_import   *import;
} sim_range_t;

/**
 * Header at offset 0 of every memfd the model creates. An importer reads it
 * to learn what the file descriptor it was handed stands for.
 */
typedef struct sim_shm_header {
    char               magic[8];      /**< "CUDASIM" */
    uint32_t           kind;          /**< sim_shm_kind_t */
    int32_t            device;
    uint32_t           handle_types;  /**< CUmemAllocationHandleType mask */
    uint32_t           location_type; /**< CUmemLocationType */
    uint64_t           size;          /**< payload bytes */
    uint64_t           object_id;     /**< identifies a pool across processes */
    int32_t            owner_pid;
} sim_shm_header_t;

typedef enum sim_shm_kind {
    SIM_SHM_ARENA = 1, /**< a device's cuMemAlloc memory */
    SIM_SHM_POOL  = 2, /**< a memory pool */
    SIM_SHM_VMM   = 3  /**< one cuMemCreate physical allocation */
} sim_shm_kind_t;

/**
 * A memfd-backed address region with a first-fit sub-allocator: a device's
 * cuMemAlloc arena, or a memory pool. Imported pools have no free list.
 */
typedef struct sim_heap {
    int              fd;
    uint64_t         ino;
    size_t           capacity;
    char             *user;        /**< what the application sees */
    char             *shadow;      /**< read-write view used by the model */
    int              cpu_visible;
    sim_shm_header_t hdr;
    struct {
        size_t off;
        size_t len;
    }                *free_list;   /**< sorted by offset, coalesced */
    size_t           free_count;
    size_t           free_cap;
    size_t           used;
} sim_heap_t;

/** A device (always present) with its primary context and pools. */
typedef struct sim_device {
    int                 ordinal;
    CUuuid              uuid;
    struct CUctx_st     *primary;
    unsigned            primary_refs;
    unsigned            primary_flags;
    sim_heap_t          *arena;        /**< cuMemAlloc memory, created lazily */
    CUmemoryPool        default_pool;  /**< created lazily */
    CUmemoryPool        current_pool;  /**< NULL means the default pool */
    size_t              used;          /**< bytes allocated, for cuMemGetInfo */
} sim_device_t;

struct CUctx_st {
    uint32_t            magic;
    int                 device;
    unsigned            flags;
    int                 primary;
    unsigned long long  id;
    unsigned long long  peer_mask;     /**< devices with peer access enabled */
    struct CUstream_st  *legacy;       /**< the NULL stream of this context */
    struct CUctx_st     *next;
};

/** Stream operation, executed in order on its stream. */
typedef enum sim_op_type {
    SIM_OP_COPY,
    SIM_OP_MEMSET,
    SIM_OP_HOSTFN,
    SIM_OP_WAIT,      /**< wait until another stream reached a point */
    SIM_OP_EVENT,     /**< take the event's timestamp */
    SIM_OP_POOL_FREE  /**< return a stream-ordered allocation to its pool */
} sim_op_type_t;

/** A contiguous piece of a copy or memset, in shadow (model) addresses. */
typedef struct sim_seg {
    char       *dst;
    const char *src;
    size_t     len;
} sim_seg_t;

typedef struct sim_op {
    sim_op_type_t      type;
    uint64_t           seq;
    struct sim_op      *next;
    sim_seg_t          *segs;
    size_t             nsegs;
    void               *staging;   /**< captured pageable source, freed after */
    unsigned           value;      /**< memset value */
    unsigned           elem_size;  /**< memset element size: 1, 2 or 4 */
    CUhostFn           fn;
    void               *arg;
    struct CUstream_st *wait_stream;
    uint64_t           wait_seq;
    struct CUevent_st  *event;
    sim_range_t        *range;     /**< POOL_FREE */
    int                late;       /**< a "synchronous" call that may return
                                        before it lands (CUDASIM_LATE_LANDING):
                                        held until its stream is waited for */
} sim_op_t;

typedef enum sim_stream_kind {
    SIM_STREAM_USER,
    SIM_STREAM_LEGACY,
    SIM_STREAM_PER_THREAD
} sim_stream_kind_t;

struct CUstream_st {
    uint32_t            magic;
    sim_stream_kind_t   kind;
    CUcontext           ctx;
    unsigned            flags;
    int                 priority;
    unsigned long long  id;
    sim_op_t            *head;
    sim_op_t            *tail;
    sim_op_t            *held_head;  /**< late operations not yet released */
    sim_op_t            *held_tail;
    uint64_t            submitted;   /**< seq of the last queued operation */
    uint64_t            completed;   /**< seq of the last finished operation */
    pthread_t           worker;
    int                 has_worker;
    int                 stop;
    struct CUstream_st  *next;
};

struct CUevent_st {
    uint32_t            magic;
    CUcontext           ctx;
    unsigned            flags;
    struct CUstream_st  *stream;     /**< NULL when complete or never recorded */
    uint64_t            seq;
    int                 recorded;
    int                 has_time;
    double              time_ms;
    struct CUevent_st   *next;
};

struct CUmemPoolHandle_st {
    uint32_t                  magic;
    CUmemPoolProps            props;
    int                       device;     /**< owner device (location id) */
    int                       is_default;
    int                       imported;
    int                       destroyed;  /**< destroy requested */
    sim_heap_t                *heap;
    unsigned                  live;       /**< allocations/imports alive */
    CUmemAccess_flags         access[SIM_MAX_DEVICES];
    unsigned long long        release_threshold;
    int                       reuse[3];   /**< the three REUSE_* attributes */
    unsigned long long        used_high;
    struct CUmemPoolHandle_st *next;
};

/** A physical allocation of the VMM API (CUmemGenericAllocationHandle). */
typedef struct sim_vmm_handle {
    uint32_t              magic;
    int                   fd;
    uint64_t              ino;
    size_t                size;
    CUmemAllocationProp   prop;
    int                   imported;
    unsigned              user_refs;  /**< creation + retains not released */
    unsigned              refs;       /**< user_refs + mappings */
    char                  *shadow;
    unsigned long long    id;
    struct sim_vmm_handle *next;
} sim_vmm_handle_t;

/** A cuMemAddressReserve range. */
typedef struct sim_reservation {
    uintptr_t              base;
    size_t                 size;
    struct sim_reservation *next;
} sim_reservation_t;

/** Global state of the model. */
typedef struct sim_state {
    pthread_mutex_t    lock;
    pthread_cond_t     progress;       /**< any stream made progress */
    int                initialized;
    int                poisoned;       /**< forked after cuInit */
    pid_t              pid;
    sim_config_t       cfg;
    sim_device_t       devices[SIM_MAX_DEVICES];
    unsigned long long next_buffer_id;
    unsigned long long next_object_id;
    struct CUctx_st    *contexts;
    struct CUstream_st *streams;
    struct CUevent_st  *events;
    CUmemoryPool       pools;
    sim_vmm_handle_t   *handles;
    sim_reservation_t  *reservations;
    struct sim_ipc_import *imports;
} sim_state_t;

extern sim_state_t sim;

/* ---- sim_core.c: entry, configuration, diagnostics ---- */

/**
 * Every API call starts here: fails with NOT_INITIALIZED before cuInit or in
 * a child forked after cuInit (as the real driver does), NOT_PERMITTED from
 * a host function running on a stream; otherwise takes the global lock.
 */
CUresult sim_enter(void);
/** Like sim_enter() for calls that the driver allows before cuInit. */
CUresult sim_enter_uninit(void);
void sim_leave(void);
/** Report a call the model does not implement; returns NOT_SUPPORTED. */
int sim_unmodelled(const char *name);
/** Diagnostic on stderr, prefixed "cudasim: ". */
void sim_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
unsigned long long sim_new_id(void);
double sim_now_ms(void);
/** Set while a host function runs on this thread. */
extern __thread int sim_in_callback;

/* ---- sim_device.c / sim_context.c ---- */
CUresult sim_check_device(CUdevice dev);
int sim_ctx_valid(CUcontext ctx);
/** Current context of the calling thread, or NULL. */
CUcontext sim_ctx_current(void);
/** Current context or CUDA_ERROR_INVALID_CONTEXT. */
CUresult sim_ctx_require(CUcontext *ctx_p);

/* ---- sim_kernel.c ---- */
/** Exported for tests: cuLaunchKernel calls of this process, refused ones
 *  included. */
unsigned long long cudasim_kernel_launch_calls(void);

/* ---- sim_copy.c ---- */
/** Add the pieces of a copy of [src, src + len) to [dst, ...) to @a op, as a
 *  copy on @a stream would make them. */
CUresult sim_copy_op_add_locked(sim_op_t *op, uintptr_t dst, uintptr_t src,
                                size_t len, CUstream stream);

/* ---- sim_range.c: address registry ---- */
sim_range_t *sim_range_new(sim_mem_kind_t kind, uintptr_t base, size_t size,
                           int device);
int sim_range_insert(sim_range_t *range);
void sim_range_remove(sim_range_t *range);
/** Range containing @a addr, or NULL. */
sim_range_t *sim_range_find(uintptr_t addr);
/** Whether @a device may access the memory of @a range as its access
 *  settings say (VMM: cuMemSetAccess; pool memory: cuMemPoolSetAccess;
 *  other kinds: always). */
int sim_range_device_access(const sim_range_t *range, int device);
/** Whether synchronous operations on @a range complete before they return
 *  because of its SYNC_MEMOPS attribute (set, and a kind where the driver
 *  honours it). */
int sim_range_sync_memops(const sim_range_t *range);
/** Whether any range overlaps [base, base+size). */
int sim_range_overlaps(uintptr_t base, size_t size);
/** Whether @a addr lies in memory the model manages but no range covers. */
int sim_addr_is_dangling(uintptr_t addr);

/* ---- sim_heap.c: memfd-backed memory ---- */
int sim_shm_create(const char *name, sim_shm_header_t *hdr, size_t payload);
int sim_shm_read_header(int fd, sim_shm_header_t *hdr);
uint64_t sim_fd_ino(int fd);
/** Map @a len bytes of @a fd at payload offset @a off, aligned to @a align. */
void *sim_map(int fd, size_t off, size_t len, int prot, size_t align);
int sim_user_prot(int cpu_visible);
sim_heap_t *sim_heap_create(const char *name, sim_shm_header_t *hdr,
                            size_t capacity, int cpu_visible);
sim_heap_t *sim_heap_open(int fd, int cpu_visible);
int sim_heap_alloc(sim_heap_t *heap, size_t size, size_t align, size_t *off_p);
void sim_heap_free(sim_heap_t *heap, size_t off, size_t len);
void sim_heap_destroy(sim_heap_t *heap);
int sim_heap_contains(const sim_heap_t *heap, uintptr_t addr);

/* ---- sim_mem.c ---- */
size_t sim_alloc_align(size_t size);
/** Unregister and free a range of any heap-backed or host kind (lock held). */
void sim_range_release_locked(sim_range_t *range);
/** Free a range already removed from the registry (lock held). */
void sim_range_free_locked(sim_range_t *range);

/* ---- sim_pool.c ---- */
CUresult sim_pool_default_locked(int device, CUmemoryPool *pool_p);
int sim_pool_valid(CUmemoryPool pool);
/** Return a pool allocation's block (lock held); may finish a destroy. */
void sim_pool_release_locked(sim_range_t *range);
void sim_pool_unref_locked(CUmemoryPool pool);

/* ---- sim_vmm.c ---- */
sim_vmm_handle_t *sim_vmm_lookup(CUmemGenericAllocationHandle h);
sim_vmm_handle_t *sim_vmm_handle_new(int fd, size_t size,
                                     const CUmemAllocationProp *prop,
                                     int imported);
void sim_vmm_unref_locked(sim_vmm_handle_t *handle);
sim_reservation_t *sim_reservation_find(uintptr_t addr);

/* ---- sim_ipc.c ---- */
/** Fetch another process's fd (pidfd_getfd, else /proc/<pid>/fd). */
int sim_fetch_remote_fd(pid_t pid, int remote_fd, uint64_t ino);

int sim_ipc_import_contains(uintptr_t addr);

/* ---- sim_stream.c ---- */
/**
 * Resolve a stream argument (NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD or
 * a handle); @a ptsz selects the per-thread default stream for NULL.
 */
CUresult sim_stream_resolve(CUstream h, int ptsz, CUstream *stream_p);
/**
 * Queue @a op on @a stream (lock held). Without CUDASIM_ASYNC it runs
 * before this returns; the lock may be dropped meanwhile. An operation
 * marked late is held instead, until something synchronises with its
 * stream (see sim_stream.c).
 */
void sim_stream_submit_locked(CUstream stream, sim_op_t *op);
/** Wait until @a stream finished everything queued so far (lock held). */
void sim_stream_wait_locked(CUstream stream);
/**
 * Land every held late operation that writes into @a range, with whatever
 * was queued before it on its stream (lock held): what setting SYNC_MEMOPS
 * on a pointer does to synchronous operations still pending on it.
 */
void sim_stream_land_range_locked(const sim_range_t *range);
/** Wait for every stream of the process (lock held). */
void sim_drain_all_locked(void);
sim_op_t *sim_op_new(sim_op_type_t type);
/** Free an operation that was never submitted (or has finished). */
void sim_op_free(sim_op_t *op);

#endif
