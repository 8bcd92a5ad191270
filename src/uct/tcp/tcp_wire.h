/**
 * @file tcp_wire.h
 * Everything the tcp transport puts on the wire or into an address blob:
 * the device and iface addresses, the connection hello and the frame header
 * of an active message. Blobs come from other processes (and, for ucp, from
 * other machines), so every reader here validates before it trusts a byte.
 *
 * Multi-byte fields are little-endian on the wire; the helpers below convert,
 * so that two hosts of different byte order still understand each other.
 */
#ifndef UCT_TCP_WIRE_H_
#define UCT_TCP_WIRE_H_

#include "tcp_addr.h"

#include <ucs/sys/compiler_def.h>
#include <ucs/type/status.h>

#include <endian.h>
#include <netinet/in.h>
#include <stdint.h>

BEGIN_C_DECLS

/** Version of every address and hello layout below; bumped on any change
 * (2: addresses of either IP family; 3: get requests and responses). */
#define UCT_TCP_WIRE_VERSION 3

/** Family tags of an address on the wire (not AF_*: those differ between
 * OSes). */
#define UCT_TCP_ADDR_FAMILY_INET4  4
#define UCT_TCP_ADDR_FAMILY_INET6 6

/** "UCTT" in ASCII, first word of every connection. */
#define UCT_TCP_HELLO_MAGIC        0x54544355u

/**
 * Largest frame payload a receiver accepts. A frame is allocated whole on
 * the receive side, so a corrupt or hostile length must not become a huge
 * allocation; senders clamp their limits to this.
 */
#define UCT_TCP_MAX_FRAME_LEN      (256ul * 1024 * 1024)

/**
 * Device address: which IP address the peer's iface listens on, and which
 * loopback network it is on. 127.0.0.1 and ::1 name a different host in
 * every machine and network namespace, so a loopback address is only
 * reachable by an iface with the same @a loopback_id (see
 * uct_tcp_netif_loopback_id()). A link-local IPv6 address carries no scope:
 * the receiver uses the interface its own iface is bound to. Packed, 28 bytes.
 */
typedef struct uct_tcp_device_addr {
    uint8_t  version;     /**< UCT_TCP_WIRE_VERSION */
    uint8_t family;       /**< UCT_TCP_ADDR_FAMILY_INET4 or _INET6 */
    uint16_t reserved;    /**< 0 */
    uint8_t addr[UCT_TCP_WIRE_ADDR_LEN]; /**< network byte order; IPv4 in
                                              the first 4 bytes, zeros after */
    uint64_t loopback_id; /**< host and network namespace, little-endian */
} UCS_S_PACKED uct_tcp_device_addr_t;

/** Iface address: the listening port. Packed, 4 bytes. */
typedef struct uct_tcp_iface_addr {
    uint8_t  version;   /**< UCT_TCP_WIRE_VERSION */
    uint8_t  reserved;  /**< 0 */
    uint16_t port;      /**< TCP port, network byte order; never 0 */
} UCS_S_PACKED uct_tcp_iface_addr_t;

/**
 * First bytes a connecting ep writes: who is talking (its own device and
 * listening port), so that the accepting iface can name the peer in logs and
 * reject anything that is not a tcp iface of this project. 28 bytes.
 */
typedef struct uct_tcp_hello {
    uint32_t magic;     /**< UCT_TCP_HELLO_MAGIC, little-endian */
    uint8_t  version;   /**< UCT_TCP_WIRE_VERSION */
    uint8_t family;     /**< UCT_TCP_ADDR_FAMILY_INET4 or _INET6 */
    uint8_t reserved[2];
    uint8_t addr[UCT_TCP_WIRE_ADDR_LEN]; /**< sender's device address */
    uint16_t port;      /**< sender's listening port, network byte order */
    uint16_t reserved2;
} UCS_S_PACKED uct_tcp_hello_t;

/**
 * Header before every active message. The payload (am_short: the 8-byte
 * header then the data) follows immediately. 8 bytes.
 */
typedef struct uct_tcp_frame_hdr {
    uint8_t  am_id;     /**< 0 .. UCT_AM_ID_MAX-1 */
    uint8_t  reserved[3];
    uint32_t length;    /**< payload bytes, little-endian */
} UCS_S_PACKED uct_tcp_frame_hdr_t;


