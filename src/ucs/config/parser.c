/*
 * The configuration engine: fills option structures from defaults, a file
 * and the environment, changes single values, and prints tables.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <ucs/config/parser.h>
#include <ucs/config/config_file.h>
#include <ucs/config/parse_util.h>
#include <ucs/config/registry.h>
#include <ucs/debug/log.h>

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* Where a value came from, for error messages. */
typedef enum {
    UCS_CONFIG_ORIGIN_DEFAULT,
    UCS_CONFIG_ORIGIN_FILE,
    UCS_CONFIG_ORIGIN_ENV,
    UCS_CONFIG_ORIGIN_API
} ucs_config_origin_t;

typedef struct {
    ucs_config_origin_t type;
    const char          *path; /* ORIGIN_FILE only */
    unsigned            line;  /* ORIGIN_FILE only */
} ucs_config_source_t;


static void *ucs_config_field_ptr(void *opts, const ucs_config_field_t *field)
{
    return (char*)opts + field->offset;
}

static const void *ucs_config_field_cptr(const void *opts,
                                         const ucs_config_field_t *field)
{
    return (const char*)opts + field->offset;
}

static ucs_status_t ucs_config_value_clone(const ucs_config_parser_t *parser,
                                           const void *src, void *dst)
{
    if (parser->clone == NULL) {
        memcpy(dst, src, parser->size);
        return UCS_OK;
    }
    return parser->clone(src, dst, parser);
}

static void ucs_config_value_release(const ucs_config_parser_t *parser,
                                     void *value)
{
    if (parser->release != NULL) {
        parser->release(value, parser);
    }
}

