/**
 * @file tcp_conn.h
 * Connection set-up between two tcp ifaces.
 *
 * The connecting side (an ep) opens a non-blocking socket bound to its own
 * device address and connects to the peer's listening address. The first
 * bytes it sends are a hello (tcp_wire.h): magic, version and the sender's
 * own device address and listening port. The accepting iface reads the hello
 * before any frame; a wrong magic or version closes the connection, so a
 * stray client (a port scanner, another program) never reaches an am
 * handler. No answer is sent back: the stream from the ep to the peer is
 * one-way, and a reply would only add a round trip before the first message.
 *
 * Frames an ep is asked to send before connect() completes are refused with
 * UCS_ERR_NO_RESOURCE (the hello is in flight), so callers queue them with
 * uct_ep_pending_add() and they leave, in order, once the connection is up.
 */
#ifndef UCT_TCP_CONN_H_
#define UCT_TCP_CONN_H_

#include "tcp_ep.h"

BEGIN_C_DECLS

/**
 * Open the ep's socket, start connecting to @a ep->peer and put the hello in
 * the ep's tx buffer as the message in flight. A connect() that fails at
 * once marks the ep failed (reported from progress like any later failure).
 * @return UCS_OK, or an error when no socket could be created or watched.
 */
ucs_status_t uct_tcp_conn_connect(uct_tcp_ep_t *ep);

/**
 * The ep's socket became writable (or reported an error) while connecting:
 * @return UCS_OK when the connection is established, else the failure.
 */
ucs_status_t uct_tcp_conn_check_connected(uct_tcp_ep_t *ep);

/**
 * Accept every connection waiting on the iface's listening socket, each
 * becoming a receive connection (tcp_rx.h) that waits for its hello.
 * @return the number accepted.
 */
unsigned uct_tcp_conn_accept(uct_tcp_iface_t *iface);

/**
 * Check a received hello.
 * @param scope_id  interface index for a link-local IPv6 sender.
 * @param peer_p    receives the sender's listening address (for messages).
 * @return UCS_OK, or UCS_ERR_INVALID_ADDR when it is not a tcp iface's hello
 *         of this version.
 */
ucs_status_t uct_tcp_conn_hello_unpack(const void *buf, uint32_t scope_id,
                                       uct_tcp_sockaddr_t *peer_p);

END_C_DECLS

#endif
