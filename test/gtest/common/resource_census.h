/**
 * @file resource_census.h
 * What a process holds, for tests that prove nothing leaks or grows without
 * bound (peer failures, long runs): open fds, memory files among them
 * (shared-memory segments, exported VMM/pool handles), and resident memory.
 */
#ifndef UCX_TEST_RESOURCE_CENSUS_H_
#define UCX_TEST_RESOURCE_CENSUS_H_

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>

namespace ucx_test {

struct resource_census {
    int  fds    = 0; /**< open file descriptors */
    int  memfds = 0; /**< of which memfd_create() files */
    long rss_kb = 0; /**< resident set size */

    /** The counts of this process now. */
    static resource_census take()
    {
        resource_census c;
        DIR *d = opendir("/proc/self/fd");
        if (d != NULL) {
            while (struct dirent *de = readdir(d)) {
                char path[300], target[256];
                if (de->d_name[0] == '.') {
                    continue;
                }
                snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
                ssize_t n = readlink(path, target, sizeof(target) - 1);
                if (n < 0) {
                    continue;
                }
                target[n] = '\0';
                ++c.fds;
                c.memfds += (strncmp(target, "/memfd:", 7) == 0);
            }
            closedir(d);
            --c.fds; /* opendir's own */
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

} // namespace ucx_test

#endif
