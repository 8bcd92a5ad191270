#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "fuzz_common.h"

#include <ucs/debug/log.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fuzz_quiet_logs(void)
{
    const char *dest = getenv("FUZZ_LOG");

    /* Debug level: every ucs_debug/ucs_error argument is formatted, so a
     * log call that prints a non-terminated name from the wire is caught. */
    if (ucs_log_set_file((dest != NULL) ? dest : "/dev/null") != UCS_OK) {
        abort();
    }
    ucs_log_set_level(UCS_LOG_LEVEL_DEBUG);
}

/* Targets without their own setup get quiet logs; libFuzzer calls this
 * once before the first input (a target's strong definition wins). */
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_quiet_logs();
    return 0;
}

int fuzz_next_record(fuzz_cursor_t *cursor, fuzz_record_t *record)
{
    size_t left = (size_t)(cursor->end - cursor->p), length;

    if (left < 1) {
        return 0;
    }
    record->op = cursor->p[0];
    length     = (left >= 3) ? (size_t)(cursor->p[1] | (cursor->p[2] << 8)) : 0;
    cursor->p += (left >= 3) ? 3 : left;
    left       = (size_t)(cursor->end - cursor->p);
    if (length > left) {
        length = left;
    }
    record->data   = cursor->p;
    record->length = length;
    cursor->p     += length;
    return 1;
}

void fuzz_append_record(uint8_t **out, size_t *len, uint8_t op,
                        const void *data, size_t length)
{
    uint8_t *buf;

    if (length > 0xffff) {
        length = 0xffff;
    }
    buf = realloc(*out, *len + 3 + length);
    if (buf == NULL) {
        abort();
    }
    buf[*len]     = op;
    buf[*len + 1] = (uint8_t)length;
    buf[*len + 2] = (uint8_t)(length >> 8);
    if (length > 0) {
        memcpy(buf + *len + 3, data, length);
    }
    *out  = buf;
    *len += 3 + length;
}

void *fuzz_dup(const uint8_t *data, size_t size)
{
    void *copy = malloc(size ? size : 1);

    if (copy == NULL) {
        abort();
    }
    if (size > 0) {
        memcpy(copy, data, size);
    }
    return copy;
}
