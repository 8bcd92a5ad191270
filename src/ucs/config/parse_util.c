#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <ucs/config/parse_util.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void ucs_config_strbuf_init(ucs_config_strbuf_t *sb, char *buf, size_t max)
{
    sb->buf = buf;
    sb->max = max;
    sb->len = 0;
    if (max > 0) {
        buf[0] = '\0';
    }
}

void ucs_config_strbuf_appendf(ucs_config_strbuf_t *sb, const char *fmt, ...)
{
    size_t room = (sb->len < sb->max) ? (sb->max - sb->len) : 0;
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf((room > 0) ? (sb->buf + sb->len) : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0) {
        sb->len += (size_t)n;
    }
}

void ucs_config_strbuf_append_names(ucs_config_strbuf_t *sb,
                                    const char *const *names, const char *sep)
{
    unsigned i;

    for (i = 0; names[i] != NULL; ++i) {
        ucs_config_strbuf_appendf(sb, "%s%s", (i == 0) ? "" : sep, names[i]);
    }
}

/* Writers follow snprintf: ask for the length first, then write for real.
 * Values are small and this runs at init time, so two passes are cheap. */
char *ucs_config_parser_value_str(const ucs_config_parser_t *parser,
                                  const void *value)
{
    size_t len = parser->write(value, NULL, 0, parser);
    char *str  = malloc(len + 1);

    if (str != NULL) {
        parser->write(value, str, len + 1, parser);
    }
    return str;
}

char *ucs_config_parser_help_str(const ucs_config_parser_t *parser)
{
    size_t len = parser->help(NULL, 0, parser);
    char *str  = malloc(len + 1);

    if (str != NULL) {
        parser->help(str, len + 1, parser);
    }
    return str;
}

int ucs_config_names_find(const char *const *names, const char *name,
                          size_t len)
{
    int i;

    for (i = 0; names[i] != NULL; ++i) {
        if ((strlen(names[i]) == len) && !strncasecmp(names[i], name, len)) {
            return i;
        }
    }
    return -1;
}

char *ucs_config_strndup(const char *str, size_t len)
{
    char *copy = malloc(len + 1);

    if (copy != NULL) {
        memcpy(copy, str, len);
        copy[len] = '\0';
    }
    return copy;
}

int ucs_config_parse_digits(const char *str, const char **end,
                            unsigned long long *value)
{
    unsigned long long result = 0;
    const char *p;

    for (p = str; (*p >= '0') && (*p <= '9'); ++p) {
        if (__builtin_mul_overflow(result, 10ull, &result) ||
            __builtin_add_overflow(result, (unsigned long long)(*p - '0'),
                                   &result)) {
            return -1;
        }
    }

    if (p == str) {
        return -1;
    }
    *end   = p;
    *value = result;
    return 0;
}

unsigned ucs_config_parse_special(const char *str, unsigned flags)
{
    if ((flags & UCS_CONFIG_PARSE_INF) && !strcasecmp(str, "inf")) {
        return UCS_CONFIG_PARSE_INF;
    }
    if ((flags & UCS_CONFIG_PARSE_AUTO) && !strcasecmp(str, "auto")) {
        return UCS_CONFIG_PARSE_AUTO;
    }
    return 0;
}

void ucs_config_strbuf_append_special(ucs_config_strbuf_t *sb, unsigned flags)
{
    if ((flags & UCS_CONFIG_PARSE_INF) && (flags & UCS_CONFIG_PARSE_AUTO)) {
        ucs_config_strbuf_appendf(sb, ", inf or auto");
    } else if (flags & UCS_CONFIG_PARSE_INF) {
        ucs_config_strbuf_appendf(sb, " or inf");
    } else if (flags & UCS_CONFIG_PARSE_AUTO) {
        ucs_config_strbuf_appendf(sb, " or auto");
    }
}

int ucs_config_min_precision(double x)
{
    double magnitude = (x < 0) ? -x : x;
    int precision    = 1;

    if (magnitude >= 1e17) {
        return 1; /* too large to print without an exponent anyway */
    }

    while ((magnitude >= 10.0) && (precision < 17)) {
        magnitude /= 10.0;
        ++precision;
    }
    return precision;
}
