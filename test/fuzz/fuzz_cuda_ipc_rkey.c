#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * libFuzzer target: uct_cuda_ipc_rkey_parse(), the cuda_ipc md's key parser
 * (every kind: legacy handle, pool export, VMM chunks with fds, VMM chunks
 * with fabric handles). Built from the parser's source with the CUDA
 * headers only: no driver is called.
 *
 * The key is checksummed; when the low bit of the input's last byte is set
 * the target rewrites the length and checksum to match the bytes so that
 * the checks behind them are reached. A key that parses must describe
 * chunks inside the object, and packing it again must give back the same
 * bytes (the format has one encoding per key; a version 1 key, read but
 * never written, must parse again once packed as the current version).
 */

#include "fuzz_common.h"

#include <uct/cuda/cuda_ipc_rkey.h>

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* FNV-1a over the key with the checksum field (bytes 12..15) as zero. */
static void fuzz_cuda_ipc_fix(uint8_t *key, size_t size)
{
    uint32_t length = (uint32_t)size, hash = 2166136261u;
    size_t i;

    memcpy(key + 8, &length, 4);
    for (i = 0; i < size; ++i) {
        hash ^= ((i >= 12) && (i < 16)) ? 0 : key[i];
        hash *= 16777619u;
    }
    memcpy(key + 12, &hash, 4);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t max = uct_cuda_ipc_rkey_max_size(), len;
    static uct_cuda_ipc_key_t key;
    uint8_t *buf, *again;
    uint32_t claimed;
    unsigned i;

    if (size == 0) {
        return 0;
    }
    len = size - 1;
    if (len > max) {
        len = max;
    }
    /* The md always hands the parser a buffer of the maximum key size. */
    buf = calloc(1, max);
    if (buf == NULL) {
        abort();
    }
    memcpy(buf, data, len);
    if ((data[size - 1] & 1) && (len >= 16)) {
        fuzz_cuda_ipc_fix(buf, len);
    }
    if (uct_cuda_ipc_rkey_parse(buf, &key) == UCS_OK) {
        for (i = 0; i < key.num_chunks; ++i) {
            if ((key.num_chunks > UCT_CUDA_IPC_RKEY_MAX_CHUNKS) ||
                (key.chunks[i].offset + key.chunks[i].size > key.length)) {
                abort();
            }
        }
        again = malloc(max);
        if (again == NULL) {
            abort();
        }
        uct_cuda_ipc_rkey_pack(&key, again);
        memcpy(&claimed, buf + 8, sizeof(claimed));
        if (claimed > max) {
            abort();
        }
        /* An older version is read but written as the current one: it must
         * parse again; a current key must come back byte for byte. */
        if ((buf[4] == UCT_CUDA_IPC_RKEY_VERSION) ?
            (memcmp(again, buf, claimed) != 0) :
            (uct_cuda_ipc_rkey_parse(again, &key) != UCS_OK)) {
            abort();
        }
        free(again);
    }
    free(buf);
    return 0;
}
