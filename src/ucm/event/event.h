/**
 * @file event.h
 * Inside of the event bus: how producers (hook modules) plug in and report.
 *
 * A producer registers an installer that says which events it can produce
 * and how to install, test and remove its hooks. ucm_set_event_handler()
 * asks the installers for the events it needs; the producer then reports
 * each event with ucm_event_dispatch().
 */
#ifndef UCM_EVENT_EVENT_H_
#define UCM_EVENT_EVENT_H_

#include <ucm/api/ucm.h>
#include <ucs/datastruct/list.h>

BEGIN_C_DECLS

/** Events that ucm_set_event_handler() accepts (flags excluded). */
#define UCM_EVENT_TYPES_MASK \
    (UCM_EVENT_MMAP | UCM_EVENT_MUNMAP | UCM_EVENT_MREMAP | \
     UCM_EVENT_SHMAT | UCM_EVENT_SHMDT | UCM_EVENT_SBRK | \
     UCM_EVENT_MADVISE | UCM_EVENT_BRK | UCM_EVENT_VM_MAPPED | \
     UCM_EVENT_VM_UNMAPPED | UCM_EVENT_MEM_TYPE_ALLOC | \
     UCM_EVENT_MEM_TYPE_FREE)

/** Memory-type events. */
#define UCM_EVENT_MEM_TYPE_MASK \
    (UCM_EVENT_MEM_TYPE_ALLOC | UCM_EVENT_MEM_TYPE_FREE)


/**
 * A producer of events. Owned by the producer, which keeps it alive while
 * registered. Its functions are called with the install lock held, one at a
 * time.
 */
typedef struct ucm_event_installer {
    /** Name for log messages, e.g. "cuda". */
    const char      *name;

    /** Events this producer can produce (UCM_EVENT_*). */
    int             events;

    /**
     * Install the hooks for @a events (a subset of the events above).
     * Called again for every new subscription: installed hooks return
     * UCS_OK at once.
     * @return UCS_OK, or an error when the events will not be produced;
     *         the producer then leaves no hook half-installed.
     */
    ucs_status_t    (*install)(int events);

    /** Remove every hook; a later install() starts from scratch. */
    void            (*uninstall)(void);

    /**
     * Check that the hooks for @a events are installed and intact.
     * @return UCS_OK, UCS_ERR_UNSUPPORTED (not installed) or
     *         UCS_ERR_NO_ELEM (installed but removed by someone else).
     */
    ucs_status_t    (*test)(int events);

    /**
     * Call @a cb with a MEM_TYPE_ALLOC event for every live allocation the
     * producer knows about, each flagged UCM_MEM_TYPE_FLAG_REPLAYED. Called
     * after the handler was published, while other threads keep reporting:
     * a replayed allocation may already have been freed. May be NULL.
     */
    void            (*report_existing)(ucm_event_callback_t cb, void *arg);

    ucs_list_link_t list;   /**< in the installer list, owned by ucm */
} ucm_event_installer_t;


/**
 * Make @a installer known. Events it offers become installable. Thread
 * safe; typically called from the producer's module constructor.
 */
void ucm_event_installer_add(ucm_event_installer_t *installer);

/**
 * Forget @a installer (calling its uninstall() first). Thread safe.
 */
void ucm_event_installer_remove(ucm_event_installer_t *installer);

/**
 * Remove every producer's hooks and install them again for the events
 * that registered handlers (without FLAG_NO_INSTALL) need, re-reading the
 * configuration. For tests that compare hook modes in one process.
 *
 * @return the status of the installation.
 */
ucs_status_t ucm_event_reinstall(void);

/**
 * Report one event: call every handler subscribed to @a event_type, in
 * ascending priority. @a event_type must be a single event bit. Thread
 * safe; may be called from a handler (nested events are delivered).
 */
void ucm_event_dispatch(ucm_event_type_t event_type, ucm_event_t *event);

/** Events currently declared external. */
int ucm_event_external_mask(void);

END_C_DECLS

#endif
