/*
 * Parsers of comma-separated values: bit maps over a name list, string
 * lists, allow lists ("all", "a,b", "^a,b") and per-memory-type maps
 * ("host:512K,cuda:4M"). An empty item ("a,,b") is always an error: it is
 * a typo far more often than an intent.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <ucs/config/parse_util.h>

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Calls @a cb for each comma-separated item of @a str, stopping at the
 * first error. An empty @a str has one empty item. */
typedef ucs_status_t (*ucs_config_item_cb_t)(const char *item, size_t len,
                                             void *arg);

static ucs_status_t ucs_config_foreach_item(const char *str,
                                            ucs_config_item_cb_t cb, void *arg)
{
    const char *item = str, *comma;
    ucs_status_t status;
    size_t len;

    for (;;) {
        comma = strchr(item, ',');
        len   = (comma == NULL) ? strlen(item) : (size_t)(comma - item);
        if (len == 0) {
            return UCS_ERR_INVALID_PARAM;
        }
        status = cb(item, len, arg);
        if ((status != UCS_OK) || (comma == NULL)) {
            return status;
        }
        item = comma + 1;
    }
}

static int ucs_config_has_space(const char *str, size_t len)
{
    size_t i;

    for (i = 0; i < len; ++i) {
        if (isspace((unsigned char)str[i])) {
            return 1;
        }
    }
    return 0;
}


/* ---- bitmap ---------------------------------------------------------- */

typedef struct {
    const char *const *names;
    unsigned           count; /* names considered, at most 64 */
    uint64_t           mask;
} ucs_config_bitmap_ctx_t;

static ucs_status_t ucs_config_bitmap_item(const char *item, size_t len,
                                           void *arg)
{
    ucs_config_bitmap_ctx_t *ctx = arg;
    int index                    = ucs_config_names_find(ctx->names, item, len);

    if ((index < 0) || ((unsigned)index >= ctx->count)) {
        return UCS_ERR_INVALID_PARAM;
    }
    ctx->mask |= UCS_BIT(index);
    return UCS_OK;
}

static unsigned ucs_config_names_count(const char *const *names,
                                       unsigned limit)
{
    unsigned count;

    for (count = 0; (count < limit) && (names[count] != NULL); ++count) {
    }
    return count;
}

static ucs_status_t ucs_config_bitmap_read(const char *str, uint64_t *value,
                                           const char *const *names,
                                           unsigned count)
{
    ucs_config_bitmap_ctx_t ctx = {names, count, 0};
    ucs_status_t status;

    if (!strcasecmp(str, "none")) {
        *value = 0;
        return UCS_OK;
    } else if (!strcasecmp(str, "all")) {
        *value = UCS_MASK(count);
        return UCS_OK;
    }

    status = ucs_config_foreach_item(str, ucs_config_bitmap_item, &ctx);
    if (status == UCS_OK) {
        *value = ctx.mask;
    }
    return status;
}

static size_t ucs_config_bitmap_write(uint64_t v, char *buf, size_t max,
                                      const char *const *names, unsigned count)
{
    ucs_config_strbuf_t sb;
    const char *sep = "";
    unsigned i;

    ucs_config_strbuf_init(&sb, buf, max);
    for (i = 0; i < count; ++i) {
        if (v & UCS_BIT(i)) {
            ucs_config_strbuf_appendf(&sb, "%s%s", sep, names[i]);
            sep = ",";
        }
    }
    if (sb.len == 0) {
        ucs_config_strbuf_appendf(&sb, "none");
    }
    return sb.len;
}

static size_t ucs_config_bitmap_help(char *buf, size_t max,
                                     const char *const *names, unsigned count)
{
    ucs_config_strbuf_t sb;
    unsigned i;

    ucs_config_strbuf_init(&sb, buf, max);
    ucs_config_strbuf_appendf(&sb, "a comma-separated list of ");
    for (i = 0; i < count; ++i) {
        ucs_config_strbuf_appendf(&sb, "%s%s", (i == 0) ? "" : ",", names[i]);
    }
    ucs_config_strbuf_appendf(&sb, ", or all, or none");
    return sb.len;
}

ucs_status_t ucs_config_read_bitmap(const char *str, void *value,
                                    const ucs_config_parser_t *parser)
{
    return ucs_config_bitmap_read(str, value, parser->arg,
                                  ucs_config_names_count(parser->arg, 64));
}

size_t ucs_config_write_bitmap(const void *value, char *buf, size_t max,
                               const ucs_config_parser_t *parser)
{
    return ucs_config_bitmap_write(*(const uint64_t*)value, buf, max,
                                   parser->arg,
                                   ucs_config_names_count(parser->arg, 64));
}

