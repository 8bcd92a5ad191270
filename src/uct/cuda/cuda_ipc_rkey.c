#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "cuda_ipc_rkey.h"

#include <ucs/debug/log.h>

#include <string.h>

/*
 * Serialisation of cuda_ipc keys (format in cuda_ipc_rkey.h). Writing and
 * reading go through a cursor that never passes its end, so a lying length
 * can only make the parse fail.
 */

#define UCT_CUDA_IPC_RKEY_HDR_SIZE   16  /* magic..checksum */
#define UCT_CUDA_IPC_RKEY_OWNER_SIZE_V1 40
#define UCT_CUDA_IPC_RKEY_UUID_SIZE  16
#define UCT_CUDA_IPC_RKEY_OWNER_SIZE (UCT_CUDA_IPC_RKEY_OWNER_SIZE_V1 + \
                                      UCT_CUDA_IPC_RKEY_UUID_SIZE)
#define UCT_CUDA_IPC_RKEY_OBJ_SIZE   24
#define UCT_CUDA_IPC_RKEY_CHUNK_SIZE 24
#define UCT_CUDA_IPC_RKEY_FABRIC_CHUNK_SIZE (16 + UCT_CUDA_IPC_FABRIC_HANDLE_SIZE)
#define UCT_CUDA_IPC_RKEY_POOL_SIZE  (16 + sizeof(CUmemPoolPtrExportData))
#define UCT_CUDA_IPC_RKEY_CSUM_OFFSET 12

typedef struct {
    uint8_t *p;
    uint8_t *end;
} uct_cuda_ipc_wcursor_t;

typedef struct {
    const uint8_t *p;
    const uint8_t *end;
    int           ok;
} uct_cuda_ipc_rcursor_t;

size_t uct_cuda_ipc_rkey_max_size(void)
{
    size_t payload = UCT_CUDA_IPC_RKEY_MAX_CHUNKS * UCT_CUDA_IPC_RKEY_CHUNK_SIZE;

    if (payload < UCT_CUDA_IPC_RKEY_POOL_SIZE) {
        payload = UCT_CUDA_IPC_RKEY_POOL_SIZE;
    }
    if (payload < UCT_CUDA_IPC_RKEY_MAX_FABRIC_CHUNKS *
                  UCT_CUDA_IPC_RKEY_FABRIC_CHUNK_SIZE) {
        payload = UCT_CUDA_IPC_RKEY_MAX_FABRIC_CHUNKS *
                  UCT_CUDA_IPC_RKEY_FABRIC_CHUNK_SIZE;
    }
    return UCT_CUDA_IPC_RKEY_HDR_SIZE + UCT_CUDA_IPC_RKEY_OWNER_SIZE +
           UCT_CUDA_IPC_RKEY_OBJ_SIZE + payload;
}

static uint32_t uct_cuda_ipc_rkey_fnv(uint32_t hash, const uint8_t *p, size_t n)
{
    size_t i;

    for (i = 0; i < n; ++i) {
        hash = (hash ^ p[i]) * 16777619u;
    }
    return hash;
}

/* FNV-1a of the blob with the checksum field counted as zero; in three
 * runs, without a test per byte (it is on every pack and unpack). */
static uint32_t uct_cuda_ipc_rkey_checksum(const uint8_t *p, size_t length)
{
    size_t csum_end = UCT_CUDA_IPC_RKEY_CSUM_OFFSET + 4;
    uint32_t hash   = 2166136261u;
    size_t i;

    if (length <= UCT_CUDA_IPC_RKEY_CSUM_OFFSET) {
        return uct_cuda_ipc_rkey_fnv(hash, p, length);
    }
    hash = uct_cuda_ipc_rkey_fnv(hash, p, UCT_CUDA_IPC_RKEY_CSUM_OFFSET);
    for (i = UCT_CUDA_IPC_RKEY_CSUM_OFFSET; (i < csum_end) && (i < length); ++i) {
        hash *= 16777619u;
    }
    return (length <= csum_end) ? hash :
           uct_cuda_ipc_rkey_fnv(hash, p + csum_end, length - csum_end);
}

