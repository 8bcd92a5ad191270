/*
 * Warnings about UCX_* names that no registered table knows, each with the
 * closest known name, so that a typo ("UCX_LOG_LEVL") is not silently
 * ignored.
 *
 * A name is checked against the tables registered at the time of the check,
 * not against those registered when it was read: that way a variable of a
 * library loaded after the first read is not flagged, as long as the check
 * itself runs late enough (ucp_config_read runs it).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <ucs/config/parser.h>
#include <ucs/config/config_file.h>
#include <ucs/config/registry.h>
#include <ucs/debug/log.h>

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h> /* environ, with _GNU_SOURCE */

typedef struct {
    const char              *var;  /* full name being checked */
    int                     suggest;
    ucs_config_env_prefix_t prefixes[UCS_CONFIG_ENV_PREFIXES_MAX + 1];
    unsigned                num_prefixes;
    int                     known;
    unsigned                best_distance;
    char                    best[UCS_CONFIG_NAME_MAX];
} ucs_config_var_search_t;

static int ucs_config_chars_equal(char a, char b)
{
    return tolower((unsigned char)a) == tolower((unsigned char)b);
}

static unsigned ucs_config_min3(unsigned a, unsigned b, unsigned c)
{
    unsigned m = (a < b) ? a : b;
    return (m < c) ? m : c;
}

unsigned ucs_config_edit_distance(const char *a, const char *b)
{
    size_t len_a = strlen(a), len_b = strlen(b), i, j;
    unsigned *rows, *before_prev, *prev, *cur, *spare, result;

    /* Three rows of the dynamic-programming matrix: the swap of adjacent
     * characters looks two rows back. */
    rows = malloc(3 * (len_b + 1) * sizeof(*rows));
    if (rows == NULL) {
        return UINT_MAX;
    }
    before_prev = rows;
    prev        = rows + (len_b + 1);
    cur         = rows + 2 * (len_b + 1);

    for (j = 0; j <= len_b; ++j) {
        prev[j] = (unsigned)j;
    }

    for (i = 1; i <= len_a; ++i) {
        cur[0] = (unsigned)i;
        for (j = 1; j <= len_b; ++j) {
            cur[j] = ucs_config_min3(prev[j] + 1, cur[j - 1] + 1,
                                     prev[j - 1] +
                                             !ucs_config_chars_equal(a[i - 1],
                                                                     b[j - 1]));
            if ((i > 1) && (j > 1) &&
                ucs_config_chars_equal(a[i - 1], b[j - 2]) &&
                ucs_config_chars_equal(a[i - 2], b[j - 1]) &&
                (before_prev[j - 2] + 1 < cur[j])) {
                cur[j] = before_prev[j - 2] + 1;
            }
        }
        spare       = before_prev;
        before_prev = prev;
        prev        = cur;
        cur         = spare;
    }

    result = prev[len_b];
    free(rows);
    return result;
}

static void ucs_config_search_candidate(ucs_config_var_search_t *search,
                                        const char *candidate)
{
    unsigned distance;

    if (!strcmp(candidate, search->var)) {
        search->known = 1;
        return;
    }
    if (!search->suggest) {
        return;
    }

    distance = ucs_config_edit_distance(search->var, candidate);
    if (distance < search->best_distance) {
        search->best_distance = distance;
        strncpy(search->best, candidate, sizeof(search->best) - 1);
        search->best[sizeof(search->best) - 1] = '\0';
    }
}

static int ucs_config_search_table_cb(const ucs_config_table_entry_t *entry,
                                      void *arg)
{
    ucs_config_var_search_t *search = arg;
    const ucs_config_field_t *field;
    char name[UCS_CONFIG_NAME_MAX * 2];
    unsigned i;

    for (field = entry->fields; field->name != NULL; ++field) {
        snprintf(name, sizeof(name), "%s%s%s", UCS_CONFIG_ENV_PREFIX,
                 entry->prefix, field->name);
        ucs_config_search_candidate(search, name);

        for (i = 0; i < search->num_prefixes; ++i) {
            snprintf(name, sizeof(name), "%s%s_%s%s", UCS_CONFIG_ENV_PREFIX,
                     search->prefixes[i], entry->prefix, field->name);
            ucs_config_search_candidate(search, name);
        }
        if (search->known) {
            return 1;
        }
    }
    return 0;
}

