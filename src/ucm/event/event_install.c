#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * Producers of events ("installers") and the events declared external.
 *
 * Hooks are installed lazily, by the first subscription that needs them,
 * so a process that never asks for memory events never has its code
 * patched. All installer calls are serialised by one mutex: installing
 * patches code and must not race with another install or uninstall.
 */

#include <ucm/event/event_int.h>

#include <ucs/debug/log.h>

#include <pthread.h>

static pthread_mutex_t ucm_event_install_lock = PTHREAD_MUTEX_INITIALIZER;
static UCS_LIST_HEAD(ucm_event_installers);
static int ucm_event_external;

void ucm_event_installer_add(ucm_event_installer_t *installer)
{
    pthread_mutex_lock(&ucm_event_install_lock);
    ucs_list_add_tail(&ucm_event_installers, &installer->list);
    pthread_mutex_unlock(&ucm_event_install_lock);
    ucs_debug("memory event producer '%s' added (events 0x%x)",
              installer->name, installer->events);
}

void ucm_event_installer_remove(ucm_event_installer_t *installer)
{
    pthread_mutex_lock(&ucm_event_install_lock);
    installer->uninstall();
    ucs_list_del(&installer->list);
    pthread_mutex_unlock(&ucm_event_install_lock);
    ucs_debug("memory event producer '%s' removed", installer->name);
}

ucs_status_t ucm_event_install(int events)
{
    ucm_event_installer_t *installer;
    ucs_status_t status, error = UCS_OK;
    int covered = 0, wanted;

    pthread_mutex_lock(&ucm_event_install_lock);
    ucs_list_for_each(installer, &ucm_event_installers, list) {
        wanted = installer->events & events;
        if (wanted == 0) {
            continue;
        }

        status = installer->install(wanted);
        if (status == UCS_OK) {
            covered |= wanted;
        } else if (error == UCS_OK) {
            error = status;
        }
    }
    pthread_mutex_unlock(&ucm_event_install_lock);

    if ((events & ~covered) == 0) {
        return UCS_OK;
    }

    if (error != UCS_OK) {
        return error;
    }

    ucs_debug("no memory hook produces events 0x%x", events & ~covered);
    return UCS_ERR_UNSUPPORTED;
}

void ucm_event_report_existing(ucm_event_callback_t cb, void *arg)
{
    ucm_event_installer_t *installer;

    pthread_mutex_lock(&ucm_event_install_lock);
    ucs_list_for_each(installer, &ucm_event_installers, list) {
        if ((installer->events & UCM_EVENT_MEM_TYPE_ALLOC) &&
            (installer->report_existing != NULL)) {
            installer->report_existing(cb, arg);
        }
    }
    pthread_mutex_unlock(&ucm_event_install_lock);
}

ucs_status_t ucm_event_reinstall(void)
{
    ucm_event_installer_t *installer;
    int needed, offered = 0;

    /* Read before taking the install lock (lock order). */
    needed = ucm_event_installed_handler_events() & ~ucm_event_external_mask();

    pthread_mutex_lock(&ucm_event_install_lock);
    ucs_list_for_each(installer, &ucm_event_installers, list) {
        installer->uninstall();
        offered |= installer->events;
    }
    pthread_mutex_unlock(&ucm_event_install_lock);

    needed &= offered;
    return (needed == 0) ? UCS_OK : ucm_event_install(needed);
}

ucs_status_t ucm_test_events(int events)
{
    ucm_event_installer_t *installer;
    ucs_status_t status, result = UCS_OK;
    int covered = 0, wanted;

    events &= UCM_EVENT_TYPES_MASK;

    pthread_mutex_lock(&ucm_event_install_lock);
    ucs_list_for_each(installer, &ucm_event_installers, list) {
        wanted = installer->events & events;
        if (wanted == 0) {
            continue;
        }

        status = installer->test(wanted);
        if (status == UCS_OK) {
            covered |= wanted;
        } else if (result == UCS_OK) {
            result = status;
        }
    }
    pthread_mutex_unlock(&ucm_event_install_lock);

    if (result != UCS_OK) {
        return result;
    }

    return ((events & ~covered) == 0) ? UCS_OK : UCS_ERR_UNSUPPORTED;
}

void ucm_set_external_event(int events)
{
    __atomic_fetch_or(&ucm_event_external, events & UCM_EVENT_TYPES_MASK,
                      __ATOMIC_RELAXED);
    ucs_debug("memory events 0x%x declared external", events);
}

void ucm_unset_external_event(int events)
{
    __atomic_fetch_and(&ucm_event_external, ~events, __ATOMIC_RELAXED);
}

int ucm_event_external_mask(void)
{
    return __atomic_load_n(&ucm_event_external, __ATOMIC_RELAXED);
}

ucs_status_t ucm_test_external_events(int events)
{
    events &= UCM_EVENT_TYPES_MASK;
    return ((events & ~ucm_event_external_mask()) == 0) ? UCS_OK :
           UCS_ERR_UNSUPPORTED;
}