static void uct_cuda_ipc_put(uct_cuda_ipc_wcursor_t *c, const void *data, size_t size)
{
    if ((size_t)(c->end - c->p) >= size) {
        memcpy(c->p, data, size);
        c->p += size;
    }
}

#define UCT_CUDA_IPC_PUT(_c, _type, _value) \
    do { \
        _type _v = (_value); \
        uct_cuda_ipc_put(_c, &_v, sizeof(_v)); \
    } while (0)

static void uct_cuda_ipc_get(uct_cuda_ipc_rcursor_t *c, void *data, size_t size)
{
    if (c->ok && ((size_t)(c->end - c->p) >= size)) {
        memcpy(data, c->p, size);
        c->p += size;
    } else {
        c->ok = 0;
        memset(data, 0, size);
    }
}

void uct_cuda_ipc_rkey_pack(const uct_cuda_ipc_key_t *key, void *buffer)
{
    uct_cuda_ipc_wcursor_t c;
    uint8_t *start = buffer;
    uint32_t length, csum;
    unsigned i;

    memset(buffer, 0, uct_cuda_ipc_rkey_max_size());
    c.p   = start;
    c.end = start + uct_cuda_ipc_rkey_max_size();

    UCT_CUDA_IPC_PUT(&c, uint32_t, UCT_CUDA_IPC_RKEY_MAGIC);
    UCT_CUDA_IPC_PUT(&c, uint8_t, UCT_CUDA_IPC_RKEY_VERSION);
    UCT_CUDA_IPC_PUT(&c, uint8_t, (uint8_t)key->kind);
    UCT_CUDA_IPC_PUT(&c, uint16_t,
                     ((key->kind == UCT_CUDA_IPC_KIND_VMM) ||
                      (key->kind == UCT_CUDA_IPC_KIND_VMM_FABRIC)) ?
                     key->num_chunks : 0);
    UCT_CUDA_IPC_PUT(&c, uint32_t, 0); /* length, below */
    UCT_CUDA_IPC_PUT(&c, uint32_t, 0); /* checksum, below */

    UCT_CUDA_IPC_PUT(&c, uint32_t, key->pid);
    UCT_CUDA_IPC_PUT(&c, uint32_t, key->uid);
    UCT_CUDA_IPC_PUT(&c, uint64_t, key->pid_ns);
    uct_cuda_ipc_put(&c, key->node_id, sizeof(key->node_id));
    UCT_CUDA_IPC_PUT(&c, uint32_t, key->device);
    UCT_CUDA_IPC_PUT(&c, uint32_t, 0);
    uct_cuda_ipc_put(&c, key->device_uuid, sizeof(key->device_uuid));

    UCT_CUDA_IPC_PUT(&c, uint64_t, key->remote_base);
    UCT_CUDA_IPC_PUT(&c, uint64_t, key->length);
    UCT_CUDA_IPC_PUT(&c, uint64_t, key->buffer_id);

    switch (key->kind) {
    case UCT_CUDA_IPC_KIND_LEGACY:
        uct_cuda_ipc_put(&c, &key->legacy, sizeof(key->legacy));
        break;
    case UCT_CUDA_IPC_KIND_POOL:
        UCT_CUDA_IPC_PUT(&c, uint64_t, key->pool_id);
        UCT_CUDA_IPC_PUT(&c, int32_t, key->pool_fd);
        UCT_CUDA_IPC_PUT(&c, uint32_t, 0);
        uct_cuda_ipc_put(&c, &key->pool_ptr, sizeof(key->pool_ptr));
        break;
    case UCT_CUDA_IPC_KIND_VMM:
        for (i = 0; i < key->num_chunks; ++i) {
            UCT_CUDA_IPC_PUT(&c, uint64_t, key->chunks[i].offset);
            UCT_CUDA_IPC_PUT(&c, uint64_t, key->chunks[i].size);
            UCT_CUDA_IPC_PUT(&c, int32_t, key->chunks[i].fd);
            UCT_CUDA_IPC_PUT(&c, uint32_t, 0);
        }
        break;
    case UCT_CUDA_IPC_KIND_VMM_FABRIC:
        for (i = 0; i < key->num_chunks; ++i) {
            UCT_CUDA_IPC_PUT(&c, uint64_t, key->chunks[i].offset);
            UCT_CUDA_IPC_PUT(&c, uint64_t, key->chunks[i].size);
            uct_cuda_ipc_put(&c, key->chunks[i].fabric, UCT_CUDA_IPC_FABRIC_HANDLE_SIZE);
        }
        break;
    default:
        break;
    }

    length = (uint32_t)(c.p - start);
    memcpy(start + 8, &length, sizeof(length));
    csum = uct_cuda_ipc_rkey_checksum(start, length);
    memcpy(start + UCT_CUDA_IPC_RKEY_CSUM_OFFSET, &csum, sizeof(csum));
}

