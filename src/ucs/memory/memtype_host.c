#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <ucs/memory/memtype_host.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* Read buffer. A line is "start-end perms offset dev inode path"; only the
 * first three fields matter, so a line longer than the buffer (a very long
 * path) is judged by its head and the rest skipped. */
#define UCS_MEMTYPE_HOST_BUF_SIZE 4096

typedef enum {
    UCS_MEMTYPE_HOST_LINE_BELOW, /* the mapping ends at or below the address */
    UCS_MEMTYPE_HOST_LINE_FOUND, /* it contains the address */
    UCS_MEMTYPE_HOST_LINE_ABOVE, /* it starts above: the address is unmapped,
                                    since lines come in address order */
    UCS_MEMTYPE_HOST_LINE_BAD    /* not in the expected format */
} ucs_memtype_host_line_t;


/* Parse lower-case or upper-case hex digits up to @a stop and step past it. */
static int ucs_memtype_host_parse_hex(const char **p_p, char stop,
                                      uintptr_t *value_p)
{
    const char *p   = *p_p;
    uintptr_t value = 0;
    unsigned digits = 0;
    int digit;

    for (;; ++p) {
        if ((*p >= '0') && (*p <= '9')) {
            digit = *p - '0';
        } else if ((*p >= 'a') && (*p <= 'f')) {
            digit = *p - 'a' + 10;
        } else if ((*p >= 'A') && (*p <= 'F')) {
            digit = *p - 'A' + 10;
        } else {
            break;
        }
        if (digits == 2 * sizeof(uintptr_t)) {
            return 0;
        }
        value = (value << 4) | (uintptr_t)digit;
        ++digits;
    }

    if ((digits == 0) || (*p != stop)) {
        return 0;
    }
    *p_p     = p + 1;
    *value_p = value;
    return 1;
}

/* Judge one NUL-terminated line against @a address. */
static ucs_memtype_host_line_t
ucs_memtype_host_parse_line(const char *line, uintptr_t address,
                            uintptr_t *start_p, uintptr_t *end_p,
                            int *accessible_p)
{
    const char *p = line;
    uintptr_t start, end;

    if (!ucs_memtype_host_parse_hex(&p, '-', &start) ||
        !ucs_memtype_host_parse_hex(&p, ' ', &end) || (start >= end) ||
        (strlen(p) < 2)) {
        return UCS_MEMTYPE_HOST_LINE_BAD;
    }

    if (end <= address) {
        return UCS_MEMTYPE_HOST_LINE_BELOW;
    }
    if (start > address) {
        return UCS_MEMTYPE_HOST_LINE_ABOVE;
    }

    *start_p      = start;
    *end_p        = end;
    *accessible_p = (p[0] == 'r') || (p[1] == 'w');
    return UCS_MEMTYPE_HOST_LINE_FOUND;
}

static ucs_status_t ucs_memtype_host_verdict(ucs_memtype_host_line_t verdict,
                                             int accessible)
{
    switch (verdict) {
    case UCS_MEMTYPE_HOST_LINE_FOUND:
        return accessible ? UCS_OK : UCS_ERR_UNSUPPORTED;
    case UCS_MEMTYPE_HOST_LINE_ABOVE:
        return UCS_ERR_NO_ELEM;
    default:
        return UCS_ERR_IO_ERROR;
    }
}

ucs_status_t ucs_memtype_host_mapping(uintptr_t address, uintptr_t *start_p,
                                      uintptr_t *end_p)
{
    char buf[UCS_MEMTYPE_HOST_BUF_SIZE + 1];
    ucs_memtype_host_line_t verdict = UCS_MEMTYPE_HOST_LINE_ABOVE;
    size_t fill                     = 0;
    int skip_tail                   = 0; /* inside an overlong line */
    int accessible                  = 0;
    char *line, *newline;
    ssize_t nread;
    int fd;

    /* Plain read(2), no stdio: no allocation, and no FILE lock that a
     * caller interrupted inside stdio could hold. */
    fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return UCS_ERR_IO_ERROR;
    }

    for (;;) {
        nread = read(fd, buf + fill, UCS_MEMTYPE_HOST_BUF_SIZE - fill);
        if (nread < 0) {
            if (errno == EINTR) {
                continue;
            }
            verdict = UCS_MEMTYPE_HOST_LINE_BAD;
            break;
        }
        if (nread == 0) {
            /* end of file: the address is above every mapping */
            verdict = UCS_MEMTYPE_HOST_LINE_ABOVE;
            break;
        }

        fill += (size_t)nread;
        line  = buf;
        while ((newline = memchr(line, '\n', (size_t)(buf + fill - line))) !=
               NULL) {
            *newline = '\0';
            if (!skip_tail) {
                verdict = ucs_memtype_host_parse_line(line, address, start_p,
                                                      end_p, &accessible);
                if (verdict != UCS_MEMTYPE_HOST_LINE_BELOW) {
                    goto out;
                }
            }
            skip_tail = 0;
            line      = newline + 1;
        }

        fill = (size_t)(buf + fill - line);
        if (fill < UCS_MEMTYPE_HOST_BUF_SIZE) {
            memmove(buf, line, fill); /* keep the partial line */
            continue;
        }

        /* A whole buffer without a newline: judge the line by its head. */
        buf[UCS_MEMTYPE_HOST_BUF_SIZE] = '\0';
        if (!skip_tail) {
            verdict = ucs_memtype_host_parse_line(buf, address, start_p, end_p,
                                                  &accessible);
            if (verdict != UCS_MEMTYPE_HOST_LINE_BELOW) {
                goto out;
            }
        }
        skip_tail = 1;
        fill      = 0;
    }

out:
    close(fd);
    return ucs_memtype_host_verdict(verdict, accessible);
}