size_t ucs_config_help_bitmap(char *buf, size_t max,
                              const ucs_config_parser_t *parser)
{
    return ucs_config_bitmap_help(buf, max, parser->arg,
                                  ucs_config_names_count(parser->arg, 64));
}

/* ucs_memory_type_names ends with "unknown", which is no memory type a user
 * may select, so the memory-type flavour stops at UCS_MEMORY_TYPE_LAST. */
ucs_status_t ucs_config_read_memtype_bitmap(const char *str, void *value,
                                            const ucs_config_parser_t *parser)
{
    return ucs_config_bitmap_read(str, value, ucs_memory_type_names,
                                  UCS_MEMORY_TYPE_LAST);
}

size_t ucs_config_write_memtype_bitmap(const void *value, char *buf,
                                       size_t max,
                                       const ucs_config_parser_t *parser)
{
    return ucs_config_bitmap_write(*(const uint64_t*)value, buf, max,
                                   ucs_memory_type_names,
                                   UCS_MEMORY_TYPE_LAST);
}

size_t ucs_config_help_memtype_bitmap(char *buf, size_t max,
                                      const ucs_config_parser_t *parser)
{
    return ucs_config_bitmap_help(buf, max, ucs_memory_type_names,
                                  UCS_MEMORY_TYPE_LAST);
}


/* ---- string array ---------------------------------------------------- */