static ucs_status_t uct_cuda_ipc_rkey_reject(const char *why)
{
    ucs_debug("cuda_ipc: rejecting a malformed rkey: %s", why);
    return UCS_ERR_INVALID_PARAM;
}

ucs_status_t uct_cuda_ipc_rkey_parse(const void *buffer, uct_cuda_ipc_key_t *key)
{
    const uint8_t *start = buffer;
    uint32_t magic, length, csum, reserved;
    uct_cuda_ipc_rcursor_t c;
    uint16_t num_chunks;
    uint8_t version, kind;
    size_t expected;
    unsigned i;

    memset(key, 0, sizeof(*key));
    c.p   = start;
    c.end = start + UCT_CUDA_IPC_RKEY_HDR_SIZE;
    c.ok  = 1;

    uct_cuda_ipc_get(&c, &magic, sizeof(magic));
    uct_cuda_ipc_get(&c, &version, sizeof(version));
    uct_cuda_ipc_get(&c, &kind, sizeof(kind));
    uct_cuda_ipc_get(&c, &num_chunks, sizeof(num_chunks));
    uct_cuda_ipc_get(&c, &length, sizeof(length));
    uct_cuda_ipc_get(&c, &csum, sizeof(csum));

    if (magic != UCT_CUDA_IPC_RKEY_MAGIC) {
        return uct_cuda_ipc_rkey_reject("bad magic");
    }
    if ((version != UCT_CUDA_IPC_RKEY_VERSION) &&
        (version != UCT_CUDA_IPC_RKEY_VERSION_V1)) {
        return uct_cuda_ipc_rkey_reject("unknown version");
    }
    if (kind >= UCT_CUDA_IPC_KIND_LAST) {
        return uct_cuda_ipc_rkey_reject("unknown kind");
    }
    if (((kind == UCT_CUDA_IPC_KIND_VMM) &&
         ((num_chunks == 0) || (num_chunks > UCT_CUDA_IPC_RKEY_MAX_CHUNKS))) ||
        ((kind == UCT_CUDA_IPC_KIND_VMM_FABRIC) &&
         ((num_chunks == 0) || (num_chunks > UCT_CUDA_IPC_RKEY_MAX_FABRIC_CHUNKS))) ||
        ((kind != UCT_CUDA_IPC_KIND_VMM) && (kind != UCT_CUDA_IPC_KIND_VMM_FABRIC) &&
         (num_chunks != 0))) {
        return uct_cuda_ipc_rkey_reject("bad chunk count");
    }

    expected = UCT_CUDA_IPC_RKEY_HDR_SIZE + UCT_CUDA_IPC_RKEY_OWNER_SIZE_V1 +
               UCT_CUDA_IPC_RKEY_OBJ_SIZE +
               ((version == UCT_CUDA_IPC_RKEY_VERSION_V1) ? 0 :
                UCT_CUDA_IPC_RKEY_UUID_SIZE);
    switch (kind) {
    case UCT_CUDA_IPC_KIND_LEGACY:
        expected += sizeof(CUipcMemHandle);
        break;
    case UCT_CUDA_IPC_KIND_POOL:
        expected += UCT_CUDA_IPC_RKEY_POOL_SIZE;
        break;
    case UCT_CUDA_IPC_KIND_VMM:
        expected += (size_t)num_chunks * UCT_CUDA_IPC_RKEY_CHUNK_SIZE;
        break;
    case UCT_CUDA_IPC_KIND_VMM_FABRIC:
        expected += (size_t)num_chunks * UCT_CUDA_IPC_RKEY_FABRIC_CHUNK_SIZE;
        break;
    default:
        break;
    }
    /* The length must be exactly what the kind implies: a truncated key
     * (or one whose length field was damaged) stops here, before any byte
     * past the header is read. */
    if (length != expected) {
        return uct_cuda_ipc_rkey_reject("length does not match the content");
    }
    if (uct_cuda_ipc_rkey_checksum(start, length) != csum) {
        return uct_cuda_ipc_rkey_reject("checksum mismatch");
    }

    c.end = start + length;
    key->kind = (uct_cuda_ipc_kind_t)kind;
    uct_cuda_ipc_get(&c, &key->pid, sizeof(key->pid));
    uct_cuda_ipc_get(&c, &key->uid, sizeof(key->uid));
    uct_cuda_ipc_get(&c, &key->pid_ns, sizeof(key->pid_ns));
    uct_cuda_ipc_get(&c, key->node_id, sizeof(key->node_id));
    uct_cuda_ipc_get(&c, &key->device, sizeof(key->device));
    uct_cuda_ipc_get(&c, &reserved, sizeof(reserved));
    if (reserved != 0) {
        return uct_cuda_ipc_rkey_reject("reserved owner bytes set");
    }
    if (version != UCT_CUDA_IPC_RKEY_VERSION_V1) {
        uct_cuda_ipc_get(&c, key->device_uuid, sizeof(key->device_uuid));
    }
    uct_cuda_ipc_get(&c, &key->remote_base, sizeof(key->remote_base));
    uct_cuda_ipc_get(&c, &key->length, sizeof(key->length));
    uct_cuda_ipc_get(&c, &key->buffer_id, sizeof(key->buffer_id));
    if ((key->remote_base + key->length) < key->remote_base) {
        return uct_cuda_ipc_rkey_reject("object wraps around");
    }

    switch (key->kind) {
    case UCT_CUDA_IPC_KIND_LEGACY:
        uct_cuda_ipc_get(&c, &key->legacy, sizeof(key->legacy));
        break;
    case UCT_CUDA_IPC_KIND_POOL:
        uct_cuda_ipc_get(&c, &key->pool_id, sizeof(key->pool_id));
        uct_cuda_ipc_get(&c, &key->pool_fd, sizeof(key->pool_fd));
        uct_cuda_ipc_get(&c, &reserved, sizeof(reserved));
        uct_cuda_ipc_get(&c, &key->pool_ptr, sizeof(key->pool_ptr));
        if ((reserved != 0) || (key->pool_fd < 0)) {
            return uct_cuda_ipc_rkey_reject("bad pool entry");
        }
        break;
    case UCT_CUDA_IPC_KIND_VMM:
    case UCT_CUDA_IPC_KIND_VMM_FABRIC:
        key->num_chunks = num_chunks;
        for (i = 0; i < num_chunks; ++i) {
            uct_cuda_ipc_get(&c, &key->chunks[i].offset, sizeof(uint64_t));
            uct_cuda_ipc_get(&c, &key->chunks[i].size, sizeof(uint64_t));
            if (kind == UCT_CUDA_IPC_KIND_VMM) {
                uct_cuda_ipc_get(&c, &key->chunks[i].fd, sizeof(int32_t));
                uct_cuda_ipc_get(&c, &reserved, sizeof(reserved));
            } else {
                uct_cuda_ipc_get(&c, key->chunks[i].fabric,
                                 UCT_CUDA_IPC_FABRIC_HANDLE_SIZE);
                key->chunks[i].fd = 0;
                reserved          = 0;
            }
            /* Chunks ascend, do not overlap and stay inside the object. */
            if ((reserved != 0) || (key->chunks[i].fd < 0) ||
                (key->chunks[i].size == 0) ||
                (key->chunks[i].offset + key->chunks[i].size < key->chunks[i].offset) ||
                (key->chunks[i].offset + key->chunks[i].size > key->length) ||
                ((i > 0) && (key->chunks[i].offset <
                             key->chunks[i - 1].offset + key->chunks[i - 1].size))) {
                return uct_cuda_ipc_rkey_reject("bad chunk entry");
            }
        }
        break;
    default:
        break;
    }

    if (!c.ok || (c.p != c.end)) {
        return uct_cuda_ipc_rkey_reject("content does not fill the length");
    }
    return UCS_OK;
}
