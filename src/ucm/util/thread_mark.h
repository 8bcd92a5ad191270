/**
 * @file thread_mark.h
 * Per-thread marks without thread-local storage: "this thread is inside a
 * memory-event handler", "this thread is inside a CUDA hook".
 *
 * Why not __thread: libucm and its CUDA module are usually dlopen()ed (Open
 * MPI loads its pml, Python its extensions), so their TLS is dynamic, and
 * the first access from a thread makes glibc allocate that thread's block
 * with malloc(). Events are reported from inside malloc() and free() (Open
 * MPI reports heap trims from its sbrk hook while glibc holds the arena
 * lock), so that first access deadlocks the thread on a lock it holds.
 * Initial-exec TLS would avoid the allocation, but it needs static TLS
 * space that a late dlopen() may not find; so the marks live in a fixed
 * table instead, keyed by pthread_self(), which only reads the thread
 * pointer.
 *
 * A thread holds a slot only while one of its marks is non-zero, so the
 * table bounds the threads that are inside hooks or handlers at the same
 * moment, not the threads of the process. Everything here is safe in any
 * context: no allocation, no lock, no logging.
 */
#ifndef UCM_UTIL_THREAD_MARK_H_
#define UCM_UTIL_THREAD_MARK_H_

#include <ucs/sys/compiler_def.h>

BEGIN_C_DECLS

/** What a mark says about the thread. */
typedef enum {
    UCM_THREAD_MARK_HANDLER,   /**< running memory-event handlers */
    UCM_THREAD_MARK_CUDA_HOOK, /**< inside a CUDA hook (or its replay) */
    UCM_THREAD_MARK_LAST
} ucm_thread_mark_t;

/** Threads that can hold marks at the same moment. */
#define UCM_THREAD_MARK_SLOTS 256

/**
 * Increment the calling thread's @a mark.
 *
 * @return the value before the increment, or -1 when every slot is taken
 *         by other threads: then nothing was recorded, and the caller must
 *         not call ucm_thread_mark_leave().
 */
int ucm_thread_mark_enter(ucm_thread_mark_t mark);

/** Decrement the calling thread's @a mark (taken by a successful enter). */
void ucm_thread_mark_leave(ucm_thread_mark_t mark);

/** The calling thread's @a mark: 0 when it is not marked. */
unsigned ucm_thread_mark_get(ucm_thread_mark_t mark);

END_C_DECLS

#endif
