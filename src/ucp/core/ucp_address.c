#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * Worker address blob, version 2 (all integers little-endian host order;
 * peers are the same build):
 *
 *   header   magic u32 "UCPA", version u16, num_entries u16, length u32
 *            (whole blob), checksum u32 (over the blob with this field 0),
 *            node_id[16], uuid u64, pid u32, length_check u32 (~length),
 *            pid_ns u64
 *   entry    tl_len u8, tl_name, comp_len u8, component name, dev_type u8,
 *            dev_len u16, device address, iface_len u16, iface address
 *
 * The unpacker checks every length against the remaining bytes and the
 * checksum over the whole blob, so a truncated or corrupted blob is
 * UCS_ERR_INVALID_ADDR and never read out of bounds.
 */

#include <ucp/core/ucp_int.h>
#include <ucs/datastruct/hmap.h>
#include <ucs/sys/sys.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define UCP_ADDRESS_MAGIC   0x41504355u /* "UCPA" */
#define UCP_ADDRESS_VERSION 2
#define UCP_ADDRESS_MAX_LENGTH 65536

typedef struct {
    uint32_t magic;
    uint16_t version;
    uint16_t num_entries;
    uint32_t length;
    uint32_t checksum;
    uint8_t node_id[16];
    uint64_t uuid;
    uint32_t pid;
    uint32_t length_check; /* ~length: a corrupt length is caught before
                              anything beyond the header is read */
    uint64_t pid_ns;       /* with node_id, says whether pid names the
                              peer here (its liveness in /proc) */
} ucp_address_header_t;

static uint32_t ucp_address_checksum(const void *buffer, size_t length)
{
    ucp_address_header_t hdr;
    uint64_t hash;

    memcpy(&hdr, buffer, sizeof(hdr));
    hdr.checksum = 0;
    hash = ucs_hash_bytes(&hdr, sizeof(hdr), 0x5eed);
    hash = ucs_hash_bytes((const char*)buffer + sizeof(hdr),
                          length - sizeof(hdr), hash);
    return (uint32_t)(hash ^ (hash >> 32));
}

/* The messaging ifaces, then the rendezvous lanes (device, host) that are
 * open. */
static unsigned ucp_address_num_ifaces(ucp_worker_h worker)
{
    return worker->num_ifaces + (worker->rma_iface.iface != NULL) +
           (worker->host_rma_iface.iface != NULL);
}

static const ucp_worker_iface_t *ucp_address_iface(ucp_worker_h worker,
                                                   unsigned i)
{
    if (i < worker->num_ifaces) {
        return &worker->ifaces[i];
    }
    if ((i == worker->num_ifaces) && (worker->rma_iface.iface != NULL)) {
        return &worker->rma_iface;
    }
    return &worker->host_rma_iface;
}

static int ucp_address_include(const ucp_worker_iface_t *wiface, uint32_t flags)
{
    uct_device_type_t type = wiface->worker->context->rscs[wiface->rsc_index].desc.dev_type;

    return !(flags & UCP_WORKER_ADDRESS_FLAG_NET_ONLY) || (type == UCT_DEVICE_TYPE_NET);
}

