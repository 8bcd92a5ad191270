/**
 * @file conformance.h
 * Pieces of the cudasim conformance program (see conformance.c): the
 * channel between exporter and importer, the output, and the
 * single-process checks.
 */
#ifndef CUDASIM_CONFORMANCE_H_
#define CUDASIM_CONFORMANCE_H_

#include <cuda.h>

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SIZE      (4ul << 20) /* every allocation: two 2 MiB granules */
#define CHUNK     (2ul << 20)
#define MAX_TEXT  8192

typedef enum {
    MSG_START = 1, /* importer -> exporter: kind */
    MSG_TEXT,      /* exporter -> importer: lines to print */
    MSG_PKG,       /* exporter -> importer: export_pkg_t */
    MSG_CHECK,     /* importer -> exporter: read back what I wrote */
    MSG_FREE,      /* importer -> exporter: I let go, free it */
    MSG_QUIT
} msg_type_t;

/* channel.c: the socket to the other process and the transcript. */
extern int sock;           /**< socket to the other process */
extern int is_exporter;    /**< the exporter buffers lines, the importer prints */
extern const char *tag;    /**< "[tag]" prefix of the next lines */

/** One transcript line (exporter: buffered until flush_text). */
void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/** Name of a CUresult. */
const char *res(CUresult r);
void die(const char *what) __attribute__((noreturn));
void xread(void *buf, size_t len);
void send_msg(msg_type_t type, const void *payload, uint32_t len);
uint32_t recv_msg(msg_type_t expect, void *payload, uint32_t max);
/** Exporter: ship the buffered lines. Importer: print the peer's. */
void flush_text(void);
void print_peer_text(void);
void send_fd(int fd);
int recv_fd(void);
/** Take a copy of fd @a remote_fd of process @a pid with pidfd_getfd. */
int pidfd_fetch(pid_t pid, int remote_fd);

/* facts.c: single-process verdicts, printed by the importer. */
extern unsigned char *hostbuf;  /**< SIZE bytes of pageable memory */
void report_device(void);
void report_local_facts(void);
void report_driver_facts(void);

#endif
