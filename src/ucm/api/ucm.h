/**
 * @file ucm.h
 * Public interface of libucm: an event bus for memory events.
 *
 * Other libraries (the memory-type cache in libucs, registration caches,
 * Open MPI) subscribe to events with ucm_set_event_handler(). libucm and its
 * modules produce them:
 *  - MEM_TYPE_ALLOC / MEM_TYPE_FREE from the CUDA driver hooks of the module
 *    libucm_cuda.so (every allocation kind: legacy, stream-ordered pools,
 *    VMM mappings, managed, pinned host, IPC and pool imports);
 *  - VM_MAPPED / VM_UNMAPPED from callers that own their memory hooks and
 *    report through ucm_vm_mmap() / ucm_vm_munmap() (declared "external"
 *    with ucm_set_external_event()), and from the CUDA hooks for CPU-visible
 *    CUDA memory (pinned host and managed allocations).
 *
 * Names, event bit values and the layout of the first members of
 * ucm_event_t follow upstream UCX 1.13 so that programs built against
 * upstream's header run on this library. The memory-type event carries
 * extra members appended after upstream's; see ucm_event_t.
 */
#ifndef UCM_H_
#define UCM_H_

#include <ucs/config/types.h>
#include <ucs/memory/memory_type.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/sys/topo_device.h>
#include <ucs/type/status.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

BEGIN_C_DECLS

/**
 * Kinds of events, as bits of a mask. Values are those of upstream UCX.
 */
typedef enum ucm_event_type {
    UCM_EVENT_NONE                = 0,

    /* System-call events. Declared for source compatibility: this library
     * installs no system-call hooks, so they are never produced and
     * ucm_set_event_handler() refuses them unless FLAG_NO_INSTALL is given
     * or they were declared external. */
    UCM_EVENT_MMAP                = UCS_BIT(0),
    UCM_EVENT_MUNMAP              = UCS_BIT(1),
    UCM_EVENT_MREMAP              = UCS_BIT(2),
    UCM_EVENT_SHMAT               = UCS_BIT(3),
    UCM_EVENT_SHMDT               = UCS_BIT(4),
    UCM_EVENT_SBRK                = UCS_BIT(5),
    UCM_EVENT_MADVISE             = UCS_BIT(6),
    UCM_EVENT_BRK                 = UCS_BIT(7),

    /** A virtual address range became mapped (handlers run after). */
    UCM_EVENT_VM_MAPPED           = UCS_BIT(16),
    /** A virtual address range is about to be unmapped (handlers run before). */
    UCM_EVENT_VM_UNMAPPED         = UCS_BIT(17),

    /** Memory of a non-host type was allocated (handlers run after success). */
    UCM_EVENT_MEM_TYPE_ALLOC      = UCS_BIT(20),
    /** Memory of a non-host type is about to be freed (handlers run before). */
    UCM_EVENT_MEM_TYPE_FREE       = UCS_BIT(21),

    /** Flag: register the handler without installing any hook. */
    UCM_EVENT_FLAG_NO_INSTALL     = UCS_BIT(24),
    /** Flag: before ucm_set_event_handler() returns, call the new handler
     *  with a MEM_TYPE_ALLOC event for every allocation the hooks know to
     *  be alive (those made while the hooks were installed). */
    UCM_EVENT_FLAG_EXISTING_ALLOC = UCS_BIT(25)
} ucm_event_type_t;


/**
 * How an allocation was made. Tells its owner what export mechanism (if
 * any) applies and what its extent means.
 */
typedef enum ucm_mem_alloc_kind {
    UCM_MEM_ALLOC_KIND_UNKNOWN     = 0, /**< not seen by the hooks */
    UCM_MEM_ALLOC_KIND_LEGACY      = 1, /**< cuMemAlloc, cuMemAllocPitch */
    UCM_MEM_ALLOC_KIND_POOL        = 2, /**< stream-ordered, from a memory pool */
    UCM_MEM_ALLOC_KIND_VMM         = 3, /**< cuMemMap of a physical allocation */
    UCM_MEM_ALLOC_KIND_MANAGED     = 4, /**< cuMemAllocManaged */
    UCM_MEM_ALLOC_KIND_HOST_PINNED = 5, /**< cuMemHostAlloc, cuMemAllocHost */
    UCM_MEM_ALLOC_KIND_IPC_IMPORT  = 6, /**< cuIpcOpenMemHandle */
    UCM_MEM_ALLOC_KIND_POOL_IMPORT = 7, /**< cuMemPoolImportPointer */
    UCM_MEM_ALLOC_KIND_LAST
} ucm_mem_alloc_kind_t;