static ucs_status_t ucs_config_string_array_item(const char *item, size_t len,
                                                 void *arg)
{
    ucs_config_names_array_t *array = arg;
    char **names;

    if (ucs_config_has_space(item, len)) {
        return UCS_ERR_INVALID_PARAM;
    }

    names = realloc(array->names, sizeof(*names) * (array->count + 1));
    if (names == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    array->names = names;

    names[array->count] = ucs_config_strndup(item, len);
    if (names[array->count] == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    ++array->count;
    return UCS_OK;
}

/* Parses @a str into a fresh array; @a array is left empty on failure. */
static ucs_status_t ucs_config_string_array_parse(const char *str,
                                                  ucs_config_names_array_t *array)
{
    ucs_status_t status;

    memset(array, 0, sizeof(*array));
    if (str[0] == '\0') {
        return UCS_OK;
    }

    status = ucs_config_foreach_item(str, ucs_config_string_array_item, array);
    if (status != UCS_OK) {
        ucs_config_release_string_array(array, NULL);
    }
    return status;
}

static size_t ucs_config_string_array_write(const ucs_config_names_array_t *array,
                                            ucs_config_strbuf_t *sb)
{
    unsigned i;

    for (i = 0; i < array->count; ++i) {
        ucs_config_strbuf_appendf(sb, "%s%s", (i == 0) ? "" : ",",
                                  array->names[i]);
    }
    return sb->len;
}

ucs_status_t ucs_config_read_string_array(const char *str, void *value,
                                          const ucs_config_parser_t *parser)
{
    ucs_config_names_array_t array;
    ucs_status_t status;

    status = ucs_config_string_array_parse(str, &array);
    if (status == UCS_OK) {
        ucs_config_release_string_array(value, parser);
        *(ucs_config_names_array_t*)value = array;
    }
    return status;
}

size_t ucs_config_write_string_array(const void *value, char *buf, size_t max,
                                     const ucs_config_parser_t *parser)
{
    ucs_config_strbuf_t sb;

    ucs_config_strbuf_init(&sb, buf, max);
    return ucs_config_string_array_write(value, &sb);
}

size_t ucs_config_help_string_array(char *buf, size_t max,
                                    const ucs_config_parser_t *parser)
{
    return (size_t)snprintf(buf, max, "a comma-separated list of names "
                            "without spaces, or empty");
}

ucs_status_t ucs_config_clone_string_array(const void *src, void *dst,
                                           const ucs_config_parser_t *parser)
{
    const ucs_config_names_array_t *from = src;
    ucs_config_names_array_t *to         = dst;
    unsigned i;

    memset(to, 0, sizeof(*to));
    if (from->count == 0) {
        return UCS_OK;
    }

    to->names = calloc(from->count, sizeof(*to->names));
    if (to->names == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    for (i = 0; i < from->count; ++i) {
        to->names[i] = strdup(from->names[i]);
        if (to->names[i] == NULL) {
            ucs_config_release_string_array(to, parser);
            return UCS_ERR_NO_MEMORY;
        }
        to->count = i + 1;
    }
    return UCS_OK;
}

void ucs_config_release_string_array(void *value,
                                     const ucs_config_parser_t *parser)
{
    ucs_config_names_array_t *array = value;
    unsigned i;

    for (i = 0; i < array->count; ++i) {
        free(array->names[i]);
    }
    free(array->names);
    memset(array, 0, sizeof(*array));
}


/* ---- allow list ------------------------------------------------------ */

ucs_status_t ucs_config_read_allow_list(const char *str, void *value,
                                        const ucs_config_parser_t *parser)
{
    ucs_config_allow_list_t list = {{NULL, 0, 0},
                                    UCS_CONFIG_ALLOW_LIST_ALLOW_ALL};
    ucs_status_t status;
    unsigned i;

    if (strcasecmp(str, "all") != 0) {
        list.mode = UCS_CONFIG_ALLOW_LIST_ALLOW;
        if (str[0] == '^') {
            list.mode = UCS_CONFIG_ALLOW_LIST_NEGATE;
            ++str;
        }
        if (str[0] == '\0') {
            return UCS_ERR_INVALID_PARAM; /* "" or "^" selects nothing */
        }

        status = ucs_config_string_array_parse(str, &list.array);
        if (status != UCS_OK) {
            return status;
        }

        /* "all" inside a list is ambiguous ("^all"? "tcp,all"?) */
        for (i = 0; i < list.array.count; ++i) {
            if (!strcasecmp(list.array.names[i], "all")) {
                ucs_config_release_string_array(&list.array, parser);
                return UCS_ERR_INVALID_PARAM;
            }
        }
    }

    ucs_config_release_allow_list(value, parser);
    *(ucs_config_allow_list_t*)value = list;
    return UCS_OK;
}

size_t ucs_config_write_allow_list(const void *value, char *buf, size_t max,
                                   const ucs_config_parser_t *parser)
{
    const ucs_config_allow_list_t *list = value;
    ucs_config_strbuf_t sb;

    ucs_config_strbuf_init(&sb, buf, max);
    if (list->mode == UCS_CONFIG_ALLOW_LIST_ALLOW_ALL) {
        ucs_config_strbuf_appendf(&sb, "all");
        return sb.len;
    } else if (list->mode == UCS_CONFIG_ALLOW_LIST_NEGATE) {
        ucs_config_strbuf_appendf(&sb, "^");
    }
    return ucs_config_string_array_write(&list->array, &sb);
}

size_t ucs_config_help_allow_list(char *buf, size_t max,
                                  const ucs_config_parser_t *parser)
{
    return (size_t)snprintf(buf, max, "all, a comma-separated list of names "
                            "to use (a,b), or ^ and names to exclude (^a,b)");
}

ucs_status_t ucs_config_clone_allow_list(const void *src, void *dst,
                                         const ucs_config_parser_t *parser)
{
    const ucs_config_allow_list_t *from = src;
    ucs_config_allow_list_t *to         = dst;

    to->mode = from->mode;
    return ucs_config_clone_string_array(&from->array, &to->array, parser);
}

void ucs_config_release_allow_list(void *value,
                                   const ucs_config_parser_t *parser)
{
    ucs_config_allow_list_t *list = value;

    ucs_config_release_string_array(&list->array, parser);
    list->mode = UCS_CONFIG_ALLOW_LIST_ALLOW_ALL;
}


/* ---- per-memory-type map --------------------------------------------- */

const ucs_config_parser_t ucs_config_memtype_size_elem =
        UCS_CONFIG_TYPE_SIZE_EX(UCS_CONFIG_PARSE_INF);

static void *ucs_config_memtype_slot(void *map, const ucs_config_parser_t *elem,
                                     unsigned mem_type)
{
    return (char*)map + (elem->size * mem_type);
}

typedef struct {
    void                      *map;
    const ucs_config_parser_t *elem;
    char                      *scratch; /* one item, NUL-terminated */
} ucs_config_memtype_map_ctx_t;

static ucs_status_t ucs_config_memtype_map_item(const char *item, size_t len,
                                                void *arg)
{
    ucs_config_memtype_map_ctx_t *ctx = arg;
    const char *colon, *value;
    ucs_status_t status;
    unsigned mem_type;
    int index;

    memcpy(ctx->scratch, item, len);
    ctx->scratch[len] = '\0';

    colon = strchr(ctx->scratch, ':');
    if (colon == NULL) {
        for (mem_type = 0; mem_type < UCS_MEMORY_TYPE_LAST; ++mem_type) {
            status = ctx->elem->read(ctx->scratch,
                                     ucs_config_memtype_slot(ctx->map,
                                                             ctx->elem,
                                                             mem_type),
                                     ctx->elem);
            if (status != UCS_OK) {
                return status;
            }
        }
        return UCS_OK;
    }

    index = ucs_config_names_find(ucs_memory_type_names, ctx->scratch,
                                  (size_t)(colon - ctx->scratch));
    if ((index < 0) || (index >= UCS_MEMORY_TYPE_LAST)) {
        return UCS_ERR_INVALID_PARAM;
    }

    value = colon + 1;
    return ctx->elem->read(value,
                           ucs_config_memtype_slot(ctx->map, ctx->elem, index),
                           ctx->elem);
}

ucs_status_t ucs_config_read_memtype_map(const char *str, void *value,
                                         const ucs_config_parser_t *parser)
{
    ucs_config_memtype_map_ctx_t ctx;
    ucs_status_t status;

    /* Items update @a value in place: it is the engine's scratch copy, so a
     * failure halfway leaves the real value untouched. */
    ctx.map     = value;
    ctx.elem    = parser->arg;
    ctx.scratch = malloc(strlen(str) + 1);
    if (ctx.scratch == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    status = ucs_config_foreach_item(str, ucs_config_memtype_map_item, &ctx);
    free(ctx.scratch);
    return status;
}

size_t ucs_config_write_memtype_map(const void *value, char *buf, size_t max,
                                    const ucs_config_parser_t *parser)
{
    const ucs_config_parser_t *elem = parser->arg;
    char *strs[UCS_MEMORY_TYPE_LAST] = {NULL};
    ucs_config_strbuf_t sb;
    unsigned mem_type;
    int all_same = 1;

    ucs_config_strbuf_init(&sb, buf, max);
    for (mem_type = 0; mem_type < UCS_MEMORY_TYPE_LAST; ++mem_type) {
        strs[mem_type] = ucs_config_parser_value_str(
                elem, ucs_config_memtype_slot((void*)value, elem, mem_type));
        if (strs[mem_type] == NULL) {
            goto out; /* out of memory: report an empty string */
        }
        all_same = all_same && !strcmp(strs[mem_type], strs[0]);
    }

    /* One value for all types reads back the same and is easier to read. */
    if (all_same) {
        ucs_config_strbuf_appendf(&sb, "%s", strs[0]);
    } else {
        for (mem_type = 0; mem_type < UCS_MEMORY_TYPE_LAST; ++mem_type) {
            ucs_config_strbuf_appendf(&sb, "%s%s:%s", (mem_type == 0) ? "" : ",",
                                      ucs_memory_type_names[mem_type],
                                      strs[mem_type]);
        }
    }

out:
    for (mem_type = 0; mem_type < UCS_MEMORY_TYPE_LAST; ++mem_type) {
        free(strs[mem_type]);
    }
    return sb.len;
}

size_t ucs_config_help_memtype_map(char *buf, size_t max,
                                   const ucs_config_parser_t *parser)
{
    const ucs_config_parser_t *elem = parser->arg;
    ucs_config_strbuf_t sb;
    size_t elem_len;
    unsigned i;

    ucs_config_strbuf_init(&sb, buf, max);
    ucs_config_strbuf_appendf(&sb, "a comma-separated list of TYPE:VALUE, "
                              "TYPE one of ");
    for (i = 0; i < UCS_MEMORY_TYPE_LAST; ++i) {
        ucs_config_strbuf_appendf(&sb, "%s%s", (i == 0) ? "" : ",",
                                  ucs_memory_type_names[i]);
    }
    ucs_config_strbuf_appendf(&sb, " (a VALUE without TYPE sets every type; "
                              "unlisted types keep their value); VALUE is ");

    /* The element writes its own help at the end of the buffer. */
    elem_len = elem->help((sb.len < sb.max) ? (sb.buf + sb.len) : NULL,
                          (sb.len < sb.max) ? (sb.max - sb.len) : 0, elem);
    return sb.len + elem_len;
}

ucs_status_t ucs_config_clone_memtype_map(const void *src, void *dst,
                                          const ucs_config_parser_t *parser)
{
    const ucs_config_parser_t *elem = parser->arg;
    ucs_status_t status;
    unsigned mem_type;

    if (elem->clone == NULL) {
        memcpy(dst, src, parser->size);
        return UCS_OK;
    }

    memset(dst, 0, parser->size);
    for (mem_type = 0; mem_type < UCS_MEMORY_TYPE_LAST; ++mem_type) {
        status = elem->clone(ucs_config_memtype_slot((void*)src, elem,
                                                     mem_type),
                             ucs_config_memtype_slot(dst, elem, mem_type),
                             elem);
        if (status != UCS_OK) {
            ucs_config_release_memtype_map(dst, parser);
            return status;
        }
    }
    return UCS_OK;
}

void ucs_config_release_memtype_map(void *value,
                                    const ucs_config_parser_t *parser)
{
    const ucs_config_parser_t *elem = parser->arg;
    unsigned mem_type;

    if (elem->release != NULL) {
        for (mem_type = 0; mem_type < UCS_MEMORY_TYPE_LAST; ++mem_type) {
            elem->release(ucs_config_memtype_slot(value, elem, mem_type), elem);
        }
    }
    memset(value, 0, parser->size);
}
