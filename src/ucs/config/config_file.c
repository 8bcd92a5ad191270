#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <ucs/config/config_file.h>
#include <ucs/config/parser.h>
#include <ucs/debug/log.h>

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *ucs_config_file_default_path(void)
{
    const char *path = getenv("UCX_CONFIG_FILE");

    if (path != NULL) {
        return (path[0] == '\0') ? NULL : path;
    }
#ifdef UCS_CONFIG_DEFAULT_FILE
    if (access(UCS_CONFIG_DEFAULT_FILE, R_OK) == 0) {
        return UCS_CONFIG_DEFAULT_FILE;
    }
#endif
    return NULL;
}

static char *ucs_config_file_trim(char *str)
{
    char *end;

    while (isspace((unsigned char)*str)) {
        ++str;
    }
    end = str + strlen(str);
    while ((end > str) && isspace((unsigned char)end[-1])) {
        --end;
    }
    *end = '\0';
    return str;
}

static int ucs_config_file_key_is_valid(const char *key)
{
    size_t prefix_len = strlen(UCS_CONFIG_ENV_PREFIX);
    const char *p;

    if (strncmp(key, UCS_CONFIG_ENV_PREFIX, prefix_len) ||
        (key[prefix_len] == '\0')) {
        return 0;
    }
    for (p = key + prefix_len; *p != '\0'; ++p) {
        if (!isalnum((unsigned char)*p) && (*p != '_')) {
            return 0;
        }
    }
    return 1;
}

static ucs_status_t ucs_config_file_add(ucs_config_file_t *file,
                                        const char *key, const char *value,
                                        unsigned line)
{
    ucs_config_file_entry_t *entries, *entry;

    entries = realloc(file->entries, sizeof(*entries) * (file->count + 1));
    if (entries == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    file->entries = entries;

    entry        = &entries[file->count];
    entry->key   = strdup(key);
    entry->value = strdup(value);
    entry->line  = line;
    if ((entry->key == NULL) || (entry->value == NULL)) {
        free(entry->key);
        free(entry->value);
        return UCS_ERR_NO_MEMORY;
    }
    ++file->count;
    return UCS_OK;
}

/* One line without its newline; adds an entry for a setting. */
static ucs_status_t ucs_config_file_parse_line(ucs_config_file_t *file,
                                               char *text, unsigned line)
{
    char *eq, *key, *value;

    text = ucs_config_file_trim(text);
    if ((text[0] == '\0') || (text[0] == '#')) {
        return UCS_OK;
    }

    eq = strchr(text, '=');
    if (eq != NULL) {
        *eq   = '\0';
        key   = ucs_config_file_trim(text);
        value = ucs_config_file_trim(eq + 1);
        if (ucs_config_file_key_is_valid(key)) {
            return ucs_config_file_add(file, key, value, line);
        }
        *eq = '='; /* restore for the message */
    }

    ucs_error("%s:%u: malformed line '%s', expected UCX_<NAME>=<value>",
              file->path, line, text);
    return UCS_ERR_INVALID_PARAM;
}

ucs_status_t ucs_config_file_load(const char *path, ucs_config_file_t *file)
{
    ucs_status_t status = UCS_OK;
    size_t capacity     = 0;
    char *text          = NULL;
    unsigned line       = 0;
    ssize_t len;
    FILE *stream;

    memset(file, 0, sizeof(*file));
    if (path == NULL) {
        return UCS_OK;
    }

    file->path = strdup(path);
    if (file->path == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    stream = fopen(path, "r");
    if (stream == NULL) {
        ucs_error("cannot read configuration file '%s': %s", path,
                  strerror(errno));
        status = UCS_ERR_IO_ERROR;
        goto out_release;
    }

    while ((len = getline(&text, &capacity, stream)) >= 0) {
        ++line;
        if ((len > 0) && (text[len - 1] == '\n')) {
            text[--len] = '\0';
        }
        if (strlen(text) != (size_t)len) {
            ucs_error("%s:%u: line contains a NUL character", path, line);
            status = UCS_ERR_INVALID_PARAM;
            break;
        }
        status = ucs_config_file_parse_line(file, text, line);
        if (status != UCS_OK) {
            break;
        }
    }

    if ((status == UCS_OK) && ferror(stream)) {
        ucs_error("error reading configuration file '%s'", path);
        status = UCS_ERR_IO_ERROR;
    }

    free(text);
    fclose(stream);
out_release:
    if (status != UCS_OK) {
        ucs_config_file_release(file);
    }
    return status;
}

void ucs_config_file_release(ucs_config_file_t *file)
{
    unsigned i;

    for (i = 0; i < file->count; ++i) {
        free(file->entries[i].key);
        free(file->entries[i].value);
    }
    free(file->entries);
    free(file->path);
    memset(file, 0, sizeof(*file));
}

const ucs_config_file_entry_t *
ucs_config_file_lookup(const ucs_config_file_t *file, const char *key)
{
    unsigned i;

    for (i = file->count; i > 0; --i) {
        if (!strcmp(file->entries[i - 1].key, key)) {
            return &file->entries[i - 1];
        }
    }
    return NULL;
}