/**
 * Export handle types an allocation allows (mask). The low bits have the
 * values of the CUDA driver's CUmemAllocationHandleType so that a driver
 * mask converts by a plain copy; LEGACY_IPC marks memory that
 * cuIpcGetMemHandle accepts.
 */
typedef enum ucm_mem_handle_type {
    UCM_MEM_HANDLE_TYPE_POSIX_FD   = UCS_BIT(0),
    UCM_MEM_HANDLE_TYPE_WIN32      = UCS_BIT(1),
    UCM_MEM_HANDLE_TYPE_WIN32_KMT  = UCS_BIT(2),
    UCM_MEM_HANDLE_TYPE_FABRIC     = UCS_BIT(3),
    UCM_MEM_HANDLE_TYPE_LEGACY_IPC = UCS_BIT(16)
} ucm_mem_handle_type_t;


/** Flags of a memory-type event (mem_type.flags). */
typedef enum ucm_mem_type_flag {
    /** Memory mapped from another process's export (IPC or pool import):
     *  this process may use it but must not export it again. */
    UCM_MEM_TYPE_FLAG_IMPORTED     = UCS_BIT(0),
    /** Set on a MEM_TYPE_ALLOC event that re-announces memory whose free
     *  was already reported but then failed in the driver: the memory is
     *  still allocated. */
    UCM_MEM_TYPE_FLAG_FREE_FAILED  = UCS_BIT(1),
    /** Set on the MEM_TYPE_ALLOC events of a replay
     *  (UCM_EVENT_FLAG_EXISTING_ALLOC). The replay runs while other threads
     *  keep reporting, so the allocation may have been freed, and its free
     *  delivered, before the replayed event arrives: a handler that stores
     *  it must first check, under the lock that also orders its handling of
     *  frees, that the allocation is still live. */
    UCM_MEM_TYPE_FLAG_REPLAYED     = UCS_BIT(2)
} ucm_mem_type_flag_t;


/**
 * Data of one event. Which member is valid depends on the event type.
 *
 * Compatibility of mem_type: its first three members have upstream's
 * names, types and offsets; the members after mem_type are appended, which
 * makes the union larger than upstream's. This is safe because clients only
 * receive events (the library owns the storage and passes a pointer); no
 * function of this API takes an event built by the client, so code built
 * against upstream's smaller union reads the members it knows at the same
 * offsets and never touches the rest.
 */
typedef union ucm_event {
    struct {
        void               *result;
        void               *address;
        size_t             size;
        int                prot;
        int                flags;
        int                fd;
        off_t              offset;
    } mmap;

    struct {
        int                result;
        void               *address;
        size_t             size;
    } munmap;

    struct {
        void               *result;
        void               *address;
        size_t             old_size;
        size_t             new_size;
        int                flags;
        void               *new_address; /**< as upstream 1.16+ */
    } mremap;

    struct {
        void               *result;
        int                shmid;
        const void         *shmaddr;
        int                shmflg;
    } shmat;

    struct {
        int                result;
        const void         *shmaddr;
    } shmdt;

    struct {
        void               *result;
        intptr_t           increment;
    } sbrk;

    struct {
        int                result;
        void               *addr;
        size_t             length;
        int                advice;
    } madvise;

    struct {
        int                result;
        void               *addr;
    } brk;

    /* UCM_EVENT_VM_MAPPED, UCM_EVENT_VM_UNMAPPED */
    struct {
        void               *address;
        size_t             size;
    } vm_mapped, vm_unmapped;

    /* UCM_EVENT_MEM_TYPE_ALLOC, UCM_EVENT_MEM_TYPE_FREE */
    struct {
        /* As upstream: */
        void               *address;  /**< start of the range */
        size_t             size;      /**< length of the range in bytes */
        ucs_memory_type_t  mem_type;  /**< UCS_MEMORY_TYPE_UNKNOWN: the
                                           hooks could not tell; ask the
                                           driver */
        ucs_sys_device_t   sys_dev;   /**< as upstream 1.16+; always
                                           UCS_SYS_DEVICE_ID_UNKNOWN here
                                           (@a device is the ordinal) */
        uint8_t            mem_flags; /**< as upstream 1.16+; always 0 here,
                                           which tells upstream's readers
                                           to detect the attributes */
        /* Appended by this library: */
        int                device;    /**< device ordinal; -1 for memory
                                           located on the host or unknown */
        ucm_mem_alloc_kind_t alloc_kind; /**< how it was allocated */
        uint32_t           handle_types; /**< ucm_mem_handle_type_t mask of
                                              allowed export mechanisms */
        void               *pool;     /**< CUmemoryPool of POOL and
                                           POOL_IMPORT memory, else NULL */
        void               *alloc_base;   /**< start of the exportable object
                                               the range belongs to: the
                                               allocation; for VMM, the
                                               address at which offset 0 of
                                               the physical allocation would
                                               lie (address - map offset) */
        size_t             alloc_length;  /**< size of that object (for VMM,
                                               of the physical allocation) */
        uint32_t           flags;     /**< ucm_mem_type_flag_t */
    } mem_type;
} ucm_event_t;


