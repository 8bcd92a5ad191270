#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <ucs/sys/sys.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static pthread_once_t ucs_sys_once = PTHREAD_ONCE_INIT;
static ucs_status_t ucs_sys_boot_id_status;
static uint8_t ucs_sys_boot_id[16];
static char ucs_sys_host_name[HOST_NAME_MAX + 1];
static uint64_t ucs_sys_pid_ns;
static uint8_t ucs_sys_node_id[16]; /* boot id and network namespace */

static int ucs_sys_hex_value(char c)
{
    if ((c >= '0') && (c <= '9')) {
        return c - '0';
    }
    if ((c >= 'a') && (c <= 'f')) {
        return c - 'a' + 10;
    }
    if ((c >= 'A') && (c <= 'F')) {
        return c - 'A' + 10;
    }
    return -1;
}

/* The boot id is a UUID text "xxxxxxxx-xxxx-..."; keep its 32 hex digits. */
static ucs_status_t ucs_sys_read_boot_id(void)
{
    char text[64];
    unsigned digits = 0;
    FILE *file;
    char *p;
    int v;

    file = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (file == NULL) {
        return UCS_ERR_IO_ERROR;
    }
    p = fgets(text, sizeof(text), file);
    fclose(file);
    if (p == NULL) {
        return UCS_ERR_IO_ERROR;
    }

    memset(ucs_sys_boot_id, 0, sizeof(ucs_sys_boot_id));
    for (; (*p != '\0') && (digits < 32); ++p) {
        v = ucs_sys_hex_value(*p);
        if (v < 0) {
            continue;
        }
        ucs_sys_boot_id[digits / 2] |= (uint8_t)(v << ((digits % 2) ? 0 : 4));
        ++digits;
    }
    return (digits == 32) ? UCS_OK : UCS_ERR_IO_ERROR;
}

static void ucs_sys_init_once(void)
{
    struct stat st;

    ucs_sys_boot_id_status = ucs_sys_read_boot_id();
    if (gethostname(ucs_sys_host_name, sizeof(ucs_sys_host_name)) != 0) {
        strcpy(ucs_sys_host_name, "localhost");
    }
    ucs_sys_host_name[sizeof(ucs_sys_host_name) - 1] = '\0';
    ucs_sys_pid_ns = (stat("/proc/self/ns/pid", &st) == 0) ? (uint64_t)st.st_ino : 0;
    /* Read once: key packing and reachability checks compare node ids on
     * the data path, which must not cost a system call each. */
    if (stat("/proc/self/ns/net", &st) != 0) {
        memset(&st, 0, sizeof(st));
    }
    ucs_sys_node_id_mix(ucs_sys_boot_id, (uint64_t)st.st_dev, (uint64_t)st.st_ino,
                        ucs_sys_node_id);
}

ucs_status_t ucs_sys_get_boot_id(uint8_t id[16])
{
    pthread_once(&ucs_sys_once, ucs_sys_init_once);
    if (ucs_sys_boot_id_status == UCS_OK) {
        memcpy(id, ucs_sys_boot_id, sizeof(ucs_sys_boot_id));
    }
    return ucs_sys_boot_id_status;
}

void ucs_sys_node_id_mix(const uint8_t boot_id[16], uint64_t ns_dev, uint64_t ns_ino,
                         uint8_t id[16])
{
    /* Spread the namespace's device and inode over all 16 bytes; a zero
     * namespace leaves the boot id as it is. */
    const uint64_t mix[2] = {(ns_ino * 0x9e3779b97f4a7c15ull) ^ ns_dev,
                             (ns_dev * 0xc2b2ae3d27d4eb4full) ^ ns_ino};
    unsigned i;

    for (i = 0; i < 16; ++i) {
        id[i] = boot_id[i] ^ (uint8_t)(mix[i / 8] >> (8 * (i % 8)));
    }
}

ucs_status_t ucs_sys_get_node_id(uint8_t id[16])
{
    pthread_once(&ucs_sys_once, ucs_sys_init_once);
    if (ucs_sys_boot_id_status == UCS_OK) {
        memcpy(id, ucs_sys_node_id, sizeof(ucs_sys_node_id));
    }
    return ucs_sys_boot_id_status;
}

const char *ucs_sys_get_host_name(void)
{
    pthread_once(&ucs_sys_once, ucs_sys_init_once);
    return ucs_sys_host_name;
}

uint64_t ucs_sys_get_pid_ns(void)
{
    pthread_once(&ucs_sys_once, ucs_sys_init_once);
    return ucs_sys_pid_ns;
}

uint64_t ucs_get_time_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ((uint64_t)ts.tv_sec * 1000000000ull) + (uint64_t)ts.tv_nsec;
}

size_t ucs_get_page_size(void)
{
    static size_t page_size = 0;
    long value;

    if (page_size == 0) {
        value     = sysconf(_SC_PAGESIZE);
        page_size = (value > 0) ? (size_t)value : 4096;
    }
    return page_size;
}

ucs_status_t ucs_sys_get_object_dir(const void *symbol, char *buf, size_t max)
{
    char path[PATH_MAX];
    Dl_info info;
    char *slash;

    if ((dladdr(symbol, &info) == 0) || (info.dli_fname == NULL)) {
        return UCS_ERR_NO_ELEM;
    }

    if (realpath(info.dli_fname, path) == NULL) {
        snprintf(path, sizeof(path), "%s", info.dli_fname);
    }
    slash = strrchr(path, '/');
    if (slash == NULL) {
        strcpy(path, ".");
    } else {
        *slash = '\0';
    }

    if (strlen(path) >= max) {
        return UCS_ERR_BUFFER_TOO_SMALL;
    }
    strcpy(buf, path);
    return UCS_OK;
}

ucs_status_t ucs_sys_proc_stat(int pid, ucs_sys_proc_stat_t *stat_p)
{
    char path[64], buf[1024];
    const char *p;
    ssize_t n;
    int fd, field;

    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return (errno == ENOENT) ? UCS_ERR_NO_ELEM : UCS_ERR_UNSUPPORTED;
    }
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) {
        /* the process went away between open and read */
        return (n == 0) || (errno == ESRCH) ? UCS_ERR_NO_ELEM : UCS_ERR_UNSUPPORTED;
    }
    buf[n] = '\0';

    /* "pid (comm) S ppid ...": comm may hold spaces and parentheses, so
     * the fields start after the last ')'. The start time is field 22. */
    p = strrchr(buf, ')');
    if ((p == NULL) || (p[1] != ' ') || (p[2] == '\0')) {
        return UCS_ERR_UNSUPPORTED;
    }
    stat_p->state = p[2];
    p += 2;
    for (field = 3; field < 22; ++field) {
        p = strchr(p, ' ');
        if (p == NULL) {
            return UCS_ERR_UNSUPPORTED;
        }
        ++p;
    }
    stat_p->start_time = strtoull(p, NULL, 10);
    return UCS_OK;
}
