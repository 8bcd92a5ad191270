#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "perf_wire.h"

#include <stdlib.h>
#include <string.h>

/* Largest byte string a peer may announce: far above any address or key,
 * far below anything that could exhaust memory. */
#define PERF_WIRE_MAX_BYTES (1u << 20)

static uint8_t *perf_wire_reserve(perf_wire_out_t *out, size_t length)
{
    size_t capacity;
    uint8_t *data;

    if (out->failed) {
        return NULL;
    }
    if (out->length + length > out->capacity) {
        capacity = (out->capacity > 0) ? out->capacity : 256;
        while (capacity < out->length + length) {
            capacity *= 2;
        }
        data = realloc(out->data, capacity);
        if (data == NULL) {
            out->failed = 1;
            return NULL;
        }
        out->data     = data;
        out->capacity = capacity;
    }
    data         = out->data + out->length;
    out->length += length;
    return data;
}

void perf_wire_put_u64(perf_wire_out_t *out, uint64_t value)
{
    uint8_t *p = perf_wire_reserve(out, 8);
    int i;

    if (p != NULL) {
        for (i = 0; i < 8; ++i) {
            p[i] = (uint8_t)(value >> (8 * i));
        }
    }
}

void perf_wire_put_u32(perf_wire_out_t *out, uint32_t value)
{
    uint8_t *p = perf_wire_reserve(out, 4);
    int i;

    if (p != NULL) {
        for (i = 0; i < 4; ++i) {
            p[i] = (uint8_t)(value >> (8 * i));
        }
    }
}

void perf_wire_put_double(perf_wire_out_t *out, double value)
{
    uint64_t bits;

    memcpy(&bits, &value, sizeof(bits));
    perf_wire_put_u64(out, bits);
}

void perf_wire_put_bytes(perf_wire_out_t *out, const void *data, size_t length)
{
    uint8_t *p;

    perf_wire_put_u32(out, (uint32_t)length);
    p = perf_wire_reserve(out, length);
    if ((p != NULL) && (length > 0)) {
        memcpy(p, data, length);
    }
}

void perf_wire_put_str(perf_wire_out_t *out, const char *str)
{
    perf_wire_put_bytes(out, str, strlen(str));
}

void perf_wire_free(perf_wire_out_t *out)
{
    free(out->data);
    memset(out, 0, sizeof(*out));
}

void perf_wire_in_init(perf_wire_in_t *in, const void *data, size_t length)
{
    in->data   = data;
    in->length = length;
    in->offset = 0;
    in->failed = 0;
}

static const uint8_t *perf_wire_take(perf_wire_in_t *in, size_t length)
{
    const uint8_t *p;

    if (in->failed || (length > in->length - in->offset)) {
        in->failed = 1;
        return NULL;
    }
    p           = in->data + in->offset;
    in->offset += length;
    return p;
}

uint64_t perf_wire_get_u64(perf_wire_in_t *in)
{
    const uint8_t *p = perf_wire_take(in, 8);
    uint64_t value   = 0;
    int i;

    if (p != NULL) {
        for (i = 0; i < 8; ++i) {
            value |= (uint64_t)p[i] << (8 * i);
        }
    }
    return value;
}

uint32_t perf_wire_get_u32(perf_wire_in_t *in)
{
    const uint8_t *p = perf_wire_take(in, 4);
    uint32_t value   = 0;
    int i;

    if (p != NULL) {
        for (i = 0; i < 4; ++i) {
            value |= (uint32_t)p[i] << (8 * i);
        }
    }
    return value;
}

double perf_wire_get_double(perf_wire_in_t *in)
{
    uint64_t bits = perf_wire_get_u64(in);
    double value;

    memcpy(&value, &bits, sizeof(value));
    return value;
}

size_t perf_wire_get_bytes(perf_wire_in_t *in, const void **data_p)
{
    uint32_t length = perf_wire_get_u32(in);
    const uint8_t *p;

    if (length > PERF_WIRE_MAX_BYTES) {
        in->failed = 1;
    }
    p = perf_wire_take(in, in->failed ? 0 : length);
    if (in->failed) {
        *data_p = NULL;
        return 0;
    }
    *data_p = p;
    return length;
}