static void ucs_config_search(ucs_config_var_search_t *search, const char *var,
                              const char *env_prefix, int suggest)
{
    size_t len = (env_prefix == NULL) ? 0 : strlen(env_prefix);

    search->var           = var;
    search->suggest       = suggest;
    search->known         = 0;
    search->best_distance = UINT_MAX;
    search->best[0]       = '\0';
    search->num_prefixes  = ucs_config_registry_get_env_prefixes(
            search->prefixes);

    while ((len > 0) && (env_prefix[len - 1] == '_')) {
        --len;
    }
    if ((len > 0) && (len < sizeof(ucs_config_env_prefix_t))) {
        memcpy(search->prefixes[search->num_prefixes], env_prefix, len);
        search->prefixes[search->num_prefixes][len] = '\0';
        ++search->num_prefixes;
    }

    ucs_config_registry_foreach(ucs_config_search_table_cb, search);
}

int ucs_config_parser_is_known_var(const char *var_name,
                                   const char *env_prefix)
{
    ucs_config_var_search_t search;

    ucs_config_search(&search, var_name, env_prefix, 0);
    return search.known;
}

/* Warns about @a var when it is unknown; @a where is "" or "file:line: ". */
static unsigned ucs_config_warn_if_unknown(const char *var,
                                           const char *env_prefix,
                                           const char *where)
{
    ucs_config_var_search_t search;

    ucs_config_search(&search, var, env_prefix, 1);
    if (search.known) {
        return 0;
    }

    if (search.best[0] != '\0') {
        ucs_warn("%s%s is not a known variable; did you mean %s?", where, var,
                 search.best);
    } else {
        ucs_warn("%s%s is not a known variable", where, var);
    }
    return 1;
}

unsigned ucs_config_parser_warn_unknown_env_vars(const char *env_prefix)
{
    size_t prefix_len = strlen(UCS_CONFIG_ENV_PREFIX);
    char name[UCS_CONFIG_NAME_MAX * 2];
    unsigned count = 0;
    const char *eq;
    char **envp;
    size_t len;

    for (envp = environ; *envp != NULL; ++envp) {
        if (strncmp(*envp, UCS_CONFIG_ENV_PREFIX, prefix_len)) {
            continue;
        }

        eq  = strchr(*envp, '=');
        len = (eq == NULL) ? strlen(*envp) : (size_t)(eq - *envp);
        if (len >= sizeof(name)) {
            len = sizeof(name) - 1; /* no known name is this long anyway */
        }
        memcpy(name, *envp, len);
        name[len] = '\0';

        count += ucs_config_warn_if_unknown(name, env_prefix, "");
    }
    return count;
}

unsigned ucs_config_parser_warn_unknown_file_keys(const char *filename,
                                                  const char *env_prefix)
{
    char where[PATH_MAX + 32];
    ucs_config_file_t file;
    unsigned count = 0;
    unsigned i;

    if (filename == NULL) {
        filename = ucs_config_file_default_path();
    }
    if ((filename == NULL) ||
        (ucs_config_file_load(filename, &file) != UCS_OK)) {
        return 0;
    }

    for (i = 0; i < file.count; ++i) {
        snprintf(where, sizeof(where), "%s:%u: ", file.path,
                 file.entries[i].line);
        count += ucs_config_warn_if_unknown(file.entries[i].key, env_prefix,
                                            where);
    }

    ucs_config_file_release(&file);
    return count;
}

void ucs_config_parser_warn_unknown_vars_once(const char *env_prefix)
{
    static int checked = 0;

    /* The first caller does the whole check; concurrent callers return at
     * once rather than wait for it, since the warnings are advisory. */
    if (__atomic_exchange_n(&checked, 1, __ATOMIC_ACQ_REL)) {
        return;
    }

    ucs_config_parser_warn_unknown_env_vars(env_prefix);
    ucs_config_parser_warn_unknown_file_keys(NULL, env_prefix);
}
