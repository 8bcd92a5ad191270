#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <ucs/config/registry.h>

#include <pthread.h>
#include <string.h>

/* Statically initialised, so tables may register from any constructor,
 * including ones that run before libucs's own. */
static pthread_mutex_t ucs_config_registry_lock = PTHREAD_MUTEX_INITIALIZER;
/* A lock of its own: fills record prefixes while printing holds the
 * registry lock: order is registry, then prefix lock, never reversed. */
static pthread_mutex_t ucs_config_prefix_lock   = PTHREAD_MUTEX_INITIALIZER;
static ucs_config_table_entry_t *ucs_config_registry_head = NULL;
static ucs_config_env_prefix_t
        ucs_config_registry_prefixes[UCS_CONFIG_ENV_PREFIXES_MAX];
static unsigned ucs_config_registry_prefix_count = 0;

void ucs_config_register_table(ucs_config_table_entry_t *entry)
{
    ucs_config_table_entry_t **tail;

    pthread_mutex_lock(&ucs_config_registry_lock);
    for (tail = &ucs_config_registry_head; *tail != NULL;
         tail = &(*tail)->next) {
        if (*tail == entry) {
            goto out; /* already registered */
        }
    }
    entry->next = NULL;
    *tail       = entry;
out:
    pthread_mutex_unlock(&ucs_config_registry_lock);
}

void ucs_config_unregister_table(ucs_config_table_entry_t *entry)
{
    ucs_config_table_entry_t **link;

    pthread_mutex_lock(&ucs_config_registry_lock);
    for (link = &ucs_config_registry_head; *link != NULL;
         link = &(*link)->next) {
        if (*link == entry) {
            *link       = entry->next;
            entry->next = NULL;
            break;
        }
    }
    pthread_mutex_unlock(&ucs_config_registry_lock);
}

int ucs_config_registry_foreach(ucs_config_table_cb_t cb, void *arg)
{
    const ucs_config_table_entry_t *entry;
    int ret = 0;

    pthread_mutex_lock(&ucs_config_registry_lock);
    for (entry = ucs_config_registry_head; (entry != NULL) && (ret == 0);
         entry = entry->next) {
        ret = cb(entry, arg);
    }
    pthread_mutex_unlock(&ucs_config_registry_lock);
    return ret;
}

void ucs_config_registry_add_env_prefix(const char *prefix, size_t len)
{
    unsigned i;

    if ((len == 0) || (len >= sizeof(ucs_config_env_prefix_t))) {
        return;
    }

    pthread_mutex_lock(&ucs_config_prefix_lock);
    for (i = 0; i < ucs_config_registry_prefix_count; ++i) {
        if ((strlen(ucs_config_registry_prefixes[i]) == len) &&
            !strncmp(ucs_config_registry_prefixes[i], prefix, len)) {
            goto out;
        }
    }
    if (ucs_config_registry_prefix_count < UCS_CONFIG_ENV_PREFIXES_MAX) {
        memcpy(ucs_config_registry_prefixes[ucs_config_registry_prefix_count],
               prefix, len);
        ucs_config_registry_prefixes[ucs_config_registry_prefix_count][len] =
                '\0';
        ++ucs_config_registry_prefix_count;
    }
out:
    pthread_mutex_unlock(&ucs_config_prefix_lock);
}

unsigned ucs_config_registry_get_env_prefixes(
        ucs_config_env_prefix_t prefixes[UCS_CONFIG_ENV_PREFIXES_MAX])
{
    unsigned count;

    pthread_mutex_lock(&ucs_config_prefix_lock);
    count = ucs_config_registry_prefix_count;
    memcpy(prefixes, ucs_config_registry_prefixes, sizeof(*prefixes) * count);
    pthread_mutex_unlock(&ucs_config_prefix_lock);
    return count;
}
