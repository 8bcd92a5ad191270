/**
 * @file cuda_ipc_rkey.h
 * The packed remote key of the cuda_ipc md: a versioned, self-describing
 * blob, never a raw structure dump. It travels between processes, so the
 * unpacker trusts nothing in it.
 *
 * Layout (little-endian fields, packed, no padding):
 *
 *   header   magic "CIPK" (u32), version (u8), kind (u8), num_chunks (u16),
 *            length of the whole blob (u32), checksum (u32, FNV-1a of the
 *            blob with this field zero)
 *   owner    pid (u32), uid (u32), pid namespace (u64), boot id (16 bytes),
 *            device ordinal of the memory (u32), reserved (u32, 0);
 *            version 2 adds the device's UUID (16 bytes, cuDeviceGetUuid;
 *            zero when unknown): ordinals differ between processes under
 *            CUDA_VISIBLE_DEVICES, the UUID names the physical GPU
 *   object   remote base (u64): address of the start of the exported object
 *            in the exporter; object length (u64); buffer id (u64): changes
 *            when the address is reused by a new allocation
 *   payload  by kind:
 *              NONE:   nothing (memory that cannot be exported)
 *              LEGACY: CUipcMemHandle (64 bytes) of the allocation base
 *              POOL:   pool id (u64, unique per pool export in the
 *                      exporter), pool fd number in the exporter (i32),
 *                      reserved (u32), CUmemPoolPtrExportData (64 bytes)
 *              VMM:    num_chunks entries of: offset from remote base (u64),
 *                      size (u64), fd number in the exporter (i32),
 *                      reserved (u32)
 *              VMM_FABRIC: num_chunks entries of: offset (u64), size (u64),
 *                      fabric handle (64 bytes); needs no fd transfer
 *
 * fd numbers are only names: an importer gets the fd itself through
 * pidfd_getfd or the exporter's socket, which hands out registered fds only.
 */
#ifndef UCT_CUDA_IPC_RKEY_H_
#define UCT_CUDA_IPC_RKEY_H_

#include <ucs/sys/compiler_def.h>
#include <ucs/type/status.h>

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

BEGIN_C_DECLS

#define UCT_CUDA_IPC_RKEY_MAGIC      0x4b504943u /* "CIPK" */
/** Version written; the parser also reads version 1 (no device UUID). */
#define UCT_CUDA_IPC_RKEY_VERSION    2
#define UCT_CUDA_IPC_RKEY_VERSION_V1 1
/** Most VMM chunks one key describes (a range of more is not exported). */
#define UCT_CUDA_IPC_RKEY_MAX_CHUNKS 32
/** Most chunks of a key with fabric handles (they are larger). */
#define UCT_CUDA_IPC_RKEY_MAX_FABRIC_CHUNKS 9
#define UCT_CUDA_IPC_FABRIC_HANDLE_SIZE     64

typedef enum uct_cuda_ipc_kind {
    UCT_CUDA_IPC_KIND_NONE   = 0, /**< not exportable: unpack is UNREACHABLE */
    UCT_CUDA_IPC_KIND_LEGACY = 1,
    UCT_CUDA_IPC_KIND_POOL   = 2,
    UCT_CUDA_IPC_KIND_VMM    = 3,
    UCT_CUDA_IPC_KIND_VMM_FABRIC = 4, /**< VMM chunks with fabric handles */
    UCT_CUDA_IPC_KIND_LAST
} uct_cuda_ipc_kind_t;

/** One physical chunk of a VMM range. */
typedef struct uct_cuda_ipc_chunk {
    uint64_t offset; /**< from the object's remote base */
    uint64_t size;
    int32_t  fd;     /**< VMM: fd number in the exporter */
    /** VMM_FABRIC: the chunk's CUmemFabricHandle */
    uint8_t  fabric[UCT_CUDA_IPC_FABRIC_HANDLE_SIZE];
} uct_cuda_ipc_chunk_t;

/** The content of a key, unpacked (host order, aligned). */
typedef struct uct_cuda_ipc_key {
    uct_cuda_ipc_kind_t    kind;
    uint32_t               pid;
    uint32_t               uid;
    uint64_t               pid_ns;
    uint8_t node_id[16];
    uint32_t               device;
    uint8_t                device_uuid[16]; /**< zero: unknown (version 1) */
    uint64_t               remote_base;
    uint64_t               length;
    uint64_t               buffer_id;
    CUipcMemHandle         legacy;        /**< LEGACY */
    uint64_t               pool_id;       /**< POOL */
    int32_t                pool_fd;       /**< POOL */
    CUmemPoolPtrExportData pool_ptr;      /**< POOL */
    unsigned               num_chunks;    /**< VMM, VMM_FABRIC */
    uct_cuda_ipc_chunk_t   chunks[UCT_CUDA_IPC_RKEY_MAX_CHUNKS]; /**< VMM, VMM_FABRIC */
} uct_cuda_ipc_key_t;

/** Bytes the largest key takes (what the md reports as rkey_packed_size). */
size_t uct_cuda_ipc_rkey_max_size(void);

/** Serialise @a key into @a buffer (uct_cuda_ipc_rkey_max_size() bytes). */
void uct_cuda_ipc_rkey_pack(const uct_cuda_ipc_key_t *key, void *buffer);

/**
 * Parse and check a packed key: magic, version, kind, lengths, chunk
 * bounds, reserved bytes and checksum. Reads at most
 * uct_cuda_ipc_rkey_max_size() bytes and only as many as the header's
 * length says, after checking that length against the maximum.
 *
 * @return UCS_OK; UCS_ERR_INVALID_PARAM for anything malformed (logged at
 *         debug level with the reason). Never crashes on any input.
 */
ucs_status_t uct_cuda_ipc_rkey_parse(const void *buffer, uct_cuda_ipc_key_t *key);

END_C_DECLS

#endif