/**
 * Frame id of a get request (payload uct_tcp_get_req_t). Ids from
 * UCT_AM_ID_MAX up belong to the transport, not to active messages.
 */
#define UCT_TCP_FRAME_GET_REQ      0xf0

/** Payload of a get request: read [address, +length) of the region the
 *  token names and send it back on this connection. 24 bytes. */
typedef struct uct_tcp_get_req {
    uint64_t address;   /**< little-endian */
    uint64_t length;    /**< little-endian */
    uint64_t token;     /**< of the region's key, little-endian */
} UCS_S_PACKED uct_tcp_get_req_t;

/** "UCTG": first word of every get response. */
#define UCT_TCP_GET_RESP_MAGIC     0x47544355u

/**
 * What the receiving side of a connection writes back for each get
 * request, in request order: this header, then @a length bytes of data
 * (none when @a status is not UCS_OK). 16 bytes.
 */
typedef struct uct_tcp_get_resp {
    uint32_t magic;     /**< UCT_TCP_GET_RESP_MAGIC, little-endian */
    int32_t  status;    /**< UCS_OK, or why the request was refused */
    uint64_t length;    /**< data bytes that follow, little-endian */
} UCS_S_PACKED uct_tcp_get_resp_t;

/** "UCTK": first word of a packed remote key. */
#define UCT_TCP_RKEY_MAGIC         0x4b544355u

/** A packed remote key: which registration of the peer's md, and its range
 *  (so that the reader refuses an out-of-range get before sending it).
 *  32 bytes. */
typedef struct uct_tcp_rkey {
    uint32_t magic;     /**< UCT_TCP_RKEY_MAGIC, little-endian */
    uint32_t version;   /**< UCT_TCP_WIRE_VERSION */
    uint64_t base;      /**< little-endian */
    uint64_t length;    /**< little-endian */
    uint64_t token;     /**< little-endian */
} UCS_S_PACKED uct_tcp_rkey_t;

/** Fill a frame header for @a length payload bytes. */
static inline void uct_tcp_frame_hdr_init(uct_tcp_frame_hdr_t *hdr, uint8_t am_id,
                                          uint32_t length)
{
    hdr->am_id       = am_id;
    hdr->reserved[0] = 0;
    hdr->reserved[1] = 0;
    hdr->reserved[2] = 0;
    hdr->length      = htole32(length);
}

/** Payload length of a received frame header. */
static inline uint32_t uct_tcp_frame_hdr_length(const uct_tcp_frame_hdr_t *hdr)
{
    return le32toh(hdr->length);
}

/**
 * Check a device address blob from a peer and rebuild its address.
 * @param scope_id  interface index used for a link-local IPv6 peer.
 * @param addr_p    receives the address (port 0); may be NULL.
 * @return UCS_OK, or UCS_ERR_INVALID_ADDR when it is NULL, of another
 *         version or family, or names an address no iface can listen on.
 */
static inline ucs_status_t uct_tcp_device_addr_unpack(const uct_tcp_device_addr_t *addr,
                                                      uint32_t scope_id,
                                                      uct_tcp_sockaddr_t *addr_p)
{
    uct_tcp_sockaddr_t sa;

    if ((addr == NULL) || (addr->version != UCT_TCP_WIRE_VERSION) ||
        (addr->reserved != 0)) {
        return UCS_ERR_INVALID_ADDR;
    }
    return uct_tcp_sockaddr_from_wire(addr->family, addr->addr, 0, scope_id,
                                      (addr_p != NULL) ? addr_p : &sa);
}

/**
 * Check an iface address blob from a peer.
 * @return UCS_OK, or UCS_ERR_INVALID_ADDR (NULL, other version, port 0).
 */
static inline ucs_status_t
uct_tcp_iface_addr_check(const uct_tcp_iface_addr_t *addr)
{
    if ((addr == NULL) || (addr->version != UCT_TCP_WIRE_VERSION) ||
        (addr->reserved != 0) || (addr->port == 0)) {
        return UCS_ERR_INVALID_ADDR;
    }
    return UCS_OK;
}

END_C_DECLS

#endif
