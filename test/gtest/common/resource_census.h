/**
 * @file resource_census.h
 * What a process holds, for tests that prove nothing leaks or grows without
 * bound (peer failures, long runs): open fds, memory files among them
 * (shared-memory segments, exported VMM/pool handles), and resident memory.
 * Also fd_exhaustion, which leaves a process without fds to spare.
 */
#ifndef UCX_TEST_RESOURCE_CENSUS_H_
#define UCX_TEST_RESOURCE_CENSUS_H_

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace ucx_test {

/** An open fd of this process and what /proc/self/fd says it is: a path,
 *  "socket:[INODE]", "/memfd:NAME (deleted)", ... */
struct open_fd {
    int         fd;
    std::string target;
};

/** Every fd this process has open (the directory stream's own left out). */
inline std::vector<open_fd> open_fds()
{
    std::vector<open_fd> fds;
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL) {
        return fds;
    }
    int own = dirfd(d);
    while (struct dirent *de = readdir(d)) {
        char path[300], target[512];
        if ((de->d_name[0] == '.') || (atoi(de->d_name) == own)) {
            continue;
        }
        snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
        ssize_t n = readlink(path, target, sizeof(target) - 1);
        if (n >= 0) {
            fds.push_back({atoi(de->d_name), std::string(target, (size_t)n)});
        }
    }
    closedir(d);
    return fds;
}

struct resource_census {
    int  fds    = 0; /**< open file descriptors */
    int  memfds = 0; /**< of which memfd_create() files */
    long rss_kb = 0; /**< resident set size */

    /** The counts of this process now. */
    static resource_census take()
    {
        resource_census c;
        for (const open_fd &f : open_fds()) {
            ++c.fds;
            c.memfds += (f.target.compare(0, 7, "/memfd:") == 0);
        }
        FILE *f = fopen("/proc/self/statm", "r");
        long pages_total, pages_rss;
        if ((f != NULL) && (fscanf(f, "%ld %ld", &pages_total, &pages_rss) == 2)) {
            c.rss_kb = pages_rss * (sysconf(_SC_PAGESIZE) / 1024);
        }
        if (f != NULL) {
            fclose(f);
        }
        return c;
    }

    /** Field-wise maximum, for tracking peaks over a run. */
    void raise_to(const resource_census &o)
    {
        fds    = std::max(fds, o.fds);
        memfds = std::max(memfds, o.memfds);
        rss_kb = std::max(rss_kb, o.rss_kb);
    }
};

/** Inodes of the sockets this process holds ("socket:[INODE]" fds), to
 *  match against /proc/net/tcp and friends. */
inline std::set<std::string> own_socket_inodes()
{
    std::set<std::string> inodes;
    for (const open_fd &f : open_fds()) {
        if ((f.target.size() > 9) && (f.target.compare(0, 8, "socket:[") == 0)) {
            inodes.insert(f.target.substr(8, f.target.size() - 9));
        }
    }
    return inodes;
}

/** Names in /dev/shm that could be ours (they contain "ucx"), sorted.
 *  Only those: other programs on the machine (an MPI run, a browser)
 *  come and go there while a test runs. */
inline std::vector<std::string> dev_shm_ucx_entries()
{
    std::vector<std::string> names;
    DIR *d = opendir("/dev/shm");
    if (d == NULL) {
        return names;
    }
    while (struct dirent *de = readdir(d)) {
        if (strcasestr(de->d_name, "ucx") != NULL) {
            names.push_back(de->d_name);
        }
    }
    closedir(d);
    std::sort(names.begin(), names.end());
    return names;
}

/** The highest fd number this process has open (-1: cannot tell). */
inline int highest_open_fd()
{
    std::vector<open_fd> fds = open_fds();
    struct rlimit limit;
    int highest = -1;

    for (const open_fd &f : fds) {
        highest = std::max(highest, f.fd);
    }
    /* With every fd in use /proc/self/fd cannot be opened: ask each number
     * below the limit instead. */
    if (fds.empty() && (getrlimit(RLIMIT_NOFILE, &limit) == 0)) {
        int fd = (limit.rlim_cur == RLIM_INFINITY) ? 1 << 20 : (int)limit.rlim_cur;
        while ((--fd >= 0) && (fcntl(fd, F_GETFD) < 0)) {
        }
        highest = fd;
    }
    return highest;
}

/**
 * While it lives, this process has every fd number its soft RLIMIT_NOFILE
 * allows in use but @a spare: the soft limit is set to @a spare above the
 * highest open fd (lowered, or raised within the hard limit), every free
 * number below it is filled, and @a spare of them closed again. Destroyed (or release()d), it closes its fds and
 * restores the limit. ok() says whether the exhaustion took hold (the
 * process had exactly @a spare fds to open).
 */
class fd_exhaustion {
public:
    explicit fd_exhaustion(unsigned spare = 0)
    {
        if (getrlimit(RLIMIT_NOFILE, &m_saved) != 0) {
            return;
        }
        /* Room for the spares above the highest fd: a process whose fd
         * numbers have no holes would otherwise have none to give back. The
         * soft limit may rise for that, up to the hard one. */
        struct rlimit tight = m_saved;
        tight.rlim_cur      = highest_open_fd() + 1 + spare;
        if (((m_saved.rlim_max != RLIM_INFINITY) && (tight.rlim_cur > m_saved.rlim_max)) ||
            (setrlimit(RLIMIT_NOFILE, &tight) != 0)) {
            return;
        }
        m_limited = true;
        for (int fd; (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) {
            m_fds.push_back(fd);
        }
        m_ok = (errno == EMFILE) && (m_fds.size() >= spare);
        for (unsigned i = 0; m_ok && (i < spare); ++i) {
            close(m_fds.back());
            m_fds.pop_back();
        }
    }

    ~fd_exhaustion() { release(); }

    bool ok() const { return m_ok; }

    void release()
    {
        for (int fd : m_fds) {
            close(fd);
        }
        m_fds.clear();
        if (m_limited) {
            setrlimit(RLIMIT_NOFILE, &m_saved);
            m_limited = false;
        }
    }

private:
    std::vector<int> m_fds;
    struct rlimit    m_saved;
    bool             m_limited = false;
    bool             m_ok      = false;
};

} // namespace ucx_test

#endif
