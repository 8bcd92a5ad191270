#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * libFuzzer target: the UCX_* value parsers of the configuration engine and
 * the configuration-file reader.
 *
 * The first byte picks a parser (sizes, times, integers, enums, bitmaps,
 * memory-type sets and per-memory-type maps, lists, allow lists, booleans)
 * or the file reader; the rest is the value string (cut at the first NUL,
 * as getenv() would give it). Beyond "never crash", a value that is read
 * must survive the round trip the engine's contract promises: writing it
 * and reading the text back gives a value that writes the same text; the
 * written length must be what a second, exactly-sized write produces; and
 * clone/release must leave nothing behind.
 */

#include "fuzz_common.h"

#include <ucs/config/config_file.h>
#include <ucs/config/parse_util.h>
#include <ucs/config/parser.h>
#include <ucs/debug/log.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static const char *fuzz_config_names[] = {"alpha", "beta", "gamma", "a", "ab", NULL};

static const ucs_config_parser_t fuzz_config_parsers[] = {
    UCS_CONFIG_TYPE_SIZE,
    UCS_CONFIG_TYPE_SIZE_EX(UCS_CONFIG_PARSE_INF | UCS_CONFIG_PARSE_AUTO),
    UCS_CONFIG_TYPE_TIME,
    UCS_CONFIG_TYPE_TIME_EX(UCS_CONFIG_PARSE_INF | UCS_CONFIG_PARSE_AUTO),
    UCS_CONFIG_TYPE_UINT,
    UCS_CONFIG_TYPE_UINT_EX(UCS_CONFIG_PARSE_INF | UCS_CONFIG_PARSE_AUTO),
    UCS_CONFIG_TYPE_ULONG_EX(UCS_CONFIG_PARSE_INF | UCS_CONFIG_PARSE_AUTO),
    UCS_CONFIG_TYPE_INT,
    UCS_CONFIG_TYPE_DOUBLE,
    UCS_CONFIG_TYPE_BOOL,
    UCS_CONFIG_TYPE_TERNARY_AUTO,
    UCS_CONFIG_TYPE_ON_OFF_AUTO,
    UCS_CONFIG_TYPE_LOG_LEVEL,
    UCS_CONFIG_TYPE_ENUM(fuzz_config_names),
    UCS_CONFIG_TYPE_BITMAP(fuzz_config_names),
    UCS_CONFIG_TYPE_MEMTYPE_BITMAP,
    UCS_CONFIG_TYPE_STRING,
    UCS_CONFIG_TYPE_STRING_ARRAY,
    UCS_CONFIG_TYPE_ALLOW_LIST,
    UCS_CONFIG_TYPE_MEMTYPE_SIZE_MAP
};

#define FUZZ_CONFIG_NUM_PARSERS \
    (sizeof(fuzz_config_parsers) / sizeof(fuzz_config_parsers[0]))
#define FUZZ_CONFIG_VALUE_MAX 256

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_config_release(const ucs_config_parser_t *parser, void *value)
{
    if (parser->release != NULL) {
        parser->release(value, parser);
    }
}

/* Canonical text of @a value, checked against an exactly-sized write. */
static char *fuzz_config_write(const ucs_config_parser_t *parser, const void *value)
{
    size_t len = parser->write(value, NULL, 0, parser), len2;
    char *text = malloc(len + 1);

    if (text == NULL) {
        abort();
    }
    len2 = parser->write(value, text, len + 1, parser);
    if ((len2 != len) || (strlen(text) != len)) {
        abort();
    }
    return text;
}

static void fuzz_config_value(const ucs_config_parser_t *parser, const char *str)
{
    _Alignas(16) uint8_t value[FUZZ_CONFIG_VALUE_MAX] = {0};
    _Alignas(16) uint8_t again[FUZZ_CONFIG_VALUE_MAX] = {0};
    _Alignas(16) uint8_t copy[FUZZ_CONFIG_VALUE_MAX];
    char *text, *text2, small[4];
    ucs_status_t status;

    if (parser->size > FUZZ_CONFIG_VALUE_MAX) {
        abort();
    }
    if (parser->read(str, value, parser) != UCS_OK) {
        fuzz_config_release(parser, value); /* must still be valid */
        return;
    }
    text = fuzz_config_write(parser, value);
    (void)parser->write(value, small, sizeof(small), parser); /* truncates */
    status = parser->read(text, again, parser);
    if (status != UCS_OK) {
        fprintf(stderr, "fuzz_config: '%s' read, its text '%s' does not\n", str, text);
        abort();
    }
    text2 = fuzz_config_write(parser, again);
    if (strcmp(text, text2) != 0) {
        fprintf(stderr, "fuzz_config: '%s' -> '%s' -> '%s'\n", str, text, text2);
        abort();
    }
    if (parser->clone != NULL) {
        if (parser->clone(value, copy, parser) == UCS_OK) {
            fuzz_config_release(parser, copy);
        }
    }
    free(text2);
    free(text);
    fuzz_config_release(parser, again);
    fuzz_config_release(parser, value);
}

/* The file reader gets the bytes as a file (memfd, no disk). */
static void fuzz_config_file(const uint8_t *data, size_t size)
{
    ucs_config_file_t file;
    char path[64];
    int fd;

    fd = memfd_create("fuzz_config", 0);
    if (fd < 0) {
        abort();
    }
    if ((size > 0) && (write(fd, data, size) != (ssize_t)size)) {
        abort();
    }
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    if (ucs_config_file_load(path, &file) == UCS_OK) {
        (void)ucs_config_file_lookup(&file, "UCX_TLS");
        ucs_config_file_release(&file);
    }
    close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned sel;
    char *str;

    if (size < 1) {
        return 0;
    }
    sel = data[0] % (FUZZ_CONFIG_NUM_PARSERS + 1);
    if (sel == FUZZ_CONFIG_NUM_PARSERS) {
        fuzz_config_file(data + 1, size - 1);
        return 0;
    }
    str = ucs_config_strndup((const char*)data + 1, size - 1);
    if (str == NULL) {
        abort();
    }
    fuzz_config_value(&fuzz_config_parsers[sel], str);
    free(str);
    return 0;
}
