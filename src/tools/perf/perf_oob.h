/**
 * @file perf_oob.h
 * The out-of-band channel between the two sides of a test: a TCP
 * connection (server listens, client connects to the host it was given,
 * port 13337 by default like upstream) or, when both sides start from one
 * command, a socketpair. It carries framed messages only: test parameters,
 * driver blobs (addresses, remote keys), status and errors -- never test
 * data.
 *
 * Every receive has a deadline, and an ERROR message from the peer turns
 * into UCS_ERR_REJECTED with the peer's text in oob->error, so a failure
 * on one side is reported on both instead of leaving one waiting.
 * Not thread safe; one channel per thread.
 */
#ifndef PERF_OOB_H_
#define PERF_OOB_H_

#include "perftest.h"

/** Message types. */
typedef enum {
    PERF_OOB_HELLO  = 1, /**< protocol version; first message each way */
    PERF_OOB_PARAMS = 2, /**< client -> server: one test case (perf_params_pack) */
    PERF_OOB_ACCEPT = 3, /**< server -> client: the test case is accepted */
    PERF_OOB_BLOB   = 4, /**< driver data (addresses, keys, ready, done) */
    PERF_OOB_BYE    = 5, /**< client -> server: no more test cases */
    PERF_OOB_ERROR  = 6  /**< a failure, as text for the user */
} perf_oob_msg_t;

/** One end of the channel. */
/** Seconds a side whose run failed waits for the peer's next message (its
 *  own report, the next test): a peer whose host vanished sends none. */
#define PERF_OOB_ERROR_WAIT_S 5.0

typedef struct perf_oob {
    int    fd;                   /**< -1 when closed */
    double timeout;              /**< seconds any single receive may wait (<= 0: no limit) */
    char   peer_name[64];        /**< "127.0.0.1:41482", for messages */
    char   error[PERF_ERROR_MAX]; /**< why the last failing call failed */
} perf_oob_t;

/**
 * Listen on @a port of every local address (IPv6 when @a ipv6).
 * On failure @a error says why (port in use, permission).
 */
ucs_status_t perf_oob_listen(uint16_t port, int ipv6, int *fd_p, char *error,
                             size_t max);

/**
 * Accept one connection on @a listen_fd into @a oob (which also gets
 * @a timeout for later receives). @a accept_timeout <= 0 waits forever.
 */
ucs_status_t perf_oob_accept(int listen_fd, double accept_timeout, double timeout,
                             perf_oob_t *oob);

/**
 * Connect to @a host:@a port. A refused connection is retried for
 * @a retry seconds (0: fail at once), so that a script may start the
 * client right after the server. The message in oob->error names the
 * host, the port and the cause.
 */
ucs_status_t perf_oob_connect(const char *host, uint16_t port, int ipv6, double retry,
                              double timeout, perf_oob_t *oob);

/** Use an already connected socket (one end of a socketpair); takes ownership. */
void perf_oob_init_fd(perf_oob_t *oob, int fd, double timeout, const char *peer_name);

/** Close the channel (idempotent). */
void perf_oob_close(perf_oob_t *oob);

/** Send one message. */
ucs_status_t perf_oob_send(perf_oob_t *oob, perf_oob_msg_t type, const void *data,
                           size_t length);

/** Send an ERROR message carrying @a text (best effort; failures ignored). */
void perf_oob_send_error(perf_oob_t *oob, const char *text);

/**
 * Receive one message of any type. *data_p is malloc'ed (NUL-terminated
 * one byte past the length, for text); the caller frees it. An ERROR from
 * the peer is returned as UCS_ERR_REJECTED with its text in oob->error.
 */
ucs_status_t perf_oob_recv(perf_oob_t *oob, perf_oob_msg_t *type_p, void **data_p,
                           size_t *length_p);

/** Receive one message that must be of @a type (else UCS_ERR_INVALID_PARAM). */
ucs_status_t perf_oob_recv_expect(perf_oob_t *oob, perf_oob_msg_t type, void **data_p,
                                  size_t *length_p);

/**
 * The step both sides take together: send our BLOB (or, when
 * @a local_error is not NULL, an ERROR with that text), then receive the
 * peer's. Because each side sends exactly one message per step, neither
 * blocks the other, and a failure on either side stops both.
 *
 * @return UCS_OK with the peer's blob in *data_p (caller frees; may be
 *         NULL if not wanted), UCS_ERR_REJECTED if the peer failed
 *         (oob->error has its text), UCS_ERR_CANCELED if only we failed,
 *         or the channel's error.
 */
ucs_status_t perf_oob_exchange(perf_oob_t *oob, const char *local_error,
                               const void *data, size_t length, void **data_p,
                               size_t *length_p);

/**
 * Non-blocking check for use inside long test loops: UCS_OK when the
 * channel is quiet; otherwise the peer closed it (UCS_ERR_CONNECTION_RESET)
 * or sent an error (UCS_ERR_REJECTED), both described in oob->error.
 */
ucs_status_t perf_oob_check_peer(perf_oob_t *oob);


/**
 * Where a run's lock-step exchange with the peer stands. Once either side
 * failed, exactly one more message may be owed, and no side may wait for a
 * message the other will never send.
 */
typedef enum {
    PERF_OOB_STATE_OK,           /**< both sides exchange at every step */
    PERF_OOB_STATE_PEER_WAITING, /**< we consumed the peer's error mid-run: it
                                      waits for one message from us, and sends
                                      no more */
    PERF_OOB_STATE_CLOSED        /**< no more exchanges in this run */
} perf_oob_state_t;

/**
 * One lock-step exchange of a test driver with the peer (perf_oob_exchange),
 * turning its outcome into the run's error. Our message is an ERROR when the
 * run has an error already. After any failure, on either side, the exchanges
 * of this run stop, on both sides alike (@a state).
 */
ucs_status_t perf_run_exchange(perf_run_t *run, perf_oob_state_t *state,
                               const void *data, size_t length,
                               void **peer_data_p, size_t *peer_length_p);


/**
 * The last step both sides of a run take together: the responder reports
 * what its validation found (@a bad messages, the first described in
 * @a bad_what), and the initiator keeps that report when it found nothing
 * itself. Neither side tears down before the other has stopped sending.
 *
 * @return @a status if it is an error, else the exchange's status.
 */
ucs_status_t perf_run_finish(perf_run_t *run, perf_oob_state_t *state,
                             uint64_t *bad, char *bad_what, size_t bad_what_size,
                             ucs_status_t status);

#endif
