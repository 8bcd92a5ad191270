/**
 * @file fuzz_common.h
 * What the libFuzzer targets of test/fuzz share: quiet-but-evaluated
 * logging, a loopback UCP context/worker/endpoint, and the reader of the
 * "message sequence" inputs that the AM handler target and the seed
 * generator agree on.
 *
 * A message sequence is a list of records, each
 *     op u8, length u16 (little-endian), then @a length payload bytes
 * where op < 0x80 delivers an active message with id op % UCT_AM_ID_MAX and
 * the payload as its data, and op >= 0x80 is a local action (post a
 * receive, progress the worker; see fuzz_am.c). A record whose length runs
 * past the input is cut to what is left, so every byte string is a valid
 * sequence.
 */
#ifndef UCX_FUZZ_COMMON_H_
#define UCX_FUZZ_COMMON_H_

#include <ucp/api/ucp.h>

#include <stddef.h>
#include <stdint.h>

#define FUZZ_OP_POST_RECV_ANY  0x80 /**< receive any tag: [capacity u32] */
#define FUZZ_OP_POST_RECV_TAG  0x81 /**< receive one tag: [tag u64][capacity u32] */
#define FUZZ_OP_PROGRESS       0x82 /**< progress the worker once */

typedef struct fuzz_record {
    uint8_t       op;
    const uint8_t *data;
    size_t        length;
} fuzz_record_t;

typedef struct fuzz_cursor {
    const uint8_t *p;
    const uint8_t *end;
} fuzz_cursor_t;

/** Log every level to /dev/null (so that the arguments of every log call
 *  are formatted and checked by the sanitizers) unless $FUZZ_LOG names
 *  another destination ("stderr"). */
void fuzz_quiet_logs(void);

/** Next record of a sequence; 0 at the end. */
int fuzz_next_record(fuzz_cursor_t *cursor, fuzz_record_t *record);

/** Append a record to @a out (a growing buffer, @a len its length). */
void fuzz_append_record(uint8_t **out, size_t *len, uint8_t op,
                        const void *data, size_t length);

/** A context over the transports in @a tls (e.g. "self") with the TAG, RMA,
 *  AM and atomic features; aborts when it cannot be made. */
ucp_context_h fuzz_context_create(const char *tls);

/** A worker of @a context and an endpoint to itself. */
void fuzz_worker_create(ucp_context_h context, ucp_worker_h *worker_p,
                        ucp_ep_h *ep_p);

/** Close @a ep, then destroy @a worker (everything they hold is freed). */
void fuzz_worker_destroy(ucp_worker_h worker, ucp_ep_h ep);

/** Copy @a size bytes into a fresh malloc'ed buffer of exactly that size
 *  (never NULL), so that the sanitizer sees any read past the end. */
void *fuzz_dup(const uint8_t *data, size_t size);

#endif