ucs_status_t ucp_address_pack(ucp_worker_h worker, uint32_t flags,
                              void **buffer_p, size_t *length_p)
{
    ucp_context_h context = worker->context;
    ucp_address_header_t hdr;
    const ucp_tl_rsc_t *rsc;
    ucs_status_t status;
    size_t length, tl_len, comp_len;
    unsigned i, count = 0;
    uint16_t len16;
    char *buf, *p;

    length = sizeof(hdr);
    for (i = 0; i < ucp_address_num_ifaces(worker); ++i) {
        const ucp_worker_iface_t *wiface = ucp_address_iface(worker, i);
        if (!ucp_address_include(wiface, flags)) {
            continue;
        }
        rsc     = &context->rscs[wiface->rsc_index];
        length += 1 + strlen(rsc->desc.tl_name) + 1 +
                  strlen(context->mds[rsc->md_index].component_name) + 1 +
                  2 + wiface->attr.device_addr_len +
                  2 + wiface->attr.iface_addr_len;
        ++count;
    }

    buf = calloc(1, length);
    if (buf == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    memset(&hdr, 0, sizeof(hdr));
    hdr.magic       = UCP_ADDRESS_MAGIC;
    hdr.version     = UCP_ADDRESS_VERSION;
    hdr.num_entries = (uint16_t)count;
    hdr.length      = (uint32_t)length;
    hdr.length_check = ~(uint32_t)length;
    hdr.uuid        = worker->uuid;
    hdr.pid         = (uint32_t)getpid();
    hdr.pid_ns      = ucs_sys_get_pid_ns();
    ucs_sys_get_node_id(hdr.node_id);

    p = buf + sizeof(hdr);
    for (i = 0; i < ucp_address_num_ifaces(worker); ++i) {
        const ucp_worker_iface_t *wiface = ucp_address_iface(worker, i);
        if (!ucp_address_include(wiface, flags)) {
            continue;
        }
        rsc      = &context->rscs[wiface->rsc_index];
        tl_len   = strlen(rsc->desc.tl_name);
        comp_len = strlen(context->mds[rsc->md_index].component_name);
        *p++     = (char)tl_len;
        memcpy(p, rsc->desc.tl_name, tl_len);
        p       += tl_len;
        *p++     = (char)comp_len;
        memcpy(p, context->mds[rsc->md_index].component_name, comp_len);
        p       += comp_len;
        *p++     = (char)rsc->desc.dev_type;

        len16 = (uint16_t)wiface->attr.device_addr_len;
        memcpy(p, &len16, 2);
        p += 2;
        status = uct_iface_get_device_address(wiface->iface, (uct_device_addr_t*)p);
        if (status != UCS_OK) {
            goto err;
        }
        p += len16;

        len16 = (uint16_t)wiface->attr.iface_addr_len;
        memcpy(p, &len16, 2);
        p += 2;
        if (len16 > 0) {
            status = uct_iface_get_address(wiface->iface, (uct_iface_addr_t*)p);
            if (status != UCS_OK) {
                goto err;
            }
        }
        p += len16;
    }

    memcpy(buf, &hdr, sizeof(hdr));
    hdr.checksum = ucp_address_checksum(buf, length);
    memcpy(buf, &hdr, sizeof(hdr));
    *buffer_p = buf;
    *length_p = length;
    return UCS_OK;

err:
    free(buf);
    return status;
}

size_t ucp_address_length(const void *buffer)
{
    ucp_address_header_t hdr;

    /* Reads only the header, which every blob has. */
    memcpy(&hdr, buffer, sizeof(hdr));
    if ((hdr.magic != UCP_ADDRESS_MAGIC) || (hdr.length > UCP_ADDRESS_MAX_LENGTH) ||
        (hdr.length_check != ~hdr.length)) {
        return sizeof(hdr); /* the unpacker reports what is wrong */
    }
    return hdr.length;
}

/* Take @a n bytes from the cursor, or fail. */
static const char *ucp_address_take(const char **p, const char *end, size_t n)
{
    const char *start = *p;

    if ((size_t)(end - start) < n) {
        return NULL;
    }
    *p = start + n;
    return start;
}

static ucs_status_t ucp_address_name(const char **p, const char *end,
                                     char *name, size_t max)
{
    const char *s;
    uint8_t len;

    s = ucp_address_take(p, end, 1);
    if (s == NULL) {
        return UCS_ERR_INVALID_ADDR;
    }
    len = (uint8_t)*s;
    if ((len == 0) || (len >= max) || ((s = ucp_address_take(p, end, len)) == NULL)) {
        return UCS_ERR_INVALID_ADDR;
    }
    memcpy(name, s, len);
    name[len] = '\0';
    return (memchr(name, '\0', len) == NULL) ? UCS_OK : UCS_ERR_INVALID_ADDR;
}

static ucs_status_t ucp_address_blob(const char **p, const char *end,
                                     const void **blob_p, size_t *len_p)
{
    const char *s;
    uint16_t len;

    s = ucp_address_take(p, end, 2);
    if (s == NULL) {
        return UCS_ERR_INVALID_ADDR;
    }
    memcpy(&len, s, 2);
    s = ucp_address_take(p, end, len);
    if (s == NULL) {
        return UCS_ERR_INVALID_ADDR;
    }
    *blob_p = (len > 0) ? s : NULL;
    *len_p  = len;
    return UCS_OK;
}

ucs_status_t ucp_address_unpack(const void *buffer, size_t length,
                                ucp_unpacked_address_t *addr)
{
    const char *p = buffer, *end = (const char*)buffer + length, *dt;
    ucp_address_header_t hdr;
    ucp_address_entry_t *e;
    const void *blob;
    unsigned i;

    if ((buffer == NULL) || (length < sizeof(hdr))) {
        ucs_error("ucp: worker address of %zu bytes is truncated (header is %zu)",
                  length, sizeof(hdr));
        return UCS_ERR_INVALID_ADDR;
    }
    memcpy(&hdr, buffer, sizeof(hdr));
    if (hdr.magic != UCP_ADDRESS_MAGIC) {
        ucs_error("ucp: not a worker address (magic 0x%x)", hdr.magic);
        return UCS_ERR_INVALID_ADDR;
    }
    if (hdr.version != UCP_ADDRESS_VERSION) {
        ucs_error("ucp: worker address version %u, this library reads %u",
                  hdr.version, UCP_ADDRESS_VERSION);
        return UCS_ERR_INVALID_ADDR;
    }
    if (hdr.length_check != ~hdr.length) {
        ucs_error("ucp: worker address is corrupt (bad length field)");
        return UCS_ERR_INVALID_ADDR;
    }
    if ((hdr.length > length) || (hdr.length < sizeof(hdr))) {
        ucs_error("ucp: worker address is truncated (%zu of %u bytes)", length,
                  hdr.length);
        return UCS_ERR_INVALID_ADDR;
    }
    end = (const char*)buffer + hdr.length;
    if (ucp_address_checksum(buffer, hdr.length) != hdr.checksum) {
        ucs_error("ucp: worker address is corrupt (checksum mismatch)");
        return UCS_ERR_INVALID_ADDR;
    }
    if (hdr.num_entries > UCP_ADDRESS_MAX_ENTRIES) {
        ucs_error("ucp: worker address has %u entries, at most %u are allowed",
                  hdr.num_entries, UCP_ADDRESS_MAX_ENTRIES);
        return UCS_ERR_INVALID_ADDR;
    }

    memcpy(addr->node_id, hdr.node_id, sizeof(addr->node_id));
    addr->uuid        = hdr.uuid;
    addr->pid         = hdr.pid;
    addr->pid_ns      = hdr.pid_ns;
    addr->num_entries = hdr.num_entries;
    p += sizeof(hdr);
    for (i = 0; i < hdr.num_entries; ++i) {
        e = &addr->entries[i];
        if ((ucp_address_name(&p, end, e->tl_name, sizeof(e->tl_name)) != UCS_OK) ||
            (ucp_address_name(&p, end, e->component_name,
                              sizeof(e->component_name)) != UCS_OK) ||
            ((dt = ucp_address_take(&p, end, 1)) == NULL) ||
            (ucp_address_blob(&p, end, &blob, &e->dev_addr_len) != UCS_OK)) {
            goto err_entry;
        }
        e->dev_type = (uint8_t)*dt;
        e->dev_addr = blob;
        if (ucp_address_blob(&p, end, &blob, &e->iface_addr_len) != UCS_OK) {
            goto err_entry;
        }
        e->iface_addr = blob;
    }
    if (p != end) {
        ucs_error("ucp: worker address has %zu trailing bytes", (size_t)(end - p));
        return UCS_ERR_INVALID_ADDR;
    }
    return UCS_OK;

err_entry:
    ucs_error("ucp: worker address entry %u is malformed", i);
    return UCS_ERR_INVALID_ADDR;
}
