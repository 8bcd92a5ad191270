/**
 * @file event_int.h
 * Functions shared by the files of the event bus (handler list in event.c,
 * producers in event_install.c). Not for use outside src/ucm/event.
 *
 * Lock order: the writer lock of the handler list may be held while the
 * install lock is taken, never the reverse. Dispatch takes neither.
 */
#ifndef UCM_EVENT_EVENT_INT_H_
#define UCM_EVENT_EVENT_INT_H_

#include <ucm/event/event.h>

BEGIN_C_DECLS

/**
 * Install producers for @a events (already stripped of external events
 * and flags). Takes the install lock.
 * @return UCS_OK or the reason an event cannot be produced.
 */
ucs_status_t ucm_event_install(int events);

/**
 * Ask every producer of MEM_TYPE_ALLOC to replay its live allocations to
 * @a cb. Takes the install lock; called with the writer lock held.
 */
void ucm_event_report_existing(ucm_event_callback_t cb, void *arg);

/**
 * Union of the events of the handlers that asked for hooks (registered
 * without UCM_EVENT_FLAG_NO_INSTALL). Takes the writer lock, so it must be
 * called without the install lock.
 */
int ucm_event_installed_handler_events(void);

END_C_DECLS

#endif