/**
 * An event handler.
 *
 * @param event_type  the single event being reported.
 * @param event       its data; valid only during the call.
 * @param arg         the argument given to ucm_set_event_handler().
 *
 * Handlers run in the thread that caused the event, in ascending priority.
 * A handler may call CUDA: the hooks do not report allocations made by a
 * thread while it runs a handler (no recursion). A handler must not set or
 * unset handlers (refused with an error) and must not block on a thread
 * that may itself be reporting an event.
 */
typedef void (*ucm_event_callback_t)(ucm_event_type_t event_type,
                                     ucm_event_t *event, void *arg);


/**
 * Subscribe to memory events.
 *
 * Unless UCM_EVENT_FLAG_NO_INSTALL is given, the hooks that produce the
 * requested events are installed first (for MEM_TYPE events: the CUDA
 * driver hooks, in the mode UCX_MEM_CUDA_HOOK_MODE selects). Events that
 * were declared external need no hooks.
 *
 * @param events    mask of ucm_event_type_t, with optional flags.
 * @param priority  order of the handlers: lower values are called first;
 *                  handlers of equal priority in the order they were set.
 *                  Allocation events are always reported after the
 *                  allocation succeeded and free events before the memory is
 *                  released, whatever the priority.
 * @param cb        handler.
 * @param arg       passed to @a cb.
 *
 * @return UCS_OK; UCS_ERR_INVALID_PARAM for a NULL handler or an empty
 *         mask; UCS_ERR_UNSUPPORTED when no installed hook can produce a
 *         requested event (no CUDA module, UCX_MEM_CUDA_HOOK_MODE=none, hooks
 *         that failed to install, system-call events); UCS_ERR_BUSY when
 *         called from inside a handler; UCS_ERR_INVALID_PARAM for a bad
 *         UCX_MEM_* value. On error the handler is not registered.
 *
 * Thread safe. Once it returns, every later event reaches the handler.
 */
ucs_status_t ucm_set_event_handler(int events, int priority,
                                   ucm_event_callback_t cb, void *arg);


/**
 * Unsubscribe @a cb/@a arg from @a events. The handler is removed when none
 * of its events are left. Hooks stay installed.
 *
 * Thread safe. When it returns, no thread is running or will run the
 * handler for the removed events, so @a arg may be released. Must not be
 * called from inside a handler (refused with an error message).
 */
void ucm_unset_event_handler(int events, ucm_event_callback_t cb, void *arg);


/**
 * Declare @a events external: the caller reports them itself (for example
 * Open MPI, which has its own memory hooks, calls ucm_vm_munmap()), so
 * handlers for them need no hooks. Thread safe.
 */
void ucm_set_external_event(int events);


/** Undo ucm_set_external_event() for @a events. Thread safe. */
void ucm_unset_external_event(int events);


/**
 * Check that the hooks producing @a events are installed and still in
 * place (a bistro patch not overwritten by someone else, every GOT entry
 * still pointing to the hook).
 *
 * @return UCS_OK; UCS_ERR_UNSUPPORTED when an event has no installed
 *         producer; UCS_ERR_NO_ELEM when a hook was found removed.
 */
ucs_status_t ucm_test_events(int events);


/**
 * Check that every event in @a events is declared external, so that
 * handlers for it are driven by calls such as ucm_vm_munmap().
 *
 * @return UCS_OK or UCS_ERR_UNSUPPORTED.
 */
ucs_status_t ucm_test_external_events(int events);


/**
 * Report that [@a addr, @a addr + @a length) became mapped: call the
 * UCM_EVENT_VM_MAPPED handlers. Thread safe.
 */
void ucm_vm_mmap(void *addr, size_t length);


/**
 * Report that [@a addr, @a addr + @a length) is about to be unmapped: call
 * the UCM_EVENT_VM_UNMAPPED handlers. Thread safe.
 */
void ucm_vm_munmap(void *addr, size_t length);

END_C_DECLS

#endif
