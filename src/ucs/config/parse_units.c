/*
 * Parsers of quantities with units: sizes ("4M") and times ("10ms").
 *
 * Sizes use binary units (K = 1024). A fraction is accepted when it names a
 * whole number of bytes ("1.5M", "0.5K") and rejected otherwise ("0.1K",
 * "1.5"): a size that silently rounds is a surprise when it is a buffer
 * length. Times are stored as double seconds; a bare number is seconds.
 * Neither type accepts signs, spaces ("10 ms") or anything after the unit.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <ucs/config/parse_util.h>

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Fraction digits kept exact in 128-bit arithmetic (10^30 < 2^100). Nobody
 * types more; a longer fraction is rejected rather than rounded. */
#define UCS_CONFIG_SIZE_FRAC_DIGITS_MAX 30

static const char ucs_config_size_units[] = "bkmgt"; /* index = power of 1024 */


/* ---- size ------------------------------------------------------------ */

/* Unit suffix at @a p: "", "b", or one of K,M,G,T optionally followed by
 * "b", in any case. Returns the power of 1024, or -1. */
static int ucs_config_parse_size_unit(const char *p)
{
    const char *unit;

    if (*p == '\0') {
        return 0;
    }

    unit = strchr(ucs_config_size_units, tolower((unsigned char)*p));
    if (unit == NULL) {
        return -1;
    }

    ++p;
    if ((unit != ucs_config_size_units) && (tolower((unsigned char)*p) == 'b')) {
        ++p; /* "KB" reads as "K" */
    }
    return (*p == '\0') ? (int)(unit - ucs_config_size_units) : -1;
}

static ucs_status_t ucs_config_parse_size(const char *str, size_t *value)
{
    unsigned __int128 frac = 0, scale = 1, bytes;
    unsigned long long whole = 0;
    const char *p = str;
    int have_digits = 0, power;
    unsigned frac_digits = 0;

    if ((*p >= '0') && (*p <= '9')) {
        if (ucs_config_parse_digits(p, &p, &whole) != 0) {
            return UCS_ERR_INVALID_PARAM; /* overflow */
        }
        have_digits = 1;
    }

    if (*p == '.') {
        for (++p; (*p >= '0') && (*p <= '9'); ++p) {
            if (++frac_digits > UCS_CONFIG_SIZE_FRAC_DIGITS_MAX) {
                return UCS_ERR_INVALID_PARAM;
            }
            frac   = (frac * 10) + (unsigned)(*p - '0');
            scale *= 10;
        }
        if (frac_digits == 0) {
            return UCS_ERR_INVALID_PARAM; /* "1." or "." */
        }
        have_digits = 1;
    }

    power = ucs_config_parse_size_unit(p);
    if (!have_digits || (power < 0)) {
        return UCS_ERR_INVALID_PARAM;
    }

    /* bytes = whole * 1024^power + frac * 1024^power / 10^frac_digits, in
     * 128 bits so that every overflow is detected rather than wrapped. */
    bytes = (unsigned __int128)whole << (10 * power);
    if ((bytes >> (10 * power)) != whole) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (frac != 0) {
        if (frac > (~(unsigned __int128)0 >> (10 * power))) {
            return UCS_ERR_INVALID_PARAM;
        }
        frac <<= 10 * power;
        if ((frac % scale) != 0) {
            return UCS_ERR_INVALID_PARAM; /* not a whole number of bytes */
        }
        bytes += frac / scale;
    }
    if (bytes > SIZE_MAX) {
        return UCS_ERR_INVALID_PARAM;
    }

    *value = (size_t)bytes;
    return UCS_OK;
}

ucs_status_t ucs_config_read_size(const char *str, void *value,
                                  const ucs_config_parser_t *parser)
{
    unsigned special = ucs_config_parse_special(str, parser->flags);

    if (special == UCS_CONFIG_PARSE_INF) {
        *(size_t*)value = UCS_MEMUNITS_INF;
        return UCS_OK;
    } else if (special == UCS_CONFIG_PARSE_AUTO) {
        *(size_t*)value = UCS_MEMUNITS_AUTO;
        return UCS_OK;
    }
    return ucs_config_parse_size(str, value);
}

size_t ucs_config_write_size(const void *value, char *buf, size_t max,
                             const ucs_config_parser_t *parser)
{
    size_t v = *(const size_t*)value;
    int power;

    if ((parser->flags & UCS_CONFIG_PARSE_INF) && (v == UCS_MEMUNITS_INF)) {
        return (size_t)snprintf(buf, max, "inf");
    } else if ((parser->flags & UCS_CONFIG_PARSE_AUTO) &&
               (v == UCS_MEMUNITS_AUTO)) {
        return (size_t)snprintf(buf, max, "auto");
    }

    /* The largest unit that divides exactly keeps the value exact. */
    for (power = (int)sizeof(ucs_config_size_units) - 2; power > 0; --power) {
        if ((v != 0) && ((v & ((1ull << (10 * power)) - 1)) == 0)) {
            return (size_t)snprintf(buf, max, "%zu%c", v >> (10 * power),
                                    toupper(ucs_config_size_units[power]));
        }
    }
    return (size_t)snprintf(buf, max, "%zu", v);
}

