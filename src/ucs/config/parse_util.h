/**
 * @file parse_util.h
 * Helpers shared by the value parsers and the engine (internal to
 * src/ucs/config): bounded string building with snprintf semantics and
 * name-list lookups.
 */
#ifndef UCS_CONFIG_PARSE_UTIL_H_
#define UCS_CONFIG_PARSE_UTIL_H_

#include <ucs/config/parser.h>

#include <stddef.h>

BEGIN_C_DECLS

/**
 * Output of a write/help function: appends never overflow @a buf, and @a len
 * counts the full length so that callers can size a second attempt.
 */
typedef struct {
    char   *buf;  /**< may be NULL when max is 0 */
    size_t max;   /**< bytes available, NUL included */
    size_t len;   /**< length of everything appended so far */
} ucs_config_strbuf_t;

/** Start writing into @a buf; it holds "" right away when max > 0. */
void ucs_config_strbuf_init(ucs_config_strbuf_t *sb, char *buf, size_t max);

/** Append formatted text, truncating what does not fit. */
void ucs_config_strbuf_appendf(ucs_config_strbuf_t *sb, const char *fmt, ...)
    UCS_F_PRINTF(2, 3);

/** Append the NULL-terminated @a names separated by @a sep. */
void ucs_config_strbuf_append_names(ucs_config_strbuf_t *sb,
                                    const char *const *names, const char *sep);

/**
 * Run a snprintf-style writer into a buffer of the right size.
 * @return a malloc'ed string owned by the caller, or NULL if out of memory.
 */
char *ucs_config_parser_value_str(const ucs_config_parser_t *parser,
                                  const void *value);

/** As ucs_config_parser_value_str(), for the parser's help text. */
char *ucs_config_parser_help_str(const ucs_config_parser_t *parser);

/**
 * Index of @a name in the NULL-terminated @a names, ignoring case;
 * considers only the first @a len characters of @a name.
 * @return the index, or -1.
 */
int ucs_config_names_find(const char *const *names, const char *name,
                          size_t len);

/** Copy of the first @a len bytes of @a str, NUL-terminated; NULL if no memory. */
char *ucs_config_strndup(const char *str, size_t len);

/**
 * Parse a non-empty run of decimal digits at @a str (no sign, no spaces).
 * @param end    receives the first character after the digits.
 * @return 0, or -1 when there is no digit or the number exceeds 64 bits.
 */
int ucs_config_parse_digits(const char *str, const char **end,
                            unsigned long long *value);

/**
 * Whether @a str is one of the words the parser's flags allow.
 * @return UCS_CONFIG_PARSE_INF for "inf", UCS_CONFIG_PARSE_AUTO for "auto"
 *         (either in any case, when allowed by @a flags), otherwise 0.
 */
unsigned ucs_config_parse_special(const char *str, unsigned flags);

/** Append " or inf", ", inf or auto", ... as @a flags allow, for help texts. */
void ucs_config_strbuf_append_special(ucs_config_strbuf_t *sb, unsigned flags);

/**
 * Fewest significant digits for "%.*g" to print @a x without an exponent
 * when it has integer digits ("10", not "1e+01"); 1 for numbers of 1e17 and
 * above, which need an exponent in any case.
 */
int ucs_config_min_precision(double x);

END_C_DECLS

#endif
