#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_iface.h"

#include <string.h>

/*
 * Scatter/gather walks shared by the zcopy paths of copy-based transports
 * (self, shared memory bounce buffers, tcp).
 */

static inline unsigned uct_iov_count(const uct_iov_t *iov)
{
    return (iov->count == 0) ? 1 : iov->count;
}

size_t uct_iov_total_length(const uct_iov_t *iov, size_t iovcnt)
{
    size_t total = 0, i;

    for (i = 0; i < iovcnt; ++i) {
        total += iov[i].length * uct_iov_count(&iov[i]);
    }
    return total;
}

size_t uct_iov_to_buffer(const uct_iov_t *iov, size_t iovcnt, void *dest)
{
    char *p = dest;
    const char *src;
    unsigned j;
    size_t i;

    for (i = 0; i < iovcnt; ++i) {
        if (iov[i].length == 0) {
            continue; /* buffer may be NULL */
        }
        src = iov[i].buffer;
        for (j = 0; j < uct_iov_count(&iov[i]); ++j) {
            memcpy(p, src, iov[i].length);
            p   += iov[i].length;
            src += iov[i].stride;
        }
    }
    return (size_t)(p - (char*)dest);
}

size_t uct_iov_from_buffer(const uct_iov_t *iov, size_t iovcnt, const void *src)
{
    const char *p = src;
    char *dst;
    unsigned j;
    size_t i;

    for (i = 0; i < iovcnt; ++i) {
        if (iov[i].length == 0) {
            continue;
        }
        dst = iov[i].buffer;
        for (j = 0; j < uct_iov_count(&iov[i]); ++j) {
            memcpy(dst, p, iov[i].length);
            p   += iov[i].length;
            dst += iov[i].stride;
        }
    }
    return (size_t)(p - (const char*)src);
}
