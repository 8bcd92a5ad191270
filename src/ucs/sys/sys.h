/**
 * @file sys.h
 * Facts about the host and process that transports use to decide whether a
 * peer is reachable (same boot, same PID namespace) and to time operations.
 * All functions are thread safe; identifiers are read once and cached.
 */
#ifndef UCS_SYS_SYS_H_
#define UCS_SYS_SYS_H_

#include <ucs/type/status.h>

#include <stdint.h>
#include <stddef.h>

BEGIN_C_DECLS

/**
 * Boot identifier of this kernel as 128 bits (from
 * /proc/sys/kernel/random/boot_id). Two processes with the same boot id run
 * on the same machine instance, which shared memory and CUDA IPC require.
 *
 * @param [out] id  16 bytes.
 * @return UCS_OK, or UCS_ERR_IO_ERROR if the kernel does not provide it.
 */
ucs_status_t ucs_sys_get_boot_id(uint8_t id[16]);

/**
 * Identity of the node this process runs on, as 128 bits: the boot id
 * (ucs_sys_get_boot_id()) mixed with the network namespace. Two processes
 * are on one node, and may use shared memory and CUDA IPC between them,
 * when their node ids are equal. The network namespace is part of it
 * because shared memory signals through abstract unix sockets, which a
 * network namespace scopes, and because emulated hosts (one namespace each)
 * must look like separate machines. Without a readable namespace the boot
 * id alone decides. Both are read once per process: one that enters another
 * network namespace later keeps the id it had.
 *
 * @param [out] id  16 bytes.
 * @return UCS_OK, or UCS_ERR_IO_ERROR if the kernel gives no boot id.
 */
ucs_status_t ucs_sys_get_node_id(uint8_t id[16]);

/**
 * The node id of a process with boot id @a boot_id in the network namespace
 * of device @a ns_dev and inode @a ns_ino (stat() of /proc/PID/ns/net; both 0
 * when unknown), as ucs_sys_get_node_id() computes it for this process.
 *
 * @param [in]  boot_id  16 bytes (ucs_sys_get_boot_id()).
 * @param [out] id       16 bytes.
 */
void ucs_sys_node_id_mix(const uint8_t boot_id[16], uint64_t ns_dev, uint64_t ns_ino,
                         uint8_t id[16]);

/** Host name, truncated to fit; never fails (falls back to "localhost"). */
const char *ucs_sys_get_host_name(void);

/**
 * Inode number of this process's PID namespace (/proc/self/ns/pid), or 0 if
 * unknown. Peers in different PID namespaces cannot address each other by pid.
 */
uint64_t ucs_sys_get_pid_ns(void);

/** Monotonic time in nanoseconds. */
uint64_t ucs_get_time_ns(void);

/** Size of a memory page. */
size_t ucs_get_page_size(void);

/**
 * Directory that holds the shared object containing @a symbol.
 *
 * @param symbol   address of a function or variable in the object.
 * @param buf      output buffer.
 * @param max      its size.
 * @return UCS_OK, or UCS_ERR_NO_ELEM when the object is unknown.
 */
ucs_status_t ucs_sys_get_object_dir(const void *symbol, char *buf, size_t max);

/** What /proc/PID/stat says of a process (ucs_sys_proc_stat()). */
typedef struct ucs_sys_proc_stat {
    char               state;      /**< 'R', 'S', 'D', 'T' (stopped), 't'
                                        (stopped by a tracer), 'Z', 'X', ... */
    unsigned long long start_time; /**< clock ticks after boot: with the pid,
                                        names one process across pid reuse */
} ucs_sys_proc_stat_t;

/**
 * Read the state and start time of process @a pid of this PID namespace.
 *
 * @return UCS_OK; UCS_ERR_NO_ELEM when no such process exists;
 *         UCS_ERR_UNSUPPORTED when /proc cannot be read or parsed.
 */
ucs_status_t ucs_sys_proc_stat(int pid, ucs_sys_proc_stat_t *stat_p);

/** Whether @a st is of a process that has exited (a zombie not reaped yet,
 *  or one being torn down). */
static inline int ucs_sys_proc_stat_exited(const ucs_sys_proc_stat_t *st)
{
    return (st->state == 'Z') || (st->state == 'X');
}

END_C_DECLS

#endif