void perf_wire_get_str(perf_wire_in_t *in, char *dst, size_t max)
{
    const void *data;
    size_t length = perf_wire_get_bytes(in, &data);

    if (in->failed || (length >= max) || (memchr(data, '\0', length) != NULL)) {
        in->failed = 1;
        dst[0]     = '\0';
        return;
    }
    memcpy(dst, data, length);
    dst[length] = '\0';
}

void perf_params_pack(const perf_params_t *params, perf_wire_out_t *out)
{
    unsigned i;

    perf_wire_put_str(out, params->test_name);
    perf_wire_put_str(out, params->tl_name);
    perf_wire_put_str(out, params->dev_name);
    perf_wire_put_str(out, params->mem_kind[PERF_SIDE_SEND]);
    perf_wire_put_str(out, params->mem_kind[PERF_SIDE_RECV]);
    perf_wire_put_u32(out, params->layout);
    perf_wire_put_u32(out, params->sg_count);
    for (i = 0; i < params->sg_count; ++i) {
        perf_wire_put_u64(out, params->sg[i]);
    }
    perf_wire_put_u64(out, params->msg_size);
    perf_wire_put_u64(out, params->iters);
    perf_wire_put_u64(out, params->warmup);
    perf_wire_put_u32(out, params->window);
    perf_wire_put_u32(out, params->outstanding);
    perf_wire_put_u32(out, params->flags);
    perf_wire_put_double(out, params->percentile);
    perf_wire_put_double(out, params->timeout);
    perf_wire_put_u32(out, params->device[PERF_SIDE_SEND]);
    perf_wire_put_u32(out, params->device[PERF_SIDE_RECV]);
    perf_wire_put_u32(out, params->am_header);
}

ucs_status_t perf_params_unpack(const void *data, size_t length, perf_params_t *params,
                                char *error, size_t max)
{
    perf_wire_in_t in;
    size_t sum = 0;
    unsigned i;

    memset(params, 0, sizeof(*params));
    perf_wire_in_init(&in, data, length);
    perf_wire_get_str(&in, params->test_name, sizeof(params->test_name));
    perf_wire_get_str(&in, params->tl_name, sizeof(params->tl_name));
    perf_wire_get_str(&in, params->dev_name, sizeof(params->dev_name));
    perf_wire_get_str(&in, params->mem_kind[PERF_SIDE_SEND],
                      sizeof(params->mem_kind[PERF_SIDE_SEND]));
    perf_wire_get_str(&in, params->mem_kind[PERF_SIDE_RECV],
                      sizeof(params->mem_kind[PERF_SIDE_RECV]));
    params->layout   = (perf_layout_t)perf_wire_get_u32(&in);
    params->sg_count = perf_wire_get_u32(&in);
    if ((params->sg_count == 0) || (params->sg_count > PERF_MAX_SG)) {
        in.failed = 1;
    }
    for (i = 0; !in.failed && (i < params->sg_count); ++i) {
        params->sg[i] = perf_wire_get_u64(&in);
        sum          += params->sg[i];
    }
    params->msg_size    = perf_wire_get_u64(&in);
    params->iters       = perf_wire_get_u64(&in);
    params->warmup      = perf_wire_get_u64(&in);
    params->window      = perf_wire_get_u32(&in);
    params->outstanding = perf_wire_get_u32(&in);
    params->flags       = perf_wire_get_u32(&in);
    params->percentile  = perf_wire_get_double(&in);
    params->timeout     = perf_wire_get_double(&in);
    params->device[PERF_SIDE_SEND] = perf_wire_get_u32(&in);
    params->device[PERF_SIDE_RECV] = perf_wire_get_u32(&in);
    params->am_header              = perf_wire_get_u32(&in);

    if (in.failed || (in.offset != in.length) || (params->layout >= PERF_LAYOUT_LAST) ||
        (sum != params->msg_size) || (params->iters == 0) || !(params->percentile > 0.0) ||
        !(params->percentile <= 100.0) || !(params->timeout > 0.0)) {
        snprintf(error, max, "malformed test parameters from the peer (%zu bytes)",
                 length);
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}