size_t ucs_config_help_size(char *buf, size_t max,
                            const ucs_config_parser_t *parser)
{
    ucs_config_strbuf_t sb;

    ucs_config_strbuf_init(&sb, buf, max);
    ucs_config_strbuf_appendf(&sb, "a size in bytes with an optional unit "
                              "K,M,G,T (powers of 1024; e.g. 512, 64K, 1.5M)");
    ucs_config_strbuf_append_special(&sb, parser->flags);
    return sb.len;
}


/* ---- time ------------------------------------------------------------ */

static const struct {
    const char *suffix;
    double     per_second;
} ucs_config_time_units[] = {
    /* Largest first: the writer prefers the first unit that is exact. */
    {"s",  1.0},
    {"ms", 1e3},
    {"us", 1e6},
    {"ns", 1e9}
};

ucs_status_t ucs_config_read_time(const char *str, void *value,
                                  const ucs_config_parser_t *parser)
{
    unsigned special = ucs_config_parse_special(str, parser->flags);
    size_t number_len;
    char *end;
    double v;
    unsigned i;

    if (special == UCS_CONFIG_PARSE_INF) {
        *(double*)value = UCS_CONFIG_TIME_INF;
        return UCS_OK;
    } else if (special == UCS_CONFIG_PARSE_AUTO) {
        *(double*)value = UCS_CONFIG_TIME_AUTO;
        return UCS_OK;
    }

    /* Plain decimal only: strtod would also take a sign, spaces, hex,
     * "inf" and "nan". */
    number_len = strspn(str, "0123456789.eE+-");
    if ((number_len == 0) || (str[0] == '-') || (str[0] == '+')) {
        return UCS_ERR_INVALID_PARAM;
    }

    errno = 0;
    v     = strtod(str, &end);
    if ((end == str) || ((size_t)(end - str) != number_len) || !isfinite(v) ||
        (errno == ERANGE)) {
        return UCS_ERR_INVALID_PARAM;
    }

    if (*end == '\0') {
        *(double*)value = v; /* seconds */
        return UCS_OK;
    }

    for (i = 0; i < sizeof(ucs_config_time_units) /
                    sizeof(ucs_config_time_units[0]); ++i) {
        if (!strcmp(end, ucs_config_time_units[i].suffix)) {
            *(double*)value = v / ucs_config_time_units[i].per_second;
            return UCS_OK;
        }
    }
    return UCS_ERR_INVALID_PARAM;
}

size_t ucs_config_write_time(const void *value, char *buf, size_t max,
                             const ucs_config_parser_t *parser)
{
    double v = *(const double*)value;
    char tmp[64];
    double scaled;
    unsigned i;
    int precision;

    if ((parser->flags & UCS_CONFIG_PARSE_INF) && isinf(v) && (v > 0)) {
        return (size_t)snprintf(buf, max, "inf");
    } else if ((parser->flags & UCS_CONFIG_PARSE_AUTO) &&
               (v == UCS_CONFIG_TIME_AUTO)) {
        return (size_t)snprintf(buf, max, "auto");
    }

    /* Prefer the unit a person would use (10ms rather than 0.01s), but only
     * a form that reads back to exactly the same double. Seconds with 17
     * digits always do, so that is the fallback. */
    for (i = 0; i < sizeof(ucs_config_time_units) /
                    sizeof(ucs_config_time_units[0]); ++i) {
        scaled = v * ucs_config_time_units[i].per_second;
        if ((i + 1 < sizeof(ucs_config_time_units) /
                             sizeof(ucs_config_time_units[0])) &&
            (fabs(scaled) < 1.0) && (v != 0)) {
            continue;
        }
        for (precision = ucs_config_min_precision(scaled); precision <= 15;
             ++precision) {
            snprintf(tmp, sizeof(tmp), "%.*g", precision, scaled);
            if ((strtod(tmp, NULL) / ucs_config_time_units[i].per_second) ==
                v) {
                return (size_t)snprintf(buf, max, "%s%s", tmp,
                                        ucs_config_time_units[i].suffix);
            }
        }
    }
    return (size_t)snprintf(buf, max, "%.17gs", v);
}

size_t ucs_config_help_time(char *buf, size_t max,
                            const ucs_config_parser_t *parser)
{
    ucs_config_strbuf_t sb;

    ucs_config_strbuf_init(&sb, buf, max);
    ucs_config_strbuf_appendf(&sb, "a time with a unit s,ms,us,ns (e.g. 2s, "
                              "10ms, 1.8us; a bare number is seconds)");
    ucs_config_strbuf_append_special(&sb, parser->flags);
    return sb.len;
}
