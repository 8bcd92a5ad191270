/**
 * @file perf_wire.h
 * Byte encoding of what crosses the out-of-band channel: test parameters
 * and the blobs drivers exchange (addresses, remote keys). Integers are
 * little-endian and fixed width and every read is bounds-checked, so a
 * short or garbled message from a peer is an error, never a crash.
 */
#ifndef PERF_WIRE_H_
#define PERF_WIRE_H_

#include "perftest.h"

/** A growing output buffer. Starts zeroed; owns @a data (free with perf_wire_free()). */
typedef struct perf_wire_out {
    uint8_t *data;
    size_t  length;
    size_t  capacity;
    int     failed;  /**< an allocation failed; the content is incomplete */
} perf_wire_out_t;

/** A read cursor over received bytes (not owned). */
typedef struct perf_wire_in {
    const uint8_t *data;
    size_t        length;
    size_t        offset;
    int           failed; /**< a read went past the end or met a bad value */
} perf_wire_in_t;

/** Append a 32-bit integer (little-endian). On allocation failure sets out->failed. */
void perf_wire_put_u32(perf_wire_out_t *out, uint32_t value);

/** Append a 64-bit integer (little-endian). */
void perf_wire_put_u64(perf_wire_out_t *out, uint64_t value);

/** Append a double as its 64-bit IEEE-754 pattern. */
void perf_wire_put_double(perf_wire_out_t *out, double value);

/** Append a string (length-prefixed, no terminator). */
void perf_wire_put_str(perf_wire_out_t *out, const char *str);

/** Append @a length bytes, prefixed by their 32-bit length. */
void perf_wire_put_bytes(perf_wire_out_t *out, const void *data, size_t length);

/** Free the buffer of @a out and zero it. */
void perf_wire_free(perf_wire_out_t *out);

/** Start reading @a length bytes at @a data. */
void perf_wire_in_init(perf_wire_in_t *in, const void *data, size_t length);

/** Read a 32-bit integer; past the end: 0 and in->failed set. */
uint32_t perf_wire_get_u32(perf_wire_in_t *in);

/** Read a 64-bit integer; past the end: 0 and in->failed set. */
uint64_t perf_wire_get_u64(perf_wire_in_t *in);

/** Read a double; past the end: 0 and in->failed set. */
double perf_wire_get_double(perf_wire_in_t *in);

/** Read a string into @a dst (@a max bytes with the terminator); too long fails. */
void perf_wire_get_str(perf_wire_in_t *in, char *dst, size_t max);

/**
 * Read a byte string without copying: *data_p points into the input.
 * @return its length (0 and failed set if it does not fit).
 */
size_t perf_wire_get_bytes(perf_wire_in_t *in, const void **data_p);

/** Serialise @a params (all fields; the receiver validates ranges). */
void perf_params_pack(const perf_params_t *params, perf_wire_out_t *out);

/**
 * Read parameters written by perf_params_pack() and check that they are
 * self-consistent (known layout, sg_count within bounds, msg_size equal
 * to the sum of sg). UCS_ERR_INVALID_PARAM with @a error set otherwise.
 */
ucs_status_t perf_params_unpack(const void *data, size_t length, perf_params_t *params,
                                char *error, size_t max);

#endif