/* "UCX_" [env_prefix "_"] table_prefix name; fails when it does not fit. */
static ucs_status_t ucs_config_full_name(char *buf, const char *env_prefix,
                                         size_t env_prefix_len,
                                         const char *table_prefix,
                                         const char *name)
{
    int n;

    n = snprintf(buf, UCS_CONFIG_NAME_MAX, "%s%.*s%s%s%s",
                 UCS_CONFIG_ENV_PREFIX, (int)env_prefix_len,
                 (env_prefix_len > 0) ? env_prefix : "",
                 (env_prefix_len > 0) ? "_" : "", table_prefix, name);
    if ((n < 0) || (n >= UCS_CONFIG_NAME_MAX)) {
        ucs_error("the variable name of %s%s with environment prefix "
                  "'%.*s' is too long", table_prefix, name,
                  (int)env_prefix_len, (env_prefix_len > 0) ? env_prefix : "");
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

static void ucs_config_report_invalid(const ucs_config_field_t *field,
                                      const char *var_name, const char *str,
                                      const ucs_config_source_t *source)
{
    char *help = ucs_config_parser_help_str(&field->parser);
    const char *accepted = (help != NULL) ? help : "(out of memory)";

    switch (source->type) {
    case UCS_CONFIG_ORIGIN_DEFAULT:
        ucs_error("%s: invalid default value '%s' in the table: expected %s",
                  var_name, str, accepted);
        break;
    case UCS_CONFIG_ORIGIN_FILE:
        ucs_error("%s:%u: %s: invalid value '%s': expected %s", source->path,
                  source->line, var_name, str, accepted);
        break;
    default:
        ucs_error("%s: invalid value '%s': expected %s", var_name, str,
                  accepted);
        break;
    }
    free(help);
}

/* Parse @a str into the field. The parser works on a copy so that a bad
 * value leaves the field exactly as it was. */
static ucs_status_t ucs_config_field_read(void *opts,
                                          const ucs_config_field_t *field,
                                          const char *str, const char *var_name,
                                          const ucs_config_source_t *source)
{
    const ucs_config_parser_t *parser = &field->parser;
    void *value                       = ucs_config_field_ptr(opts, field);
    ucs_status_t status;
    void *tmp;

    tmp = malloc(parser->size);
    if (tmp == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    status = ucs_config_value_clone(parser, value, tmp);
    if (status != UCS_OK) {
        goto out_free;
    }

    status = parser->read(str, tmp, parser);
    if (status != UCS_OK) {
        ucs_config_value_release(parser, tmp);
        if (status == UCS_ERR_INVALID_PARAM) {
            ucs_config_report_invalid(field, var_name, str, source);
        }
        goto out_free;
    }

    ucs_config_value_release(parser, value);
    memcpy(value, tmp, parser->size);

out_free:
    free(tmp);
    return status;
}

/* Validates @a env_prefix and returns its length without trailing '_'. */
static ucs_status_t ucs_config_env_prefix_len(const char *env_prefix,
                                              size_t *len_p)
{
    size_t len = (env_prefix == NULL) ? 0 : strlen(env_prefix);
    size_t i;

    while ((len > 0) && (env_prefix[len - 1] == '_')) {
        --len;
    }
    for (i = 0; i < len; ++i) {
        if (!isalnum((unsigned char)env_prefix[i]) && (env_prefix[i] != '_')) {
            ucs_error("invalid environment prefix '%s': expected letters, "
                      "digits and '_'", env_prefix);
            return UCS_ERR_INVALID_PARAM;
        }
    }
    *len_p = len;
    return UCS_OK;
}

/* Applies every source of one field, lowest precedence first. */
static ucs_status_t ucs_config_field_fill(void *opts,
                                          const ucs_config_table_entry_t *entry,
                                          const ucs_config_field_t *field,
                                          const char *env_prefix,
                                          size_t env_prefix_len,
                                          const ucs_config_file_t *file)
{
    ucs_config_source_t source = {UCS_CONFIG_ORIGIN_DEFAULT, NULL, 0};
    char names[2][UCS_CONFIG_NAME_MAX];
    const ucs_config_file_entry_t *setting;
    unsigned num_names, i;
    ucs_status_t status;
    const char *env;

    status = ucs_config_full_name(names[0], NULL, 0, entry->prefix,
                                  field->name);
    if (status != UCS_OK) {
        return status;
    }

    num_names = 1;
    if (env_prefix_len > 0) {
        status = ucs_config_full_name(names[1], env_prefix, env_prefix_len,
                                      entry->prefix, field->name);
        if (status != UCS_OK) {
            return status;
        }
        num_names = 2;
    }

    status = ucs_config_field_read(opts, field, field->dfl_value, names[0],
                                   &source);
    if (status != UCS_OK) {
        return status;
    }

    source.type = UCS_CONFIG_ORIGIN_FILE;
    source.path = file->path;
    for (i = 0; i < num_names; ++i) {
        setting = ucs_config_file_lookup(file, names[i]);
        if (setting != NULL) {
            source.line = setting->line;
            status = ucs_config_field_read(opts, field, setting->value,
                                           names[i], &source);
            if (status != UCS_OK) {
                return status;
            }
        }
    }

    source.type = UCS_CONFIG_ORIGIN_ENV;
    for (i = 0; i < num_names; ++i) {
        env = getenv(names[i]);
        if (env != NULL) {
            status = ucs_config_field_read(opts, field, env, names[i], &source);
            if (status != UCS_OK) {
                return status;
            }
        }
    }
    return UCS_OK;
}

ucs_status_t ucs_config_parser_fill_opts(void *opts,
                                         const ucs_config_table_entry_t *entry,
                                         const char *env_prefix,
                                         const char *filename)
{
    const ucs_config_field_t *field;
    ucs_config_file_t file;
    size_t env_prefix_len;
    ucs_status_t status;

    memset(opts, 0, entry->size);

    status = ucs_config_env_prefix_len(env_prefix, &env_prefix_len);
    if (status != UCS_OK) {
        return status;
    }

    status = ucs_config_file_load((filename != NULL) ?
                                          filename :
                                          ucs_config_file_default_path(),
                                  &file);
    if (status != UCS_OK) {
        return status;
    }

    for (field = entry->fields; field->name != NULL; ++field) {
        status = ucs_config_field_fill(opts, entry, field, env_prefix,
                                       env_prefix_len, &file);
        if (status != UCS_OK) {
            goto err_release;
        }
    }

    ucs_config_registry_add_env_prefix(env_prefix, env_prefix_len);
    ucs_config_file_release(&file);
    return UCS_OK;

err_release:
    ucs_config_parser_release_opts(opts, entry);
    ucs_config_file_release(&file);
    return status;
}

ucs_status_t
ucs_config_parser_fill_defaults(void *opts,
                                const ucs_config_table_entry_t *entry)
{
    ucs_config_source_t source = {UCS_CONFIG_ORIGIN_DEFAULT, NULL, 0};
    char name[UCS_CONFIG_NAME_MAX];
    const ucs_config_field_t *field;
    ucs_status_t status;

    memset(opts, 0, entry->size);
    for (field = entry->fields; field->name != NULL; ++field) {
        status = ucs_config_full_name(name, NULL, 0, entry->prefix,
                                      field->name);
        if (status == UCS_OK) {
            status = ucs_config_field_read(opts, field, field->dfl_value, name,
                                           &source);
        }
        if (status != UCS_OK) {
            ucs_config_parser_release_opts(opts, entry);
            return status;
        }
    }
    return UCS_OK;
}

/* The field whose table prefix and name together are @a name. */
static const ucs_config_field_t *
ucs_config_find_field(const ucs_config_table_entry_t *entry, const char *name)
{
    size_t prefix_len = strlen(entry->prefix);
    const ucs_config_field_t *field;

    if (strncmp(name, entry->prefix, prefix_len)) {
        return NULL;
    }
    for (field = entry->fields; field->name != NULL; ++field) {
        if (!strcmp(name + prefix_len, field->name)) {
            return field;
        }
    }
    return NULL;
}

ucs_status_t ucs_config_parser_set_value(void *opts,
                                         const ucs_config_table_entry_t *entry,
                                         const char *name, const char *value)
{
    ucs_config_source_t source = {UCS_CONFIG_ORIGIN_API, NULL, 0};
    const ucs_config_field_t *field;
    char var_name[UCS_CONFIG_NAME_MAX];
    ucs_status_t status;

    field = ucs_config_find_field(entry, name);
    if (field == NULL) {
        return UCS_ERR_NO_ELEM;
    }

    status = ucs_config_full_name(var_name, NULL, 0, entry->prefix,
                                  field->name);
    if (status != UCS_OK) {
        return status;
    }
    return ucs_config_field_read(opts, field, value, var_name, &source);
}

ucs_status_t ucs_config_parser_get_value(const void *opts,
                                         const ucs_config_table_entry_t *entry,
                                         const char *name, char *buf,
                                         size_t max)
{
    const ucs_config_field_t *field = ucs_config_find_field(entry, name);

    if (field == NULL) {
        return UCS_ERR_NO_ELEM;
    }
    field->parser.write(ucs_config_field_cptr(opts, field), buf, max,
                        &field->parser);
    return UCS_OK;
}

ucs_status_t ucs_config_parser_clone_opts(const void *src, void *dst,
                                          const ucs_config_table_entry_t *entry)
{
    const ucs_config_field_t *field;
    ucs_status_t status;

    memset(dst, 0, entry->size);
    for (field = entry->fields; field->name != NULL; ++field) {
        status = ucs_config_value_clone(&field->parser,
                                        ucs_config_field_cptr(src, field),
                                        ucs_config_field_ptr(dst, field));
        if (status != UCS_OK) {
            ucs_config_parser_release_opts(dst, entry);
            return status;
        }
    }
    return UCS_OK;
}

void ucs_config_parser_release_opts(void *opts,
                                    const ucs_config_table_entry_t *entry)
{
    const ucs_config_field_t *field;

    for (field = entry->fields; field->name != NULL; ++field) {
        ucs_config_value_release(&field->parser,
                                 ucs_config_field_ptr(opts, field));
    }
}


/* ---- printing -------------------------------------------------------- */

/* Each line of @a text as a '#' comment. */
static void ucs_config_print_comment(FILE *stream, const char *label,
                                     const char *text)
{
    const char *line = (text != NULL) ? text : "", *newline;

    do {
        newline = strchr(line, '\n');
        fprintf(stream, "# %s%.*s\n", label,
                (int)((newline == NULL) ? strlen(line) :
                                          (size_t)(newline - line)),
                line);
        /* No arithmetic on NULL past the last line (undefined behaviour). */
        line  = (newline != NULL) ? newline + 1 : line;
        label = "";
    } while (newline != NULL);
}

/* The canonical string of the field's default, or NULL. */
static char *ucs_config_default_str(const ucs_config_field_t *field)
{
    const ucs_config_parser_t *parser = &field->parser;
    char *str                         = NULL;
    void *tmp;

    tmp = calloc(1, parser->size);
    if (tmp == NULL) {
        return NULL;
    }
    if (parser->read(field->dfl_value, tmp, parser) == UCS_OK) {
        str = ucs_config_parser_value_str(parser, tmp);
    }
    ucs_config_value_release(parser, tmp);
    free(tmp);
    return str;
}

static void ucs_config_print_field(FILE *stream, const void *opts,
                                   const ucs_config_table_entry_t *entry,
                                   const ucs_config_field_t *field, int flags)
{
    const ucs_config_parser_t *parser = &field->parser;
    char *value, *dfl = NULL, *help = NULL;
    const char *dfl_text;
    int is_default;

    value = ucs_config_parser_value_str(parser,
                                        ucs_config_field_cptr(opts, field));
    if (flags & (UCS_CONFIG_PRINT_DOC | UCS_CONFIG_PRINT_COMMENT_DEFAULT)) {
        dfl = ucs_config_default_str(field);
    }

    if (flags & UCS_CONFIG_PRINT_DOC) {
        help = ucs_config_parser_help_str(parser);
        fprintf(stream, "#\n");
        ucs_config_print_comment(stream, "", field->doc);
        fprintf(stream, "#\n");
        ucs_config_print_comment(stream, "syntax:  ",
                                 (help != NULL) ? help : "?");
        dfl_text = (dfl != NULL) ? dfl : field->dfl_value;
        ucs_config_print_comment(stream, "default: ",
                                 (dfl_text[0] == '\0') ? "\"\"" : dfl_text);
        fprintf(stream, "#\n");
    }

    if (flags & UCS_CONFIG_PRINT_CONFIG) {
        is_default = (flags & UCS_CONFIG_PRINT_COMMENT_DEFAULT) &&
                     (value != NULL) && (dfl != NULL) && !strcmp(value, dfl);
        fprintf(stream, "%s%s%s%s=%s\n", is_default ? "# " : "",
                UCS_CONFIG_ENV_PREFIX, entry->prefix, field->name,
                (value != NULL) ? value : "");
    }

    free(help);
    free(dfl);
    free(value);
}

void ucs_config_parser_print_opts(FILE *stream, const char *title,
                                  const void *opts,
                                  const ucs_config_table_entry_t *entry,
                                  int flags)
{
    const ucs_config_field_t *field;

    if (flags & UCS_CONFIG_PRINT_HEADER) {
        fprintf(stream, "#\n");
        ucs_config_print_comment(stream, "",
                                 (title != NULL) ? title : entry->name);
        fprintf(stream, "#\n");
    }

    for (field = entry->fields; field->name != NULL; ++field) {
        if ((field->flags & UCS_CONFIG_FIELD_HIDDEN) &&
            !(flags & UCS_CONFIG_PRINT_HIDDEN)) {
            continue;
        }
        ucs_config_print_field(stream, opts, entry, field, flags);
    }

    if (flags & UCS_CONFIG_PRINT_HEADER) {
        fprintf(stream, "\n");
    }
}

typedef struct {
    FILE         *stream;
    const char   *env_prefix;
    int          flags;
    ucs_status_t status;
} ucs_config_print_all_ctx_t;

static int ucs_config_print_table_cb(const ucs_config_table_entry_t *entry,
                                     void *arg)
{
    ucs_config_print_all_ctx_t *ctx = arg;
    void *opts;

    opts = malloc(entry->size);
    if (opts == NULL) {
        ctx->status = UCS_ERR_NO_MEMORY;
        return 1;
    }

    ctx->status = ucs_config_parser_fill_opts(opts, entry, ctx->env_prefix,
                                              NULL);
    if (ctx->status == UCS_OK) {
        ucs_config_parser_print_opts(ctx->stream, NULL, opts, entry,
                                     ctx->flags);
        ucs_config_parser_release_opts(opts, entry);
    }
    free(opts);
    return ctx->status != UCS_OK;
}

ucs_status_t ucs_config_parser_print_all_opts(FILE *stream, const char *prefix,
                                              int flags)
{
    size_t base_len                = strlen(UCS_CONFIG_ENV_PREFIX) - 1;
    ucs_config_print_all_ctx_t ctx = {stream, NULL, flags, UCS_OK};

    /* "UCX", "UCX_" or "UCX_<P>[_]": the base prefix is fixed; anything
     * after it is an environment prefix. */
    if ((prefix == NULL) ||
        strncmp(prefix, UCS_CONFIG_ENV_PREFIX, base_len) ||
        ((prefix[base_len] != '\0') && (prefix[base_len] != '_'))) {
        ucs_error("invalid configuration prefix '%s': expected %.*s or "
                  "%s<PREFIX>", (prefix != NULL) ? prefix : "(null)",
                  (int)base_len, UCS_CONFIG_ENV_PREFIX, UCS_CONFIG_ENV_PREFIX);
        return UCS_ERR_INVALID_PARAM;
    }
    if (prefix[base_len] == '_') {
        ctx.env_prefix = prefix + base_len + 1;
    }

    ucs_config_registry_foreach(ucs_config_print_table_cb, &ctx);
    return ctx.status;
}
