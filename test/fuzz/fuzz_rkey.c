#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * libFuzzer target: remote keys from a peer.
 *
 * The first byte picks the parser:
 *   0, 1   ucp_ep_rkey_unpack() on an endpoint over self / posix: the UCP
 *          envelope and the md key inside it. The API gives no length, so
 *          the target writes the input's length into the key's size field
 *          (a key that lies about its size is outside any parser's reach).
 *   2..    uct_rkey_unpack() of the n-th md of a context over self, posix
 *          and tcp, on a buffer of exactly the md's packed key size.
 * A key that unpacks is released again, so a leak is a report.
 */

#include "fuzz_common.h"

#include <ucp/core/ucp_int.h>

#include <stdlib.h>
#include <string.h>

#define FUZZ_RKEY_SIZE_OFFSET 12 /* ucp_rkey_header_t::size */
/* Longer than the fixed header of every version of the packed key (32 bytes,
 * 40 with the RMA region id). */
#define FUZZ_RKEY_MIN_SIZE    64

static ucp_context_h fuzz_rkey_ctx[2], fuzz_rkey_all;
static ucp_worker_h fuzz_rkey_worker[2];
static ucp_ep_h fuzz_rkey_ep[2];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static const char *tls[2] = {"self", "posix"};
    int i;

    fuzz_quiet_logs();
    for (i = 0; i < 2; ++i) {
        fuzz_rkey_ctx[i] = fuzz_context_create(tls[i]);
        fuzz_worker_create(fuzz_rkey_ctx[i], &fuzz_rkey_worker[i], &fuzz_rkey_ep[i]);
    }
    fuzz_rkey_all = fuzz_context_create("self,posix,tcp");
    return 0;
}

static void fuzz_rkey_ucp(ucp_ep_h ep, const uint8_t *data, size_t size)
{
    uint32_t size32 = (uint32_t)size;
    ucp_rkey_h rkey;
    uint8_t *key;
    void *ptr;

    if (size < FUZZ_RKEY_MIN_SIZE) {
        return; /* the unpacker reads a fixed header first */
    }
    key = fuzz_dup(data, size);
    memcpy(key + FUZZ_RKEY_SIZE_OFFSET, &size32, sizeof(size32));
    if (ucp_ep_rkey_unpack(ep, key, &rkey) == UCS_OK) {
        (void)ucp_rkey_ptr(rkey, 0, &ptr);
        ucp_rkey_destroy(rkey);
    }
    free(key);
}

static void fuzz_rkey_uct(const ucp_md_entry_t *md, const uint8_t *data, size_t size)
{
    size_t key_size = md->attr.rkey_packed_size;
    uct_rkey_bundle_t bundle;
    uint8_t *key;

    key = calloc(1, key_size ? key_size : 1);
    if (key == NULL) {
        abort();
    }
    memcpy(key, data, (size < key_size) ? size : key_size);
    if (uct_rkey_unpack(md->component, key, &bundle) == UCS_OK) {
        uct_rkey_release(md->component, &bundle);
    }
    free(key);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned sel;

    if (size < 1) {
        return 0;
    }
    sel = data[0];
    if (sel < 2) {
        fuzz_rkey_ucp(fuzz_rkey_ep[sel], data + 1, size - 1);
    } else if (sel - 2 < fuzz_rkey_all->num_mds) {
        fuzz_rkey_uct(&fuzz_rkey_all->mds[sel - 2], data + 1, size - 1);
    }
    return 0;
}
