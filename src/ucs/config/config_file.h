/**
 * @file config_file.h
 * Reader of UCX configuration files (internal to src/ucs/config).
 *
 * Format, one setting per line:
 *
 *     # a comment
 *     UCX_LOG_LEVEL=info
 *     UCX_TLS = ^tcp
 *
 * Blank lines and lines whose first non-blank character is '#' are ignored.
 * Blanks around the key and the value are dropped; a '#' after the value is
 * part of the value. Keys must look like UCX_<NAME> with NAME made of
 * letters, digits and '_'. Anything else is a malformed line, reported with
 * the file name and line number. A key given twice takes its last value.
 */
#ifndef UCS_CONFIG_FILE_H_
#define UCS_CONFIG_FILE_H_

#include <ucs/type/status.h>

BEGIN_C_DECLS

/** One "KEY=value" line. */
typedef struct {
    char     *key;   /**< e.g. "UCX_LOG_LEVEL" */
    char     *value; /**< may be "" */
    unsigned line;   /**< 1-based line number */
} ucs_config_file_entry_t;

/** A parsed file; an empty one (no path) stands for "no file". */
typedef struct {
    char                    *path;    /**< NULL when there is no file */
    ucs_config_file_entry_t *entries; /**< in file order */
    unsigned                count;
} ucs_config_file_t;

/**
 * The file to read when the caller names none: $UCX_CONFIG_FILE when set
 * (an empty value means no file), otherwise UCS_CONFIG_DEFAULT_FILE when the
 * build defines it and that file exists, otherwise none.
 *
 * @return a path (valid until the environment changes) or NULL.
 */
const char *ucs_config_file_default_path(void);

/**
 * Read and parse @a path into @a file.
 *
 * @param path  file to read; NULL yields an empty @a file.
 * @return UCS_OK; UCS_ERR_IO_ERROR when it cannot be read;
 *         UCS_ERR_INVALID_PARAM for a malformed line; UCS_ERR_NO_MEMORY. An
 *         error is logged naming the file (and line). On error @a file is
 *         empty.
 */
ucs_status_t ucs_config_file_load(const char *path, ucs_config_file_t *file);

/** Free what ucs_config_file_load() allocated and empty @a file. */
void ucs_config_file_release(ucs_config_file_t *file);

/** The last entry whose key is @a key, or NULL. */
const ucs_config_file_entry_t *
ucs_config_file_lookup(const ucs_config_file_t *file, const char *key);

END_C_DECLS

#endif
