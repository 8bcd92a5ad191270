/*
 * Parsers of single values: strings, booleans and their three-way cousins,
 * integers, doubles and enums. See parser.h for the contracts.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <ucs/config/parse_util.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Words for true and false shared by bool, ternary and on/off, so that a
 * user who writes "yes" where "on" is documented is not punished. */
static const char *ucs_config_true_words[]  = {"y", "yes", "on", "1", NULL};
static const char *ucs_config_false_words[] = {"n", "no", "off", "0", NULL};

/* 1 for a true word, 0 for a false word, -1 for anything else. */
static int ucs_config_parse_yes_no(const char *str)
{
    if (ucs_config_names_find(ucs_config_true_words, str, strlen(str)) >= 0) {
        return 1;
    }
    if (ucs_config_names_find(ucs_config_false_words, str, strlen(str)) >= 0) {
        return 0;
    }
    return -1;
}


/* ---- string ---------------------------------------------------------- */

ucs_status_t ucs_config_read_string(const char *str, void *value,
                                    const ucs_config_parser_t *parser)
{
    char **dst = value;
    char *copy = strdup(str);

    if (copy == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    free(*dst);
    *dst = copy;
    return UCS_OK;
}

size_t ucs_config_write_string(const void *value, char *buf, size_t max,
                               const ucs_config_parser_t *parser)
{
    const char *str = *(char *const*)value;
    ucs_config_strbuf_t sb;

    ucs_config_strbuf_init(&sb, buf, max);
    ucs_config_strbuf_appendf(&sb, "%s", (str == NULL) ? "" : str);
    return sb.len;
}

size_t ucs_config_help_string(char *buf, size_t max,
                              const ucs_config_parser_t *parser)
{
    return (size_t)snprintf(buf, max, "a string");
}

ucs_status_t ucs_config_clone_string(const void *src, void *dst,
                                     const ucs_config_parser_t *parser)
{
    const char *str = *(char *const*)src;
    char **copy     = dst;

    if (str == NULL) {
        *copy = NULL;
        return UCS_OK;
    }
    *copy = strdup(str);
    return (*copy == NULL) ? UCS_ERR_NO_MEMORY : UCS_OK;
}

void ucs_config_release_string(void *value, const ucs_config_parser_t *parser)
{
    char **str = value;

    free(*str);
    *str = NULL;
}


/* ---- bool ------------------------------------------------------------ */

ucs_status_t ucs_config_read_bool(const char *str, void *value,
                                  const ucs_config_parser_t *parser)
{
    int yes_no = ucs_config_parse_yes_no(str);

    if (yes_no < 0) {
        return UCS_ERR_INVALID_PARAM;
    }
    *(int*)value = yes_no;
    return UCS_OK;
}

size_t ucs_config_write_bool(const void *value, char *buf, size_t max,
                             const ucs_config_parser_t *parser)
{
    return (size_t)snprintf(buf, max, "%s", *(const int*)value ? "y" : "n");
}

size_t ucs_config_help_bool(char *buf, size_t max,
                            const ucs_config_parser_t *parser)
{
    return (size_t)snprintf(buf, max, "one of y,n,yes,no,on,off,1,0");
}


/* ---- ternary: y/n/try[/auto] ----------------------------------------- */

ucs_status_t ucs_config_read_ternary(const char *str, void *value,
                                     const ucs_config_parser_t *parser)
{
    int yes_no = ucs_config_parse_yes_no(str);

    if (yes_no >= 0) {
        *(int*)value = yes_no ? UCS_YES : UCS_NO;
    } else if (!strcasecmp(str, "try")) {
        *(int*)value = UCS_TRY;
    } else if (ucs_config_parse_special(str, parser->flags) ==
               UCS_CONFIG_PARSE_AUTO) {
        *(int*)value = UCS_AUTO;
    } else {
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

size_t ucs_config_write_ternary(const void *value, char *buf, size_t max,
                                const ucs_config_parser_t *parser)
{
    static const char *names[] = {
        [UCS_NO] = "n", [UCS_YES] = "y", [UCS_TRY] = "try", [UCS_AUTO] = "auto"
    };
    int v = *(const int*)value;

    return (size_t)snprintf(buf, max, "%s",
                            ((v >= 0) && (v < UCS_TERNARY_LAST)) ? names[v] :
                                                                   "?");
}

size_t ucs_config_help_ternary(char *buf, size_t max,
                               const ucs_config_parser_t *parser)
{
    return (size_t)snprintf(buf, max, "one of y,n,try%s (yes,no,on,off,1,0 "
                            "also accepted)",
                            (parser->flags & UCS_CONFIG_PARSE_AUTO) ? ",auto" :
                                                                      "");
}


/* ---- on/off[/auto] --------------------------------------------------- */

ucs_status_t ucs_config_read_on_off(const char *str, void *value,
                                    const ucs_config_parser_t *parser)
{
    int yes_no = ucs_config_parse_yes_no(str);

    if (yes_no >= 0) {
        *(int*)value = yes_no ? UCS_CONFIG_ON : UCS_CONFIG_OFF;
    } else if (ucs_config_parse_special(str, parser->flags) ==
               UCS_CONFIG_PARSE_AUTO) {
        *(int*)value = UCS_CONFIG_AUTO;
    } else {
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

size_t ucs_config_write_on_off(const void *value, char *buf, size_t max,
                               const ucs_config_parser_t *parser)
{
    static const char *names[] = {
        [UCS_CONFIG_OFF] = "off", [UCS_CONFIG_ON] = "on",
        [UCS_CONFIG_AUTO] = "auto"
    };
    int v = *(const int*)value;

    return (size_t)snprintf(buf, max, "%s",
                            ((v >= 0) && (v < UCS_CONFIG_ON_OFF_LAST)) ?
                                    names[v] : "?");
}

size_t ucs_config_help_on_off(char *buf, size_t max,
                              const ucs_config_parser_t *parser)
{
    return (size_t)snprintf(buf, max, "one of on,off%s (y,n,yes,no,1,0 also "
                            "accepted)",
                            (parser->flags & UCS_CONFIG_PARSE_AUTO) ? ",auto" :
                                                                      "");
}


/* ---- integers -------------------------------------------------------- */

/* An unsigned decimal up to @a max, or a special word the flags allow.
 * No sign, no spaces, no base prefixes: "010" is ten, not eight. */
static ucs_status_t ucs_config_parse_unsigned(const char *str, unsigned flags,
                                              unsigned long long max,
                                              unsigned long long inf,
                                              unsigned long long autov,
                                              unsigned long long *value)
{
    unsigned special = ucs_config_parse_special(str, flags);
    const char *end;

    if (special == UCS_CONFIG_PARSE_INF) {
        *value = inf;
        return UCS_OK;
    } else if (special == UCS_CONFIG_PARSE_AUTO) {
        *value = autov;
        return UCS_OK;
    }

    if ((ucs_config_parse_digits(str, &end, value) != 0) || (*end != '\0') ||
        (*value > max)) {
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

static size_t ucs_config_write_unsigned(unsigned long long v, unsigned flags,
                                        unsigned long long inf,
                                        unsigned long long autov, char *buf,
                                        size_t max)
{
    if ((flags & UCS_CONFIG_PARSE_INF) && (v == inf)) {
        return (size_t)snprintf(buf, max, "inf");
    } else if ((flags & UCS_CONFIG_PARSE_AUTO) && (v == autov)) {
        return (size_t)snprintf(buf, max, "auto");
    }
    return (size_t)snprintf(buf, max, "%llu", v);
}

static size_t ucs_config_help_unsigned(char *buf, size_t max, unsigned flags,
                                       unsigned long long limit)
{
    ucs_config_strbuf_t sb;

    ucs_config_strbuf_init(&sb, buf, max);
    ucs_config_strbuf_appendf(&sb, "a decimal integer from 0 to %llu", limit);
    ucs_config_strbuf_append_special(&sb, flags);
    return sb.len;
}

ucs_status_t ucs_config_read_int(const char *str, void *value,
                                 const ucs_config_parser_t *parser)
{
    int negative = (str[0] == '-');
    unsigned long long limit, v;
    const char *end;

    limit = negative ? ((unsigned long long)INT_MAX + 1) : INT_MAX;
    if ((ucs_config_parse_digits(str + negative, &end, &v) != 0) ||
        (*end != '\0') || (v > limit)) {
        return UCS_ERR_INVALID_PARAM;
    }

    *(int*)value = negative ? (int)(-(long long)v) : (int)v;
    return UCS_OK;
}

size_t ucs_config_write_int(const void *value, char *buf, size_t max,
                            const ucs_config_parser_t *parser)
{
    return (size_t)snprintf(buf, max, "%d", *(const int*)value);
}

size_t ucs_config_help_int(char *buf, size_t max,
                           const ucs_config_parser_t *parser)
{
    return (size_t)snprintf(buf, max, "a decimal integer from %d to %d",
                            INT_MIN, INT_MAX);
}

ucs_status_t ucs_config_read_uint(const char *str, void *value,
                                  const ucs_config_parser_t *parser)
{
    unsigned long long v;
    ucs_status_t status;

    status = ucs_config_parse_unsigned(str, parser->flags, UINT_MAX,
                                       UCS_CONFIG_UINT_INF,
                                       UCS_CONFIG_UINT_AUTO, &v);
    if (status == UCS_OK) {
        *(unsigned*)value = (unsigned)v;
    }
    return status;
}

size_t ucs_config_write_uint(const void *value, char *buf, size_t max,
                             const ucs_config_parser_t *parser)
{
    return ucs_config_write_unsigned(*(const unsigned*)value, parser->flags,
                                     UCS_CONFIG_UINT_INF, UCS_CONFIG_UINT_AUTO,
                                     buf, max);
}

size_t ucs_config_help_uint(char *buf, size_t max,
                            const ucs_config_parser_t *parser)
{
    return ucs_config_help_unsigned(buf, max, parser->flags, UINT_MAX);
}

ucs_status_t ucs_config_read_ulong(const char *str, void *value,
                                   const ucs_config_parser_t *parser)
{
    unsigned long long v;
    ucs_status_t status;

    status = ucs_config_parse_unsigned(str, parser->flags, ULONG_MAX,
                                       UCS_ULUNITS_INF, UCS_ULUNITS_AUTO, &v);
    if (status == UCS_OK) {
        *(unsigned long*)value = (unsigned long)v;
    }
    return status;
}

size_t ucs_config_write_ulong(const void *value, char *buf, size_t max,
                              const ucs_config_parser_t *parser)
{
    return ucs_config_write_unsigned(*(const unsigned long*)value,
                                     parser->flags, UCS_ULUNITS_INF,
                                     UCS_ULUNITS_AUTO, buf, max);
}

size_t ucs_config_help_ulong(char *buf, size_t max,
                             const ucs_config_parser_t *parser)
{
    return ucs_config_help_unsigned(buf, max, parser->flags, ULONG_MAX);
}


/* ---- double ---------------------------------------------------------- */

ucs_status_t ucs_config_read_double(const char *str, void *value,
                                    const ucs_config_parser_t *parser)
{
    char *end;
    double v;

    /* strtod also takes hex, "inf", "nan" and leading spaces; a
     * configuration value is plain decimal, so those are rejected here. */
    if ((str[0] == '\0') || (str[strspn(str, "0123456789.eE+-")] != '\0')) {
        return UCS_ERR_INVALID_PARAM;
    }

    errno = 0;
    v     = strtod(str, &end);
    if ((end == str) || (*end != '\0') || !isfinite(v) ||
        ((errno == ERANGE) && (fabs(v) > 1.0))) {
        return UCS_ERR_INVALID_PARAM;
    }

    *(double*)value = v;
    return UCS_OK;
}

size_t ucs_config_write_double(const void *value, char *buf, size_t max,
                               const ucs_config_parser_t *parser)
{
    double v = *(const double*)value;
    char tmp[64];
    int precision;

    /* The shortest form that reads back to the same double keeps printed
     * configurations readable ("0.1", not "0.10000000000000001"). */
    for (precision = ucs_config_min_precision(v); precision < 17;
         ++precision) {
        snprintf(tmp, sizeof(tmp), "%.*g", precision, v);
        if (strtod(tmp, NULL) == v) {
            break;
        }
    }
    return (size_t)snprintf(buf, max, "%.*g", precision, v);
}

size_t ucs_config_help_double(char *buf, size_t max,
                              const ucs_config_parser_t *parser)
{
    return (size_t)snprintf(buf, max, "a decimal number (e.g. 0.5, -2, 1e-3)");
}


/* ---- enum ------------------------------------------------------------ */

ucs_status_t ucs_config_read_enum(const char *str, void *value,
                                  const ucs_config_parser_t *parser)
{
    int index = ucs_config_names_find(parser->arg, str, strlen(str));

    if (index < 0) {
        return UCS_ERR_INVALID_PARAM;
    }
    *(unsigned*)value = (unsigned)index;
    return UCS_OK;
}

size_t ucs_config_write_enum(const void *value, char *buf, size_t max,
                             const ucs_config_parser_t *parser)
{
    const char *const *names = parser->arg;
    unsigned v               = *(const unsigned*)value;
    unsigned count;

    for (count = 0; names[count] != NULL; ++count) {
    }
    if (v >= count) {
        return (size_t)snprintf(buf, max, "<invalid:%u>", v);
    }
    return (size_t)snprintf(buf, max, "%s", names[v]);
}

size_t ucs_config_help_enum(char *buf, size_t max,
                            const ucs_config_parser_t *parser)
{
    ucs_config_strbuf_t sb;

    ucs_config_strbuf_init(&sb, buf, max);
    ucs_config_strbuf_appendf(&sb, "one of ");
    ucs_config_strbuf_append_names(&sb, parser->arg, ",");
    return sb.len;
}
