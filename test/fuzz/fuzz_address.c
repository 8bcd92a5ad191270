#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * libFuzzer target: ucp_address_unpack(), the parser of the worker address
 * a peer sends (out of band, or inside a wireup message).
 *
 * The blob carries a checksum, which random mutations almost never keep
 * right; so for half of the inputs (low bit of the last byte set) the
 * target rewrites the length fields and the checksum to match the bytes,
 * the way a buggy or hostile peer that computes them would, and the entry
 * parser behind the checks gets fuzzed too. On success every entry must lie
 * inside the blob.
 */

#include "fuzz_common.h"

#include <ucp/core/ucp_int.h>
#include <ucs/datastruct/hmap.h>

#include <stdlib.h>
#include <string.h>

#define FUZZ_ADDR_HDR_SIZE     56 /* ucp_address_header_t */
#define FUZZ_ADDR_LEN_OFFSET   8
#define FUZZ_ADDR_CSUM_OFFSET  12
#define FUZZ_ADDR_CHECK_OFFSET 44

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Same hash as the packer: header with the checksum field zero, then the
 * rest of the blob. */
static void fuzz_address_fix(uint8_t *blob, size_t size)
{
    uint32_t length = (uint32_t)size, check = ~length, csum;
    uint8_t hdr[FUZZ_ADDR_HDR_SIZE];
    uint64_t hash;

    memcpy(blob + FUZZ_ADDR_LEN_OFFSET, &length, 4);
    memcpy(blob + FUZZ_ADDR_CHECK_OFFSET, &check, 4);
    memcpy(hdr, blob, sizeof(hdr));
    memset(hdr + FUZZ_ADDR_CSUM_OFFSET, 0, 4);
    hash = ucs_hash_bytes(hdr, sizeof(hdr), 0x5eed);
    hash = ucs_hash_bytes(blob + sizeof(hdr), size - sizeof(hdr), hash);
    csum = (uint32_t)(hash ^ (hash >> 32));
    memcpy(blob + FUZZ_ADDR_CSUM_OFFSET, &csum, 4);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static ucp_unpacked_address_t addr;
    uint8_t *blob;
    const uint8_t *p;
    unsigned i;

    if (size == 0) {
        return 0;
    }
    blob = fuzz_dup(data, size - 1);
    if ((data[size - 1] & 1) && (size - 1 >= FUZZ_ADDR_HDR_SIZE)) {
        fuzz_address_fix(blob, size - 1);
    }
    if (size - 1 >= FUZZ_ADDR_HDR_SIZE) {
        /* ucp_ep_create() gets no length: it reads the header's claim. */
        (void)ucp_address_length(blob);
    }
    if (ucp_address_unpack(blob, size - 1, &addr) == UCS_OK) {
        for (i = 0; i < addr.num_entries; ++i) {
            p = (const uint8_t*)addr.entries[i].dev_addr;
            if (((addr.entries[i].dev_addr_len > 0) &&
                 ((p < blob) || (p + addr.entries[i].dev_addr_len > blob + size - 1))) ||
                (strlen(addr.entries[i].tl_name) >= sizeof(addr.entries[i].tl_name))) {
                abort();
            }
            p = (const uint8_t*)addr.entries[i].iface_addr;
            if ((addr.entries[i].iface_addr_len > 0) &&
                ((p < blob) || (p + addr.entries[i].iface_addr_len > blob + size - 1))) {
                abort();
            }
        }
    }
    free(blob);
    return 0;
}
